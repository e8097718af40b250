"""Segmentation: competitions made in the test (bright shapes on textured ground and their masks, as
mask pictures or run-length tables), recognised from the files, solved by a pixel classifier with
tuned post-processing, submitted run-length encoded and graded by their own metric."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from agentk.core.mask_targets import decoded_labels, mask_submission, read_labels, save_labels, score_labels
from agentk.core.masks import rle_decode, rle_encode
from agentk.grading import grade_submission
from agentk.sources import load_competition
from helpers import agent_view
from mask_competition import make_mask_files_competition, make_rle_table_competition
from setup_pipeline.expert import mask_codegen
from setup_pipeline.expert.inspect import inspect_competition
from solve_pipeline.pixels.mask_post import MaskScorer, PostProcess, area_grid, search
from solve_pipeline.base.submission_check import validate_submission

AGENTK = [sys.executable, "-m", "agentk.cli"]


# ---------------------------------------------------------------- the contract


def test_labelled_masks_round_trip_into_the_samples_rows(tmp_path: Path) -> None:
    labels = np.zeros((5, 4), dtype=np.int32)
    labels[0:2, 0] = 1
    labels[3:5, 2:4] = 2
    save_labels(labels, tmp_path / "a.npz")
    assert (read_labels(tmp_path / "a.npz") == labels).all()
    save_labels(np.zeros((5, 4), dtype=np.int32), tmp_path / "b.npz")
    predictions = {"a": tmp_path / "a.npz", "b": tmp_path / "b.npz"}
    # The sample names pictures with their extension, in its own order.
    per_object = mask_submission(predictions, ["b.png", "a.png"], "ImageId", "EncodedPixels", True, empty="-1")
    assert per_object["ImageId"].tolist() == ["b.png", "a.png", "a.png"]
    assert per_object["EncodedPixels"].tolist() == ["-1", "1 2", "14 2 19 2"]  # column-major, from 1
    union = mask_submission(predictions, ["a", "b"], "id", "rle_mask", False)
    assert union["rle_mask"].tolist() == [rle_encode(labels > 0), ""]
    decoded = decoded_labels(per_object["EncodedPixels"].tolist()[1:], (5, 4))
    assert (decoded == labels).all()
    assert (rle_decode(rle_encode(labels > 0, "C"), (5, 4), "C") == (labels > 0)).all()


def test_a_mask_picture_reads_as_one_object(tmp_path: Path) -> None:
    from PIL import Image

    mask = np.zeros((6, 7), dtype=np.uint8)
    mask[1:3, 2:5] = 255
    Image.fromarray(mask).save(tmp_path / "m.png")
    labels = read_labels(tmp_path / "m.png")
    assert labels.dtype == np.int32 and set(np.unique(labels)) == {0, 1} and labels.sum() == 6


def test_submission_check_reads_objects_and_encodings(tmp_path: Path) -> None:
    sample = tmp_path / "sample.csv"
    pd.DataFrame({"ImageId": ["a", "b", "c"], "EncodedPixels": ["-1"] * 3}).to_csv(sample, index=False)
    good = tmp_path / "good.csv"
    pd.DataFrame({"ImageId": ["a", "a", "b", "c"], "EncodedPixels": ["1 2", "5 1", "", "-1"]}).to_csv(good, index=False)
    assert validate_submission(good, sample_path=sample, encoded=["EncodedPixels"], repeated_ids=True) == []
    # Without the mask rules the same file has extra rows and a blank cell.
    assert validate_submission(good, sample_path=sample)
    split = tmp_path / "split.csv"
    pd.DataFrame({"ImageId": ["a", "b", "a", "c"], "EncodedPixels": ["1 2", "", "5 1", ""]}).to_csv(split, index=False)
    assert any("not consecutive" in p for p in validate_submission(split, sample_path=sample, encoded=["EncodedPixels"],
                                                                    repeated_ids=True))
    broken = tmp_path / "broken.csv"
    pd.DataFrame({"ImageId": ["a", "b", "c"], "EncodedPixels": ["1 2 3", "", "x"]}).to_csv(broken, index=False)
    problems = validate_submission(broken, sample_path=sample, encoded=["EncodedPixels"], repeated_ids=True)
    assert any("2 cell(s) are not run-length masks" in p for p in problems)


# ---------------------------------------------------------------- post-processing


def _tiny_case() -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Three 20x20 pictures: a true blob seen at 0.7 beside a bright 3-pixel speck; an empty
    picture with a faint 6-pixel false blob; two true objects, one seen only faintly."""
    probabilities, truths = [], []
    p = np.full((20, 20), 0.2, dtype=np.float32)
    t = np.zeros((20, 20), dtype=np.int32)
    p[4:10, 4:10], t[4:10, 4:10] = 0.7, 1
    p[15, 15:18] = 0.95
    probabilities.append(p), truths.append(t)
    p = np.full((20, 20), 0.1, dtype=np.float32)
    p[2:4, 2:5] = 0.6
    probabilities.append(p), truths.append(np.zeros((20, 20), dtype=np.int32))
    p = np.full((20, 20), 0.15, dtype=np.float32)
    t = np.zeros((20, 20), dtype=np.int32)
    p[1:6, 1:6], t[1:6, 1:6] = 0.8, 1
    p[12:18, 12:18], t[12:18, 12:18] = 0.45, 2
    probabilities.append(p), truths.append(t)
    return probabilities, truths


