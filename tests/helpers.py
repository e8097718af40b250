"""Test helpers shared by source and end-to-end tests."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import numpy as np

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


MONKEYS = Path(__file__).resolve().parents[2] / "shared" / "competitions-extra" / "10-monkey-species" / "data"


def monkey_photos(per_class: int = 8, classes: tuple[str, ...] = ("n0", "n3", "n7")) -> tuple[list[str], np.ndarray]:
    """A few real photos per species from the shared development set, with class indices."""
    paths, labels = [], []
    for label, name in enumerate(classes):
        found = sorted((MONKEYS / "train" / name).glob("*.jpg"))[:per_class]
        assert len(found) == per_class, f"the shared monkey photos are missing under {MONKEYS}"
        paths += [str(p) for p in found]
        labels += [label] * per_class
    return paths, np.array(labels)


def agent_view(competition: Path, raw: Path) -> Path:
    """What the agent sees of a local competition: description.md and data/."""
    raw.mkdir(parents=True)
    shutil.copy(competition / "description.md", raw / "description.md")
    shutil.copytree(competition / "data", raw / "data")
    return raw


def handed_in_after_failed_setup(proc, workspace: Path, sample: Path, *fragments: str, stage: str | None = None) -> dict:
    """A run whose setup failed but which handed in `sample` as it is: exit 0, no `error:` line,
    one warning line naming the failure (its `stage`, each of `fragments`) and the sample, and a
    result.json whose valid submission is the sample's bytes and which keeps the failure.
    Returns result.json."""
    import json

    output = proc.stdout + proc.stderr
    assert proc.returncode == 0 and "Traceback" not in output, proc.stderr[-3000:]
    assert not [line for line in proc.stderr.splitlines() if line.startswith("error:")], proc.stderr
    said = [line for line in proc.stderr.splitlines() if "handed in" in line]
    assert len(said) == 1 and said[0].strip().startswith("warning: setup failed"), proc.stderr
    assert f"the sample submission data/{sample.name} as it is (no model trained)" in said[0], said[0]
    for fragment in fragments + ((f"setup failed at stage '{stage}' (",) if stage else ()):
        assert fragment in said[0], (fragment, said[0])
    result = json.loads((workspace / "result.json").read_text())
    assert result["valid_submission"] and result["phase"] == "done" and result["model"] == "sample_submission"
    assert result["setup_failure"] and result["error"] is None and not result["validation_score"]
    for fragment in fragments:
        assert fragment in result["setup_failure"], (fragment, result["setup_failure"])
    # The sample as the run saw it (a local competition with grading facts holds some rows back).
    assert (workspace / "submissions" / "submission.csv").read_bytes() == (workspace / "raw" / "data" / sample.name).read_bytes()
    return result
