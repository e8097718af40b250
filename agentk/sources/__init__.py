"""Competition sources: turn a folder into a `Competition` (see base.py and docs/architecture.md)."""

from __future__ import annotations

import re
from pathlib import Path

from agentk.core.errors import SourceError
from agentk.sources.base import Competition, GradingFacts
from agentk.sources.local import load_local
from agentk.sources.mlebench import load_mlebench

__all__ = ["Competition", "GradingFacts", "load_competition"]

_EXPECTED = (
    "expected description.md and data/ (local layout) "
    "or public/ and private/ (MLE-bench prepared layout)"
)
# Kaggle competition slugs: lowercase words joined by hyphens (titanic, spaceship-titanic).
_SLUG = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")


def load_competition(path: str | Path) -> Competition:
    """Load a local or MLE-bench competition folder; anything else is a one-line SourceError."""
    if isinstance(path, str):
        reject_remote_reference(path)
    folder = Path(path).expanduser()
    if not folder.exists():
        raise SourceError(f"competition folder not found: {folder}")
    if not folder.is_dir():
        raise SourceError(f"not a competition folder: {folder} is a file ({_EXPECTED})")
    # Absolute, so that prepare() and answers() still work after the caller changes directory.
    folder = folder.resolve()

    has_description = (folder / "description.md").is_file()
    has_data = (folder / "data").is_dir()
    if has_description and has_data:
        return load_local(folder)
    prepared = _mlebench_root(folder)
    if prepared is not None:
        return load_mlebench(prepared)
    if has_description or has_data or (folder / "competition.toml").is_file():
        # Half a local folder: let the local loader say exactly what is missing.
        return load_local(folder)
    raise SourceError(f"{folder} is not a competition folder: {_EXPECTED}")


def _mlebench_root(folder: Path) -> Path | None:
    if (folder / "prepared" / "public").is_dir():
        return folder / "prepared"
    if (folder / "public").is_dir() or folder.name == "prepared":
        return folder
    return None


def reject_remote_reference(text: str) -> None:
    """Kaggle URLs and bare slugs that are not folders: `agentk run` downloads those first
    (agentk.sources.kaggle.fetch_source); here only folders load."""
    if Path(text).expanduser().exists():
        return
    looks_like_url = re.match(r"[a-z]+://", text) is not None or "kaggle.com" in text
    if looks_like_url or _SLUG.fullmatch(text):
        raise SourceError(
            f"competition folder not found: {text} (a Kaggle competition: `agentk run {text}` "
            "downloads it; other commands need its folder)"
        )
