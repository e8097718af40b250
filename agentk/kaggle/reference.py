"""Competition references as users type them: full URLs, `/c/<slug>`, `/competitions/<slug>/...`, bare slugs."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

# Kaggle slugs: lowercase words joined by hyphens (titanic, spaceship-titanic, playground-series-s4e1).
SLUG = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
# Path prefixes that introduce a slug on kaggle.com (`/c/` is the old short form).
_PREFIXES = ("competitions", "c")
_HOSTS = ("kaggle.com", "www.kaggle.com")


def parse_competition_reference(text: str) -> str | None:
    """The competition slug `text` names, or None if it is not a Kaggle competition reference.

    Kaggle URLs are case-insensitive in practice (users paste `Titanic`), so the slug is lowercased.
    A path that merely looks like a slug (a local folder) is the caller's concern: check the
    filesystem first, as `agentk.sources.reject_remote_reference` does.
    """
    text = text.strip()
    if not text:
        return None
    if SLUG.fullmatch(text.lower()) and "/" not in text:
        return text.lower()
    path = _kaggle_path(text)
    if path is None:
        return None
    parts = [p for p in path.split("/") if p]
    if len(parts) >= 2 and parts[0].lower() in _PREFIXES:
        slug = parts[1].lower()
        return slug if SLUG.fullmatch(slug) else None
    return None


def competition_url(slug: str) -> str:
    return f"https://www.kaggle.com/competitions/{slug}"


def _kaggle_path(text: str) -> str | None:
    """The URL path when `text` is a kaggle.com URL (with or without scheme) or a site path."""
    if text.startswith("/"):
        return text
    candidate = text if re.match(r"[a-zA-Z][a-zA-Z0-9+.-]*://", text) else f"https://{text}"
    parts = urlsplit(candidate)
    if parts.scheme not in ("http", "https") or (parts.hostname or "").lower() not in _HOSTS:
        return None
    return parts.path
