"""The embedded demo competition: built offline, loadable, gradable, deterministic."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from agentk.sources.demo import make_demo_competition
from agentk.core.errors import SourceError
from agentk.sources import load_competition


def read_exact(path: Path) -> pd.DataFrame:
    return pd.read_csv(path, dtype=str, keep_default_na=False)


def test_demo_builds_loads_and_grades(tmp_path: Path) -> None:
    folder = make_demo_competition(tmp_path / "demo")
    comp = load_competition(folder)
    assert comp.id == "breast-cancer-diagnosis" and comp.source_kind == "local" and comp.has_answers
    assert comp.grading.metric == "accuracy" and comp.grading.higher_is_better
    assert comp.grading.id_column == "patient_id" and comp.grading.target_columns == ("diagnosis",)

    comp.prepare(tmp_path / "raw")
    data = tmp_path / "raw" / "data"
    assert sorted(p.name for p in data.iterdir()) == ["sample_submission.csv", "test.csv", "train.csv"]
    train, test = read_exact(data / "train.csv"), read_exact(data / "test.csv")
    sample = read_exact(data / "sample_submission.csv")
    answers = comp.answers()
    assert len(test) == math.ceil(0.25 * 569) and len(train) + len(test) == 569
    assert "diagnosis" not in test.columns and list(train.columns)[:-1] == list(test.columns)
    assert answers["patient_id"].tolist() == test["patient_id"].tolist() == sample["patient_id"].tolist()
    assert set(train["diagnosis"]) == set(answers["diagnosis"]) == {"malignant", "benign"}
    # Stratified: both sets keep the data's 37% malignant share.
    for frame in (train, answers):
        assert (frame["diagnosis"] == "malignant").mean() == pytest.approx(212 / 569, abs=0.01)

    description = (tmp_path / "raw" / "description.md").read_text()
    for section in ("## Overview", "## Evaluation", "## Submission format", "## Data"):
        assert section in description


def test_demo_is_deterministic_and_idempotent(tmp_path: Path) -> None:
    first = make_demo_competition(tmp_path / "a")
    second = make_demo_competition(tmp_path / "b")
    for name in ("data/train.csv", "data/test.csv", "private/answers.csv", "description.md"):
        assert (first / name).read_bytes() == (second / name).read_bytes()
    before = (first / "data" / "train.csv").stat().st_mtime_ns
    make_demo_competition(first)
    assert (first / "data" / "train.csv").stat().st_mtime_ns == before


def test_demo_never_overwrites_a_foreign_folder(tmp_path: Path) -> None:
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep me")
    with pytest.raises(SourceError):
        make_demo_competition(tmp_path / "mine")
    assert (tmp_path / "mine" / "notes.txt").read_text() == "keep me"
