"""One text file per row, named by its id: the contents become the text input, end to end."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import pandas as pd

from setup_pipeline.expert.inspect import inspect_competition

pytestmark = pytest.mark.integration

SHARED = Path(__file__).resolve().parents[2] / "shared" / "competitions"
PAGE = """# Who wrote it?

Each excerpt of a horror story is a text file named by its `id`. Predict the `author` of each test excerpt.

## Evaluation

Submissions are scored on accuracy.
"""


def _competition(root: Path, n_train: int = 600, n_test: int = 150) -> Path:
    rows = pd.read_csv(SHARED / "spooky-author-identification" / "data" / "train.csv").head(n_train + n_test)
    data = root / "data"
    for split, part in (("train", rows.iloc[:n_train]), ("test", rows.iloc[n_train:])):
        folder = data / f"{split}_texts"
        folder.mkdir(parents=True)
        for ident, text in zip(part["id"], part["text"]):
            (folder / f"{ident}.txt").write_text(text, encoding="utf-8")
    rows.iloc[:n_train][["id", "author"]].to_csv(data / "train.csv", index=False)
    rows.iloc[n_train:][["id"]].to_csv(data / "test.csv", index=False)
    pd.DataFrame({"id": rows["id"].iloc[n_train:], "author": "EAP"}).to_csv(data / "sample_submission.csv", index=False)
    (root / "description.md").write_text(PAGE)
    answers = rows.iloc[n_train:][["id", "author"]]
    return root, answers


def test_text_files_per_row_are_the_text_input(tmp_path: Path) -> None:
    source, answers = _competition(tmp_path / "src")
    facts = inspect_competition(source)
    assert facts.row_files is not None and facts.text_columns == ["file_text"]
    assert facts.input_modalities == ["text"]

    proc = subprocess.run([sys.executable, "-m", "agentk.cli", "run", str(source), "-w", str(tmp_path / "ws"),
                           "--time-budget", "8", "--folds", "2", "--json"], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout)
    assert result["valid_submission"]
    submission = pd.read_csv(result["submission_path"])
    hits = (submission.set_index("id")["author"] == answers.set_index("id")["author"]).mean()
    majority = answers["author"].value_counts(normalize=True).iloc[0]
    assert hits > majority + 0.1, (hits, majority)  # the texts were read: clearly better than a constant