@pytest.mark.parametrize("metric,per_object", [("dice", False), ("iou", False), ("map_iou", True), ("map_iou", False)])
def test_the_search_finds_the_metrics_best_and_scores_as_the_registry(metric: str, per_object: bool) -> None:
    probabilities, truths = _tiny_case()
    scorer = MaskScorer(metric, probabilities, truths, per_object)
    post, best = search(scorer)
    # Every setting of the grid scored by the registry itself, on the masks `apply` gives.
    areas = area_grid(probabilities)
    grid = [PostProcess(t, m, e) for t, m, e in itertools.product((0.3, 0.4, 0.5, 0.65, 0.9), areas, areas)]
    truth = list(truths)
    registry = {g: score_labels(metric, truth, [g.apply(p) for p in probabilities], per_object) for g in grid}
    for g in grid[::7]:
        assert scorer.score(g) == pytest.approx(registry[g])
    assert best == pytest.approx(score_labels(metric, truth, [post.apply(p) for p in probabilities], per_object))
    assert best >= max(registry.values()) - 1e-9
    # The speck and the false blob must go: a plain threshold keeps them.
    assert best > scorer.score(PostProcess(0.5, 0, 0))
    assert post.min_area > 3 or post.empty_area > 6 or post.threshold > 0.95


# ---------------------------------------------------------------- perception


def test_mask_pictures_beside_the_pictures_are_a_segmentation_task(tmp_path: Path) -> None:
    competition = make_mask_files_competition(tmp_path / "c", n_train=6, n_test=3)
    facts = inspect_competition(agent_view(competition, tmp_path / "raw"))
    task = facts.masks
    assert task is not None and facts.submission_format == "per_mask" and facts.pixels is None
    assert (task.source, task.train_dir, task.mask_dir, task.test_dir) == (
        "mask_files", "data/train/images", "data/train/masks", "data/test/images")
    assert (task.n_train, task.n_test, task.per_object, task.order, task.empty) == (6, 3, False, "F", "")
    assert facts.metric == "dice" and facts.metric_higher_is_better and not facts.assumptions
    assert any("two-level pictures" in n for n in facts.notes)


