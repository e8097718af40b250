"""Fetch a Kaggle competition into the local layout (`description.md` + `data/`) agentk already loads.

    root/description.md            cleaned overview, evaluation and data pages
    root/data/...                  every data file, sizes checked against Kaggle's listing
    root/.kaggle/competition.json  metadata (title, deadline, metric, teams, daily limit)
    root/.kaggle/pages/*.html      the pages as Kaggle sent them
    root/.kaggle/download/         the archive (kept so an interrupted download resumes)

`agentk.sources.load_competition(root)` then reads it as a local competition without grading facts.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path

from agentk.kaggle.client import KaggleClient
from agentk.kaggle.description import write_description
from agentk.kaggle.records import CompetitionInfo

META_DIR = ".kaggle"


@dataclass(frozen=True)
class FetchedCompetition:
    root: Path
    info: CompetitionInfo
    files: list[Path]


def fetch_competition(client: KaggleClient, slug: str, root: Path, force: bool = False) -> FetchedCompetition:
    """Metadata, pages and data of `slug` under `root`; data already complete is not downloaded again."""
    root = Path(root)
    meta = root / META_DIR
    meta.mkdir(parents=True, exist_ok=True)
    info = client.competition(slug)
    pages = client.pages(slug)
    write_description(info.title, pages, root / "description.md", meta / "pages")
    files = client.download(slug, root / "data", cache_dir=meta / "download", force=force)
    record = {k: (v.isoformat() if hasattr(v, "isoformat") else v) for k, v in dataclasses.asdict(info).items()}
    (meta / "competition.json").write_text(json.dumps(record, indent=2) + "\n")
    return FetchedCompetition(root, info, files)
