"""Competition sources: turn a folder into a `Competition` (see base.py and docs/architecture.md)."""

from __future__ import annotations

import re
from pathlib import Path

from agentk.core.errors import SourceError
from agentk.sources.bare import has_data_files, load_bare
from agentk.sources.base import Competition, GradingFacts
from agentk.sources.local import load_local
from agentk.sources.mlebench import load_mlebench

__all__ = ["Competition", "GradingFacts", "load_competition"]

_EXPECTED = (
    "expected description.md and data/ (local layout), public/ and private/ (MLE-bench prepared "
    "layout), data files, or a zip of them"
)
# Kaggle competition slugs: lowercase words joined by hyphens (titanic, spaceship-titanic).
_SLUG = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")


def load_competition(path: str | Path, metric: str | None = None) -> Competition:
    """Load a local or MLE-bench competition folder, a folder of data files or a zip archive of
    them (no page: `metric` then names the metric); anything else is a one-line SourceError."""
    if isinstance(path, str):
        reject_remote_reference(path)
    folder = Path(path).expanduser()
    if not folder.exists():
        raise SourceError(f"competition folder not found: {folder}")
    # Absolute, so that prepare() and answers() still work after the caller changes directory.
    folder = folder.resolve()
    if folder.is_file():
        return load_bare(folder, metric)
    if not folder.is_dir():
        raise SourceError(f"not a competition folder: {folder} is neither a folder nor a file ({_EXPECTED})")

    has_description = (folder / "description.md").is_file()
    has_data = (folder / "data").is_dir()
    prepared = None if has_description and has_data else _mlebench_root(folder)
    if metric is not None and (has_description or prepared is not None):
        raise SourceError(f"--metric is for data without a competition page; {folder} has one, and its "
                          "evaluation section decides")
    if has_description and has_data:
        return load_local(folder)
    if prepared is not None:
        return load_mlebench(prepared)
    if has_description or (folder / "competition.toml").is_file():
        # Half a local folder: let the local loader say exactly what is missing.
        return load_local(folder)
    if has_data or has_data_files(folder):
        return load_bare(folder, metric)
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