def test_a_table_of_objects_is_a_segmentation_task_of_objects(tmp_path: Path) -> None:
    competition = make_rle_table_competition(tmp_path / "c", n_train=8, n_test=3)
    raw = agent_view(competition, tmp_path / "raw")
    facts = inspect_competition(raw)
    task = facts.masks
    assert task is not None
    assert (task.source, task.table, task.table_id, task.table_value) == ("rle_table", "data/train.csv", "ImageId", "EncodedPixels")
    assert (task.train_dir, task.test_dir, task.per_object, task.empty, task.relative) == (
        "data/train_images", "data/test_images", True, "-1", False)
    assert facts.metric == "map_iou" and task.thresholds == pytest.approx([0.5 + 0.05 * i for i in range(10)])
    # Without the page's metric, objects are scored as objects; a table listing only pictures
    # with a mask leaves the others empty.
    (raw / "description.md").write_text("# Cells\n\nFind the cells.\n", encoding="utf-8")
    table = pd.read_csv(raw / "data" / "train.csv", dtype=str, keep_default_na=False)
    table[table["EncodedPixels"] != ""].to_csv(raw / "data" / "train.csv", index=False)
    facts = inspect_competition(raw)
    assert facts.metric == "map_iou" and facts.masks is not None and facts.masks.missing_is_empty
    assert facts.masks.n_train == 8 and any("metric: map_iou" in a for a in facts.assumptions)


@pytest.mark.parametrize("order", ["F", "C"])
def test_the_numbering_is_read_from_the_masks_when_the_page_does_not_say(tmp_path: Path, order: str) -> None:
    competition = make_rle_table_competition(tmp_path / "c", n_train=8, n_test=3, order=order)
    raw = agent_view(competition, tmp_path / "raw")
    (raw / "description.md").write_text("# Cells\n\nScored by mean average precision at different intersection "
                                        "over union thresholds of the masks.\n", encoding="utf-8")
    facts = inspect_competition(raw)
    assert facts.masks is not None and facts.masks.order == order
    assert any("(the page does not say)" in n and "pieces" in n for n in facts.notes)


def _built_map(code: str, raw: Path, setup: Path) -> pd.DataFrame:
    """A generated stage's build_map() run as its template runs it."""
    setup.mkdir(parents=True, exist_ok=True)
    names = {"pd": pd, "np": np, "HERE": setup, "RAW": raw,
             "IMAGE_EXTENSIONS": {".png", ".jpg", ".jpeg", ".tif", ".tiff", ".bmp"},
             "relative_to_setup": lambda p: os.path.relpath(Path(p).resolve(), setup)}
    exec(code, names)  # noqa: S102 - the expert's own generated code
    return names["build_map"]()


def test_a_table_listing_only_masks_decodes_every_picture_once(tmp_path: Path) -> None:
    competition = make_rle_table_competition(tmp_path / "c", n_train=8, n_test=3)
    raw = agent_view(competition, tmp_path / "raw")
    table = pd.read_csv(raw / "data" / "train.csv", dtype=str, keep_default_na=False)
    table = table[table["EncodedPixels"] != ""]
    table.to_csv(raw / "data" / "train.csv", index=False)
    facts = inspect_competition(raw)
    assert facts.masks is not None and facts.masks.missing_is_empty
    setup = tmp_path / "setup"
    targets = _built_map(mask_codegen.target_map(facts), raw, setup)
    inputs = _built_map(mask_codegen.image_map(facts, "train"), raw, setup)
    assert targets["id"].tolist() == inputs["id"].tolist() and len(targets) == 8
    listed = set(table["ImageId"].str.replace(".png", "", regex=False))
    for image_id, path in zip(targets["id"], targets["EncodedPixels"]):
        labels = read_labels(setup / path)
        strings = table.loc[table["ImageId"] == f"{image_id}.png", "EncodedPixels"].tolist()
        strings = [s for s in strings if s]
        assert int(labels.max()) == len(strings) and (image_id in listed) == bool(strings)
        assert [rle_encode(labels == k) for k in range(1, len(strings) + 1)] == strings
        assert ("/empty/" in path) == (not strings)  # pictures without a mask share one file per size


