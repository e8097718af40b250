"""Detection: competitions made in the test (bright blobs on textured ground and their boxes, in a
table of one cell per box or of four number columns), recognised from the files, solved by a pixel
classifier of box centres with tuned post-processing, submitted as `conf x y w h ...` cells and
graded by mean average precision over IoU thresholds."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from agentk.core.box_targets import (
    box_submission, cell_boxes, read_boxes, rectangles, row_boxes, save_boxes, score_boxes,
)
from agentk.core.boxes import Boxes, format_boxes
from agentk.core.metrics import get_metric
from agentk.grading import grade_submission
from agentk.sources import load_competition
from helpers import agent_view
from box_competition import make_box_cell_competition, make_box_columns_competition
from setup_pipeline.expert.inspect import inspect_competition
from solve_pipeline.pixels.boxes import SHRINK, BoxPost, BoxScorer, search
from solve_pipeline.pixels.scale import factor, reduced, resampled
from solve_pipeline.base.submission_check import validate_submission

AGENTK = [sys.executable, "-m", "agentk.cli"]


# ---------------------------------------------------------------- the contract


def test_training_cells_and_columns_read_as_boxes() -> None:
    assert cell_boxes("[834.0, 222.0, 56.0, 36.0]").tolist() == [[834, 222, 56, 36]]
    assert cell_boxes("1 2 3 4 10 20 5 6").tolist() == [[1, 2, 3, 4], [10, 20, 5, 6]]
    assert cell_boxes("", "xywh").shape == (0, 4) and cell_boxes(float("nan")).shape == (0, 4)
    assert cell_boxes("[10, 20, 30, 60]", "xyxy").tolist() == [[10, 20, 20, 40]]
    assert row_boxes(["5", "6", "7", "8"]).tolist() == [[5, 6, 7, 8]]
    assert row_boxes(["", "", "", ""]).shape == (0, 4)  # a row of a picture without boxes
    with pytest.raises(ValueError):
        cell_boxes("1 2 3")
    with pytest.raises(ValueError):
        cell_boxes("[30, 20, 10, 60]", "xyxy")  # the second corner left of the first


def test_saved_boxes_keep_their_extents_where_they_overlap(tmp_path: Path) -> None:
    xywh = np.array([[2, 2, 10, 8], [6, 4, 10, 10]], dtype=float)
    save_boxes(xywh, (20, 24), tmp_path / "a.npz", scores=np.array([0.3, 0.9]))
    boxes = read_boxes(tmp_path / "a.npz")
    assert boxes.xywh.tolist() == xywh.tolist() and boxes.scores.tolist() == pytest.approx([0.3, 0.9])
    labels = rectangles(xywh, (20, 24))
    assert labels[3, 3] == 1 and labels[5, 7] == 2 and labels[19, 23] == 0  # the later box on top
    centres = rectangles(xywh[:1], (20, 24), SHRINK)
    assert (centres > 0).sum() == 5 * 4  # the central half of a 10 x 8 box


def test_a_submission_lists_each_pictures_boxes_most_confident_first(tmp_path: Path) -> None:
    save_boxes(np.array([[1, 1, 4, 4], [10, 10, 5, 5]]), (32, 32), tmp_path / "p1.npz", scores=np.array([0.2, 0.8]))
    save_boxes(np.zeros((0, 4)), (32, 32), tmp_path / "p2.npz")
    frame = box_submission({"p1": tmp_path / "p1.npz", "p2": tmp_path / "p2.npz"}, ["p2", "p1.jpg"],
                           "image_id", "PredictionString")
    assert frame["image_id"].tolist() == ["p2", "p1.jpg"]
    assert frame["PredictionString"].tolist() == ["", "0.8000 10.0 10.0 5.0 5.0 0.2000 1.0 1.0 4.0 4.0"]
    path = tmp_path / "submission.csv"
    frame.to_csv(path, index=False)
    sample = tmp_path / "sample.csv"
    pd.DataFrame({"image_id": ["p2", "p1.jpg"], "PredictionString": ["1.0 0 0 50 50"] * 2}).to_csv(sample, index=False)
    assert validate_submission(path, sample_path=sample, encoded=["PredictionString"], encoding="boxes") == []
    frame.loc[0, "PredictionString"] = "0.5 1 2 3"  # four numbers: no confidence
    frame.to_csv(path, index=False)
    problems = validate_submission(path, sample_path=sample, encoded=["PredictionString"], encoding="boxes")
    assert any("not boxes" in p for p in problems), problems


def test_the_solvers_score_is_the_graders() -> None:
    rng = np.random.default_rng(0)
    truth = [Boxes(np.ones(2), np.array([[5, 5, 10, 10], [30, 30, 8, 12]], float)), Boxes.empty(),
             Boxes(np.ones(1), np.array([[0, 0, 20, 20]], float))]
    predicted = [Boxes(rng.uniform(size=3), np.array([[6, 5, 10, 9], [31, 29, 8, 12], [50, 50, 4, 4]], float)),
                 Boxes(np.array([0.4]), np.array([[1, 1, 3, 3]], float)), Boxes.empty()]
    mine = score_boxes("map_boxes", truth, predicted)
    want = [" ".join(f"{x:g} {y:g} {w:g} {h:g}" for x, y, w, h in b.xywh) for b in truth]
    got = [format_boxes(b.scores, b.xywh) if len(b) else "" for b in predicted]
    assert mine == pytest.approx(get_metric("map_boxes").fn(want, got)) and 0 < mine < 1


def test_the_post_processing_search_recovers_boxes_from_centres() -> None:
    """Probability maps that light up each box's centre: the search grows them back to the boxes."""
    truths, maps = [], []
    rng = np.random.default_rng(1)
    for _ in range(6):
        xywh = np.array([[rng.integers(2, 20), rng.integers(2, 20), 12, 10], [40, 36, 14, 16]], float)
        truths.append(Boxes(np.ones(2), xywh))
        centre = (rectangles(xywh, (64, 64), SHRINK) > 0).astype(np.float32)
        maps.append(np.clip(0.8 * centre + rng.normal(0, 0.05, centre.shape), 0, 1).astype(np.float32))
    scorer = BoxScorer("map_boxes", maps, truths)
    post, score = search(scorer)
    assert score == pytest.approx(scorer.score(post))
    assert score > 0.8 and 1.6 <= post.growth <= 2.4, (post, score)
    applied = [post.apply(p) for p in maps]
    assert score_boxes("map_boxes", truths, applied) == pytest.approx(score)
    assert scorer.score(BoxPost(0.5, 0, 1.0)) < score  # the centres alone are too small


