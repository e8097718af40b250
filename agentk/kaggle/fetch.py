"""Fetch a Kaggle competition into the local layout (`description.md` + `data/`) agentk already loads.

    root/description.md            cleaned overview, evaluation and data pages
    root/data/...                  every data file, sizes checked against Kaggle's listing
    root/.kaggle/competition.json  metadata (title, deadline, metric, teams, daily limit)
    root/.kaggle/pages/*.html      the pages as Kaggle sent them (web-*.html: kaggle.com's own HTML)
    root/.kaggle/download/         the archive (kept so an interrupted download resumes)

`agentk.sources.load_competition(root)` then reads it as a local competition without grading facts.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path

from agentk.kaggle.client import KaggleClient
from agentk.kaggle.description import SECTIONS, description_markdown, save_raw_pages
from agentk.kaggle.records import CompetitionInfo
from agentk.kaggle.scrape import fetch_pages

META_DIR = ".kaggle"
_NEEDED = {"Overview", "Evaluation", "Data"}


@dataclass(frozen=True)
class FetchedCompetition:
    root: Path
    info: CompetitionInfo
    files: list[Path]


def fetch_competition(
    client: KaggleClient, slug: str, root: Path, force: bool = False, web_url: str | None = None,
) -> FetchedCompetition:
    """Metadata, pages and data of `slug` under `root`; data already complete is not downloaded again.

    `web_url` is where kaggle.com's pages are read from (default: see `scrape.web_base_url`).
    """
    root = Path(root)
    meta = root / META_DIR
    meta.mkdir(parents=True, exist_ok=True)
    info = client.competition(slug)
    pages = description_pages(client, slug, meta / "pages", web_url)
    (root / "description.md").write_text(description_markdown(info.title, pages))
    files = client.download(slug, root / "data", cache_dir=meta / "download", force=force)
    record = {k: (v.isoformat() if hasattr(v, "isoformat") else v) for k, v in dataclasses.asdict(info).items()}
    (meta / "competition.json").write_text(json.dumps(record, indent=2) + "\n")
    return FetchedCompetition(root, info, files)


def description_pages(client: KaggleClient, slug: str, raw_dir: Path, web_url: str | None = None) -> dict[str, str]:
    """The sections for description.md: scraped from kaggle.com where the page serves them, the rest
    from the API's pages (kept raw in `raw_dir` beside the scraped HTML)."""
    scraped = fetch_pages(slug, base_url=web_url, cache_dir=raw_dir) or {}
    have = {SECTIONS.get(name) for name in scraped}
    if _NEEDED <= have:
        return scraped
    # The API fills in what the page lacked; a section the scrape found is not repeated from it.
    api = client.pages(slug)
    save_raw_pages(api, raw_dir)
    extra = {name: text for name, text in api.items() if SECTIONS.get(name.lower()) not in have}
    return {**scraped, **extra}


def is_code_competition(root: Path) -> bool:
    """Whether Kaggle's metadata of the fetched competition says it takes kernel submissions only
    (a code competition: its leaderboard is made by rerunning a notebook on a hidden test set)."""
    path = Path(root) / META_DIR / "competition.json"
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError):
        return False
    return bool(record.get("kernels_only")) if isinstance(record, dict) else False