def test_a_class_per_mask_is_not_read_as_objects(tmp_path: Path) -> None:
    competition = make_rle_table_competition(tmp_path / "c", n_train=8, n_test=3)
    raw = agent_view(competition, tmp_path / "raw")
    table = pd.read_csv(raw / "data" / "train.csv", dtype=str, keep_default_na=False)
    table.insert(1, "ClassId", [str(i % 3) for i in range(len(table))])
    table.to_csv(raw / "data" / "train.csv", index=False)
    from setup_pipeline.expert.mask_targets import find_mask_task
    from setup_pipeline.perception.catalogue import build_catalogue

    catalogue = build_catalogue(raw)
    assert find_mask_task(raw, catalogue.images, catalogue.tables, "", []) is None


# ---------------------------------------------------------------- end to end


def _empty_score(competition: Path, sample_empty: str) -> float:
    """The competition's metric for a submission of no mask anywhere."""
    loaded = load_competition(competition)
    sample = pd.read_csv(competition / "data" / "sample_submission.csv", dtype=str, keep_default_na=False)
    sample[sample.columns[1]] = sample_empty
    answers = pd.read_csv(competition / "private" / "answers.csv", dtype=str, keep_default_na=False)
    assert loaded.grading is not None
    report = grade_submission(sample, answers, loaded.grading)
    assert report.valid and report.score is not None
    return report.score


def _run(competition: Path, tmp_path: Path, name: str) -> tuple[dict, Path]:
    proc = subprocess.run([*AGENTK, "run", str(competition), "--workspace-root", str(tmp_path / "ws"),
                           "--time-budget", "20", "--json"], cwd=tmp_path, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    workspace = tmp_path / "ws" / name
    result = json.loads((workspace / "result.json").read_text())
    assert result["valid_submission"] is True
    assert all(stage["passed"] for stage in result["setup"].values()), result["setup"]
    assert all(stage["passed"] for stage in result["meta"].values()), result["meta"]
    plan = json.loads((workspace / "setup" / "plan.json").read_text())
    assert plan["task_type"] == "mask"
    return result, workspace


@pytest.mark.integration
def test_deposits_in_mask_pictures_are_segmented_end_to_end(tmp_path: Path) -> None:
    competition = make_mask_files_competition(tmp_path / "deposits")
    result, workspace = _run(competition, tmp_path, "ground-deposits")
    solve = json.loads((workspace / "solve" / "solve_result.json").read_text())
    assert solve["model"] == "pixel_lightgbm" and solve["cv"]["pixel_lightgbm"] > solve["cv"]["empty"]
    submission = pd.read_csv(workspace / "submissions" / "submission.csv", dtype=str, keep_default_na=False)
    sample = pd.read_csv(competition / "data" / "sample_submission.csv", dtype=str)
    assert submission["id"].tolist() == sample["id"].tolist()
    empty = _empty_score(competition, "")
    assert result["test_metric"] == "dice" and result["test_score"] >= empty + 0.3, (result["test_score"], empty)


@pytest.mark.integration
def test_cells_in_a_table_of_objects_are_found_one_row_each_end_to_end(tmp_path: Path) -> None:
    competition = make_rle_table_competition(tmp_path / "cells")
    result, workspace = _run(competition, tmp_path, "bright-cells")
    submission = pd.read_csv(workspace / "submissions" / "submission.csv", dtype=str, keep_default_na=False)
    sample = pd.read_csv(competition / "data" / "sample_submission.csv", dtype=str)
    assert submission["ImageId"].drop_duplicates().tolist() == sample["ImageId"].tolist()
    assert submission["ImageId"].duplicated().any()  # several objects in a picture, one row each
    assert (submission["EncodedPixels"] == "-1").any()  # no object, written as the sample does
    empty = _empty_score(competition, "-1")
    assert result["test_metric"] == "map_iou" and result["test_score"] >= empty + 0.4, (result["test_score"], empty)