def test_big_pictures_are_solved_smaller_and_their_predictions_brought_back() -> None:
    picture = np.zeros((1000, 800), np.float32)
    picture[100:300, 400:600] = 1.0
    small = reduced(picture)
    assert small.shape == (384, 307) and factor(picture.shape) == pytest.approx(0.384)
    assert small.mean() == pytest.approx(picture.mean(), rel=0.02)  # area averaging keeps the levels
    labels = rectangles(np.array([[400, 100, 200, 200]]), (1000, 800))
    back = resampled(resampled(labels, small.shape), picture.shape)
    assert (back == labels).mean() > 0.99  # the object comes back where it was, edges within a pixel
    assert reduced(np.ones((64, 48), np.float32)).shape == (64, 48)  # small pictures stay as they are


# ---------------------------------------------------------------- perception


def test_a_table_of_box_cells_is_a_detection_task(tmp_path: Path) -> None:
    raw = agent_view(make_box_cell_competition(tmp_path / "c", n_train=12, n_test=4), tmp_path / "raw")
    facts = inspect_competition(raw)
    task = facts.masks
    assert task is not None and task.output == "boxes" and facts.submission_format == "per_box"
    assert task.box_columns == ["bbox"] and task.train_dir == "data/train" and task.test_dir == "data/test"
    assert task.missing_is_empty  # only pictures with boxes are listed, as in the wheat layout
    assert facts.metric == "map_boxes" and task.thresholds == [0.5, 0.55, 0.6, 0.65, 0.7, 0.75]
    assert any(n.startswith("detection:") for n in facts.notes)


def test_four_box_columns_with_blank_rows_are_a_detection_task(tmp_path: Path) -> None:
    raw = agent_view(make_box_columns_competition(tmp_path / "c", n_train=12, n_test=4), tmp_path / "raw")
    task = inspect_competition(raw).masks
    assert task is not None and task.box_columns == ["x", "y", "width", "height"] and task.box_format == "xywh"
    assert not task.missing_is_empty and task.n_train == 12 and task.thresholds and task.thresholds[0] == 0.4
    # Corners instead of sizes: the names say so.
    table = raw / "data" / "stage_1_train_labels.csv"
    frame = pd.read_csv(table)
    frame["xmax"], frame["ymax"] = frame["x"] + frame["width"], frame["y"] + frame["height"]
    frame.rename(columns={"x": "xmin", "y": "ymin"}).drop(columns=["width", "height"]).to_csv(table, index=False)
    task = inspect_competition(raw).masks
    assert task is not None and task.box_columns == ["xmin", "ymin", "xmax", "ymax"] and task.box_format == "xyxy"


# ---------------------------------------------------------------- end to end


def _empty_score(competition: Path) -> float:
    loaded = load_competition(competition)
    sample = pd.read_csv(competition / "data" / "sample_submission.csv", dtype=str, keep_default_na=False)
    sample["PredictionString"] = ""
    answers = pd.read_csv(competition / "private" / "answers.csv", dtype=str, keep_default_na=False)
    assert loaded.grading is not None
    report = grade_submission(sample, answers, loaded.grading)
    assert report.valid and report.score is not None
    return report.score


@pytest.mark.integration
def test_blobs_are_boxed_end_to_end(tmp_path: Path) -> None:
    """The four-column layout (blank rows for pictures without boxes, sizes or corners by name):
    the one-cell-per-box layout reads the same way from the perception on (its facts are
    test_a_table_of_box_cells_is_a_detection_task's), so one run covers the solve for both."""
    name = "blob-boxes-columns"
    competition = make_box_columns_competition(tmp_path / name)
    proc = subprocess.run([*AGENTK, "run", str(competition), "--workspace-root", str(tmp_path / "ws"),
                           "--time-budget", "12", "--json"], cwd=tmp_path, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    workspace = tmp_path / "ws" / name
    result = json.loads((workspace / "result.json").read_text())
    assert result["valid_submission"] is True
    assert all(stage["passed"] for stage in result["setup"].values()), result["setup"]
    plan = json.loads((workspace / "setup" / "plan.json").read_text())
    assert plan["facts"]["masks"]["output"] == "boxes" and "boxes" in plan["steps"][0]
    solve = json.loads((workspace / "solve" / "solve_result.json").read_text())
    assert solve["model"] == "pixel_lightgbm" and solve["cv"]["pixel_lightgbm"] > solve["cv"]["empty"]
    submission = pd.read_csv(workspace / "submissions" / "submission.csv", dtype=str, keep_default_na=False)
    sample = pd.read_csv(competition / "data" / "sample_submission.csv", dtype=str)
    assert submission.iloc[:, 0].tolist() == sample.iloc[:, 0].tolist()
    empty = _empty_score(competition)
    assert result["test_metric"] == "map_boxes" and result["test_score"] >= empty + 0.4, (result["test_score"], empty)
