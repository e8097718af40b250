"""Segmentation per picture and class: competitions made in the test (discs, squares and stripes on a
textured ground, class_mask_competition.py) recognised from their tables in Kaggle's layouts, the
submission written one row per (picture, class) in the sample's order and spelling, mean Dice over
the pairs, and a run end to end graded against submitting no mask."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from agentk.core.mask_targets import (class_bit, class_labels, class_mask_submission, class_strings, save_labels,
                                      score_class_labels)
from agentk.core.masks import rle_decode, rle_encode
from agentk.core.metrics import get_metric
from agentk.grading import grade_submission
from agentk.sources import load_competition
from class_mask_competition import make_class_mask_competition
from helpers import agent_view
from setup_pipeline.expert.mask_targets import find_mask_task
from setup_pipeline.perception.catalogue import build_catalogue

AGENTK = [sys.executable, "-m", "agentk.cli"]


def _masks(seed: int, n: int = 6) -> list[str]:
    rng = np.random.default_rng(seed)
    strings = []
    for _ in range(n):
        mask = np.zeros((16, 16), bool)
        if rng.random() < 0.6:
            y, x = rng.integers(0, 12, 2)
            mask[y:y + 4, x:x + 3] = True
        strings.append(rle_encode(mask))
    return strings


# ---------------------------------------------------------------- the metric over pairs


def test_mean_dice_over_pairs_invariants() -> None:
    dice = get_metric("dice").fn
    truth, other = _masks(0, 12), _masks(1, 12)
    assert dice(truth, truth) == pytest.approx(1.0)  # perfect
    assert dice([""] * 5, [""] * 5) == pytest.approx(1.0)  # empty on empty scores 1
    blanks = sum(s == "" for s in truth) / len(truth)
    assert dice(truth, [""] * len(truth)) == pytest.approx(blanks)  # all empty: the share of empty pairs
    order = np.random.default_rng(2).permutation(len(truth))
    assert dice([truth[i] for i in order], [other[i] for i in order]) == pytest.approx(dice(truth, other))
    assert dice(truth, other) < 1.0


def test_class_masks_hold_overlapping_classes_and_score_as_their_pairs() -> None:
    first, third = np.zeros((8, 8), bool), np.zeros((8, 8), bool)
    first[:4, :4], third[2:, 2:] = True, True  # overlapping, as clouds of two kinds do
    truth = class_labels([(1, rle_encode(first)), (2, ""), (3, rle_encode(third))], (8, 8))
    assert class_strings(truth, 3) == [rle_encode(first), "", rle_encode(third)]
    predicted = np.where(first, class_bit(1), 0).astype(np.int32)
    # Class 1 right, class 2 empty on both sides, class 3 missed: (1 + 1 + 0) / 3.
    assert score_class_labels("dice", [truth], [predicted], 3) == pytest.approx(2 / 3)
    assert score_class_labels("dice", [truth], [truth], 3) == pytest.approx(1.0)


# ---------------------------------------------------------------- perception and submission


@pytest.mark.parametrize("style,sample", [("joined", "joined"), ("columns", "joined"), ("columns", "columns")])
def test_tables_per_picture_and_class_are_read_by_structure(tmp_path: Path, style: str, sample: str) -> None:
    competition = make_class_mask_competition(tmp_path / "c", n_train=8, n_test=3, style=style, sample=sample)
    raw = agent_view(competition, tmp_path / "raw")
    catalogue = build_catalogue(raw)
    notes: list[str] = []
    task = find_mask_task(raw, catalogue.images, catalogue.tables, "", notes)
    assert task is not None and not task.per_object
    assert task.classes == (["1", "2", "3"] if style == "columns" else ["Disc", "Square", "Stripe"])
    assert (task.train_dir, task.test_dir, task.n_train, task.n_test) == ("data/train_images", "data/test_images", 8, 3)
    assert task.table_class == ("ClassId" if style == "columns" else None)
    assert task.sample_class == ("ClassId" if sample == "columns" else None)
    assert task.missing_is_empty == (style == "columns")  # only the pairs with a mask are listed
    assert any("per picture and class" in note for note in notes)


def test_the_submission_keeps_the_samples_rows_and_spelling(tmp_path: Path) -> None:
    labels = np.zeros((6, 6), np.int32)
    labels[:2, :2], labels[4:, :] = class_bit(1), class_bit(2)
    save_labels(labels, tmp_path / "a.npz")
    save_labels(np.zeros((6, 6), np.int32), tmp_path / "b.npz")
    sample = pd.DataFrame({"ImageId": ["b.jpg", "a.jpg", "a.jpg", "a.jpg"], "EncodedPixels": "1 1",
                           "ClassId": ["1", "3", "2", "1"]})
    got = class_mask_submission({"a": tmp_path / "a.npz", "b": tmp_path / "b.npz"}, sample, "ImageId",
                                "EncodedPixels", "ClassId", ["1", "2", "3"], empty="-1")
    assert got.columns.tolist() == sample.columns.tolist()
    assert got["ImageId"].tolist() == sample["ImageId"].tolist() and got["ClassId"].tolist() == sample["ClassId"].tolist()
    assert got["EncodedPixels"].tolist()[:2] == ["-1", "-1"]
    assert rle_decode(got["EncodedPixels"][2], (6, 6)).sum() == 12 and rle_decode(got["EncodedPixels"][3], (6, 6)).sum() == 4
    joined = class_mask_submission({"a": tmp_path / "a.npz"}, pd.DataFrame({"Image_Label": ["a.jpg_Fish", "a.jpg_Sugar"],
                                                                             "EncodedPixels": ""}),
                                   "Image_Label", "EncodedPixels", None, ["Fish", "Sugar"])
    assert rle_decode(joined["EncodedPixels"][0], (6, 6)).sum() == 4 and rle_decode(joined["EncodedPixels"][1], (6, 6)).sum() == 12


# ---------------------------------------------------------------- end to end


@pytest.mark.integration
def test_patterns_per_picture_and_class_are_segmented_end_to_end(tmp_path: Path) -> None:
    """A training table of only the pairs with a mask, classes numbered, the sample's ids joined:
    the layout that mixes both styles. Each style's reading is test_tables_per_picture_and_class_
    are_read_by_structure's, the submission's spelling test_the_submission_keeps_the_samples_rows_
    and_spelling's, so one run covers the solve for both."""
    competition = make_class_mask_competition(tmp_path / "sky", style="columns")
    proc = subprocess.run([*AGENTK, "run", str(competition), "--workspace-root", str(tmp_path / "ws"),
                           "--time-budget", "30", "--json"], cwd=tmp_path, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    workspace = tmp_path / "ws" / "sky-patterns"
    result = json.loads((workspace / "result.json").read_text())
    assert result["valid_submission"] is True
    assert all(stage["passed"] for stage in result["setup"].values()), result["setup"]
    assert all(stage["passed"] for stage in result["meta"].values()), result["meta"]
    submission = pd.read_csv(workspace / "submissions" / "submission.csv", dtype=str, keep_default_na=False)
    sample = pd.read_csv(competition / "data" / "sample_submission.csv", dtype=str)
    assert submission.columns.tolist() == sample.columns.tolist()
    assert submission[sample.columns[0]].tolist() == sample[sample.columns[0]].tolist()
    solve = json.loads((workspace / "solve" / "solve_result.json").read_text())
    assert solve["model"] == "pixel_lightgbm" and solve["cv"]["pixel_lightgbm"] > solve["cv"]["empty"]
    answers = pd.read_csv(competition / "private" / "answers.csv", dtype=str, keep_default_na=False)
    loaded = load_competition(competition)
    assert loaded.grading is not None
    empty = grade_submission(sample.assign(EncodedPixels=""), answers, loaded.grading)
    assert empty.valid and empty.score is not None
    assert result["test_metric"] == "dice" and result["test_score"] >= empty.score + 0.2, (result["test_score"], empty.score)
