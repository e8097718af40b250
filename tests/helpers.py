"""Test helpers shared by source and end-to-end tests."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from agentk.sources import load_competition
from agentk.sources.common import find_sample_csv, write_csv_exact


def make_mlebench_layout(local_competition_dir: Path, out_dir: Path) -> Path:
    """Re-lay a local competition as MLE-bench would prepare it: out_dir/<id>/prepared/ with
    public/ (the agent's view, sample renamed sample_submission.csv, description.md) and
    private/test.csv (the answers). No competition.toml: grading facts must be derived."""
    comp = load_competition(local_competition_dir)
    prepared = Path(out_dir) / comp.id / "prepared"
    public, private = prepared / "public", prepared / "private"
    if prepared.exists():
        shutil.rmtree(prepared)
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out_dir) as tmp:
        raw = Path(tmp) / "raw"
        comp.prepare(raw)
        shutil.copytree(raw / "data", public)
        sample = find_sample_csv(public)
        if sample is not None and sample.name != "sample_submission.csv":
            sample.rename(public / "sample_submission.csv")
        shutil.copyfile(raw / "description.md", public / "description.md")
    private.mkdir(parents=True)
    write_csv_exact(comp.answers(), private / "test.csv")
    return prepared
