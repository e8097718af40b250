"""Read a competition's overview, evaluation and data text from the kaggle.com pages themselves.

Kaggle serves two shapes of page. Server-rendered pages (older competitions, archived copies) hold
each section as rendered markdown (`div.markdown-converter__text--rendered`) under a heading. The
JavaScript app serves a shell whose text, when present at all, sits in an embedded JSON blob
(`Kaggle.State.push({...})` or a `__NEXT_DATA__` script). A shell without either holds nothing we
can use: `scrape_pages` says so with None and the caller falls back to the API's pages.
"""

from __future__ import annotations

import json
import logging
import os
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import requests
from bs4 import BeautifulSoup, Tag

from agentk.kaggle.description import clean_page

log = logging.getLogger(__name__)

KAGGLE_WEB = "https://www.kaggle.com"
USER_AGENT = "Mozilla/5.0 (compatible; agentk competition fetcher)"
PAGES = ("overview", "data")  # the two pages holding everything description.md needs
_MAX_BYTES = 8 * 2**20  # a real page is well under 2 MB; more is not a competition page
_RENDERED = re.compile(r"markdown-converter__text")
_HEADING = re.compile(r"^h[1-4]$")
_STATE = re.compile(r"Kaggle\.State\.push\(\s*")
# Heading or JSON key → our section name. "description" as a bare JSON key is left out on purpose:
# site-wide state uses it for the site's own blurb.
_LABELS = {
    "overview": "overview", "description": "overview", "competition description": "overview",
    "abstract": "overview", "evaluation": "evaluation", "data": "data", "data description": "data",
    "dataset description": "data", "datadescription": "data", "data_description": "data",
}
_JSON_KEYS = {"overview", "evaluation", "datadescription", "data_description"}


def scrape_pages(html: str) -> dict[str, str] | None:
    """Section name → cleaned text (markdown-ish), from either page shape; None when the page holds none."""
    soup = BeautifulSoup(html, "html.parser")
    sections = _rendered_sections(soup) or _embedded_sections(soup)
    sections = {name: text for name, text in sections.items() if text.strip()}
    return sections or None


def fetch_pages(
    slug: str,
    session: requests.Session | None = None,
    base_url: str | None = None,
    cache_dir: Path | None = None,
    timeout_s: float = 20.0,
) -> dict[str, str] | None:
    """The scraped sections of `slug`'s overview and data pages, or None when any fetch fails.

    Never raises for a network or HTTP problem: the API's pages are the fallback, so a failed
    scrape only costs the log line. The raw HTML goes to `cache_dir` as `web-<page>.html`.
    """
    base = (base_url or web_base_url()).rstrip("/")
    own = session is None
    session = session or requests.Session()
    found: dict[str, str] = {}
    try:
        for page in PAGES:
            url = f"{base}/competitions/{slug}/{page}"
            html = _get(session, url, timeout_s)
            if html is None:
                return None
            if cache_dir is not None:
                cache_dir.mkdir(parents=True, exist_ok=True)
                (cache_dir / f"web-{page}.html").write_text(html)
            for name, text in (scrape_pages(html) or {}).items():
                found.setdefault(name, text)  # the overview page's copy wins over a repeat on /data
    finally:
        if own:
            session.close()
    return found or None


def web_base_url() -> str:
    """kaggle.com, or the host the official client is pointed at (KAGGLE_API_ENVIRONMENT), so a
    local or staging setup scrapes the same place it calls."""
    env = os.environ.get("KAGGLE_API_ENVIRONMENT")
    if env in (None, "", "PROD"):
        return KAGGLE_WEB
    from kagglesdk.kaggle_env import get_env, get_web_endpoint

    return get_web_endpoint(get_env())


def _get(session: requests.Session, url: str, timeout_s: float) -> str | None:
    """The page's text, or None; bounded in bytes and wall-clock time (requests' timeout is per read)."""
    deadline = time.monotonic() + timeout_s
    try:
        with session.get(url, timeout=timeout_s, stream=True, headers={"User-Agent": USER_AGENT}) as response:
            if response.status_code != 200:
                log.info("scraping %s: HTTP %s; using the API's pages", url, response.status_code)
                return None
            body = bytearray()
            for chunk in response.iter_content(64 * 1024):
                body += chunk
                if len(body) > _MAX_BYTES or time.monotonic() > deadline:
                    log.info("scraping %s: page too big or too slow; using the API's pages", url)
                    return None
            return body.decode(response.encoding or "utf-8", errors="replace")
    except requests.RequestException as exc:
        log.info("scraping %s failed (%s); using the API's pages", url, type(exc).__name__)
        return None


def _label(text: str) -> str:
    key = re.sub(r"\s+", " ", text).strip().lower()
    return _LABELS.get(key, re.sub(r"[^a-z0-9]+", "-", key).strip("-"))


# ------------------------------------------------------------------ shape (a): server-rendered


def _rendered_sections(soup: BeautifulSoup) -> dict[str, str]:
    blocks = soup.find_all(class_=_RENDERED)
    # A rendered block nested in another (quoted markdown) is part of its parent's text.
    blocks = [b for b in blocks if not b.find_parent(class_=_RENDERED)]
    sections: dict[str, str] = {}
    for block in blocks:
        heading = next((h for h in block.find_all_previous(_HEADING) if not h.find_parent(class_=_RENDERED)), None)
        name = _label(heading.get_text(" ")) if isinstance(heading, Tag) else "overview"
        text = clean_page(str(block))
        sections[name] = f"{sections[name]}\n\n{text}" if name in sections else text
    return sections


# ------------------------------------------------------------------ shape (b): app shell + JSON


def _embedded_sections(soup: BeautifulSoup) -> dict[str, str]:
    sections: dict[str, str] = {}
    for blob in _json_blobs(soup):
        for name, content in _walk(blob):
            text = clean_page(content)
            if len(text) > len(sections.get(name, "")):  # the fullest copy of a section wins
                sections[name] = text
    return sections


def _json_blobs(soup: BeautifulSoup) -> Iterator[Any]:
    decoder = json.JSONDecoder()
    for script in soup.find_all("script"):
        source = script.string or ""
        if script.get("id") == "__NEXT_DATA__" or script.get("type") == "application/json":
            try:
                yield json.loads(source)
            except ValueError:
                continue
            continue
        for match in _STATE.finditer(source):
            try:
                yield decoder.raw_decode(source, match.end())[0]
            except ValueError:
                continue


def _walk(node: Any, depth: int = 0) -> Iterator[tuple[str, str]]:
    """(section, content) pairs: page lists shaped like the API's ({name, content}) and known keys."""
    if depth > 30:  # the state is a tree of modest depth; deeper is not worth following
        return
    if isinstance(node, list):
        for item in node:
            if isinstance(item, dict) and isinstance(item.get("name"), str) and isinstance(item.get("content"), str):
                yield _label(item["name"]), item["content"]
            else:
                yield from _walk(item, depth + 1)
    elif isinstance(node, dict):
        for key, value in node.items():
            if isinstance(value, str) and key.lower() in _JSON_KEYS:
                yield _label(key), value
            elif isinstance(value, (dict, list)):
                yield from _walk(value, depth + 1)
