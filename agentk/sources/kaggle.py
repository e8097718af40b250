"""The Kaggle source: a competition URL or slug becomes a local folder in Kaggle's layout,
which the local source then loads like any other."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from agentk.core.records.workspace import contained_path
from agentk.core.records.workspace_lock import workspace_lock
from agentk.kaggle.reference import parse_competition_reference

if TYPE_CHECKING:
    from agentk.kaggle.client import KaggleClient


def kaggle_slug(text: str) -> str | None:
    """The competition slug when `text` names a Kaggle competition rather than an existing folder."""
    if Path(text).expanduser().exists():
        return None
    return parse_competition_reference(text)


def fetch_source(slug: str, cache_root: Path, client: KaggleClient | None = None, quiet: bool = False) -> Path:
    """Download (or reuse) the competition as a local folder under cache_root/<slug>; `quiet`: no
    progress bar (otherwise one is drawn for a big download when stderr is a terminal)."""
    # Imported here: every run asks `kaggle_slug`, a local one never fetches (bs4 alone is 0.3 s).
    from agentk.kaggle.client import KaggleClient
    from agentk.kaggle.download import DownloadSettings
    from agentk.kaggle.fetch import fetch_competition

    folder = contained_path(cache_root, slug)
    client = client or KaggleClient(download=DownloadSettings(progress=False) if quiet else None)
    # Two runs of one competition would download into the same files at once.
    with workspace_lock(folder):
        return fetch_competition(client, slug, folder).root
