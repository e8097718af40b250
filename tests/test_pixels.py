"""Image to image: stained scans made in the test beside their clean versions, recognised from the
files (paired folders, a per-pixel sample), solved pixel by pixel, submitted and graded."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from agentk.bench.baselines import constant_score
from agentk.core.pixels import (PIXEL_ID, fitted, image_keys, read_picture, score_pictures, split_pixel_ids,
                                values_in_order, write_pixel_csv)
from agentk.sources import load_competition
from pixel_competition import make_pixel_competition
from solve_pipeline.pixels.model import PixelRows, PredictionDue, fit_pixel_model
from setup_pipeline.expert.inspect import inspect_competition
from setup_pipeline.perception.catalogue import build_catalogue
from setup_pipeline.expert.pixels import find_pixel_task

AGENTK = [sys.executable, "-m", "agentk.cli"]


def agent_view(competition: Path, raw: Path) -> Path:
    """What the agent sees of a local competition: description.md and data/."""
    raw.mkdir(parents=True)
    shutil.copy(competition / "description.md", raw / "description.md")
    shutil.copytree(competition / "data", raw / "data")
    return raw


# ---------------------------------------------------------------- the contract


def test_values_follow_the_sample_whatever_its_order() -> None:
    pictures = {"7": np.arange(6, dtype=np.float32).reshape(2, 3), "a_b": np.array([[9.0]], dtype=np.float32)}
    ids = pd.Series(["7_2_3", " a_b_1_1", "7_1_1", "7_1_2", "7_2_1"])
    assert values_in_order(pictures, ids).tolist() == [5, 9, 0, 1, 3]
    assert values_in_order(pictures, pd.Series(["7_3_2", "7_1_2"]), column_first=True).tolist() == [5, 3]
    assert values_in_order(pictures, pd.Series(["7_0_0"]), base=0).tolist() == [0]
    with pytest.raises(ValueError, match="outside"):
        values_in_order(pictures, pd.Series(["7_3_1"]))
    with pytest.raises(ValueError, match="no predicted picture"):
        values_in_order(pictures, pd.Series(["8_1_1"]))
    with pytest.raises(ValueError, match="are not <picture>"):
        values_in_order(pictures, pd.Series(["7_1"]))
    assert image_keys(pd.Series(["a_b_1_2", " 12_3_4 ", "12_1_1"])) == {"a_b", "12"}
    # A sample of millions of rows reads as an Arrow column in chunks.
    chunked = pd.Series(pd.arrays.ArrowExtensionArray(pa.chunked_array([["7_2_3", "a_b_1_1"], ["7_1_1"]])))
    assert values_in_order(pictures, chunked).tolist() == [5, 9, 0]


def test_pixel_ids_split_as_the_pattern_reads_them() -> None:
    # Ids split on their bytes agree with the pattern, whatever the names hold (underscores,
    # digits, letters beyond ASCII, spaces around) and however an id breaks the form.
    rng = np.random.default_rng(0)
    pieces = ["7", "a_b", "é_1", "_", "x", "12", "", "3_", " ", "9" * 17, "1" * 18, "-", "ñ"]
    ids = ["".join(rng.choice(pieces, size=int(rng.integers(1, 6)))) for _ in range(3000)]
    ids += ["a_1_2", " a_b_03_4 ", "a_1_", "_1_2", "a__1", "a_1_2_", "x_1e3_4", "ab_١_2"]
    split = split_pixel_ids(pd.Series(ids))
    for i, text in enumerate(ids):
        match = PIXEL_ID.match(text.strip())
        assert bool(split.valid[i]) == (match is not None and match["row"].isascii() and match["col"].isascii()
                                         and len(match["row"]) < 18 and len(match["col"]) < 18), text
        if split.valid[i]:
            assert (split.images[split.codes[i]], split.first[i], split.second[i]) == (
                match["image"], int(match["row"]), int(match["col"])), text
    assert image_keys(pd.Series(["a_1_2", "bad", "a_3_4", "b_c_1_1"])) == {"a", "bad", "b_c"}


def test_a_large_submission_written_by_arrow_reads_back_as_pandas_writes_it(tmp_path: Path) -> None:
    values = np.random.default_rng(0).random(1000).astype(np.float32)
    frame = pd.DataFrame({"id": [f"p_{i}_1" for i in range(1000)], "value": values})
    write_pixel_csv(frame, tmp_path / "arrow.csv", eol="\r\n")
    frame.to_csv(tmp_path / "pandas.csv", index=False, lineterminator="\r\n")
    assert (tmp_path / "arrow.csv").read_bytes().count(b"\r\n") == 1001
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "arrow.csv"), pd.read_csv(tmp_path / "pandas.csv"))
    # A cell Arrow could only write quoted goes through pandas.
    write_pixel_csv(pd.DataFrame({"id": ["a,b"], "value": [1.0]}), tmp_path / "quoted.csv")
    assert pd.read_csv(tmp_path / "quoted.csv")["id"].tolist() == ["a,b"]


def test_pooled_rmse_prefers_the_truth_and_fits_other_sizes() -> None:
    rng = np.random.default_rng(0)
    truth = [rng.random((4, 5)).astype(np.float32), rng.random((3, 3)).astype(np.float32)]
    assert score_pictures("rmse", truth, truth) == 0.0
    shuffled = score_pictures("rmse", truth, truth[::-1])
    constant = score_pictures("rmse", truth, [np.full_like(t, 0.5) for t in truth])
    assert np.isfinite(shuffled) and shuffled > 0 and constant > 0
    # By hand: one picture, every pixel off by 0.1.
    assert score_pictures("rmse", [np.zeros((2, 2))], [np.full((2, 2), 0.1)]) == pytest.approx(0.1)
    assert fitted(np.ones((2, 2), dtype=np.float32), (3, 1)).shape == (3, 1)


def test_the_pixel_fit_stops_when_predicting_its_trees_would_not_end_in_time(tmp_path: Path) -> None:
    competition = make_pixel_competition(tmp_path / "c", n_train=4, n_test=1, shapes=((40, 72),))
    data = competition / "data"
    rng = np.random.default_rng(0)
    rows, stop = PixelRows(), PixelRows()
    for name in ("1.png", "2.png", "3.png"):
        rows.add(read_picture(data / "train" / name), read_picture(data / "train_cleaned" / name), 2000, rng)
    stop.add(read_picture(data / "train" / "4.png"), read_picture(data / "train_cleaned" / "4.png"), 2000, rng)
    assert rows.pixels == 3 * 40 * 72 and rows.featurise_s > 0
    far = time.monotonic() + 600
    free = fit_pixel_model(rows, stop, far, 1, 0)
    # Predicting a trillion pixels cannot end in ten minutes: the fit stops at its first check.
    due = fit_pixel_model(rows, stop, far, 1, 0, due=PredictionDue(10**12, far, every=5))
    assert due.trees == 5 < free.trees
    # A handful of pixels is due: the fit runs as it would without.
    assert fit_pixel_model(rows, stop, far, 1, 0, due=PredictionDue(100, far, every=5)).trees == free.trees


# ---------------------------------------------------------------- perception


def test_paired_folders_and_a_pixel_sample_are_an_image_to_image_task(tmp_path: Path) -> None:
    competition = make_pixel_competition(tmp_path / "c", n_train=4, n_test=2)
    raw = agent_view(competition, tmp_path / "raw")
    facts = inspect_competition(raw)
    task = facts.pixels
    assert task is not None and facts.submission_format == "per_pixel"
    assert (task.train_dir, task.target_dir, task.test_dir) == ("data/train", "data/train_cleaned", "data/test")
    assert (task.base, task.order, task.scale, task.n_pairs, task.n_test) == (1, "row_col", 255.0, 4, 2)
    assert facts.metric == "rmse" and not facts.metric_higher_is_better
    assert any("4 training pairs data/train/ → data/train_cleaned/" in n for n in facts.notes)


def test_which_folder_holds_the_inputs_is_read_from_the_pictures_when_names_say_nothing(tmp_path: Path) -> None:
    competition = make_pixel_competition(tmp_path / "c", n_train=4, n_test=2)
    raw = agent_view(competition, tmp_path / "raw")
    data = raw / "data"
    # Names that tell nothing; the clean scans are listed first alphabetically.
    (data / "train_cleaned").rename(data / "a_pages")
    (data / "train").rename(data / "b_pages")
    (data / "test").rename(data / "c_pages")
    notes: list[str] = []
    catalogue = build_catalogue(raw)
    task = find_pixel_task(raw, catalogue.images, catalogue.tables, notes)
    assert task is not None
    assert (task.train_dir, task.target_dir) == ("data/b_pages", "data/a_pages")
    assert any("look like the test pictures" in n for n in notes)


def test_column_first_pixel_ids_are_read_as_such(tmp_path: Path) -> None:
    competition = make_pixel_competition(tmp_path / "c", n_train=3, n_test=2, shapes=((6, 9),))
    raw = agent_view(competition, tmp_path / "raw")
    sample = raw / "data" / "sampleSubmission.csv"
    frame = pd.read_csv(sample, dtype=str)
    parts = frame["id"].str.split("_", expand=True)
    frame["id"] = parts[0] + "_" + parts[2] + "_" + parts[1]  # image_col_row
    frame.to_csv(sample, index=False)
    catalogue = build_catalogue(raw)
    task = find_pixel_task(raw, catalogue.images, catalogue.tables, [])
    assert task is not None and task.order == "col_row"


def test_paired_folders_without_a_pixel_sample_are_not_an_image_to_image_task(tmp_path: Path) -> None:
    competition = make_pixel_competition(tmp_path / "c", n_train=3, n_test=2)
    raw = agent_view(competition, tmp_path / "raw")
    # A sample of one row per picture (say, a class per page) is another kind of task.
    pd.DataFrame({"id": ["4", "5"], "label": [0, 0]}).to_csv(raw / "data" / "sampleSubmission.csv", index=False)
    catalogue = build_catalogue(raw)
    assert find_pixel_task(raw, catalogue.images, catalogue.tables, []) is None


# ---------------------------------------------------------------- end to end


@pytest.mark.integration
def test_stained_scans_are_cleaned_end_to_end(tmp_path: Path) -> None:
    competition = make_pixel_competition(tmp_path / "stained", n_train=10, n_test=3)
    proc = subprocess.run([*AGENTK, "run", str(competition), "--workspace-root", str(tmp_path / "ws"),
                           "--time-budget", "20", "--json"], cwd=tmp_path, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    workspace = tmp_path / "ws" / "stained-scans"
    result = json.loads((workspace / "result.json").read_text())
    assert result["valid_submission"] is True
    assert all(stage["passed"] for stage in result["setup"].values()), result["setup"]
    solve = json.loads((workspace / "solve" / "solve_result.json").read_text())
    assert solve["model"] == "pixel_lightgbm" and solve["cv"]["pixel_lightgbm"] < solve["cv"]["identity"]
    # Graded on the held-back clean scans: far better than the best constant page and than
    # handing the stained scans back.
    answers = pd.read_csv(competition / "private" / "answers.csv")
    submission = pd.read_csv(workspace / "submissions" / "submission.csv")
    assert submission["id"].tolist() == pd.read_csv(competition / "data" / "sampleSubmission.csv")["id"].tolist()
    constant = constant_score(load_competition(competition))
    assert constant is not None and result["test_score"] <= 0.6 * constant, (result["test_score"], constant)
    stained = _stained_score(competition, answers)
    assert result["test_score"] <= 0.6 * stained, (result["test_score"], stained)
    plan = json.loads((workspace / "setup" / "plan.json").read_text())
    assert plan["task_type"] == "pixels" and any("image to image" in n for n in plan["facts"]["notes"])


def _stained_score(competition: Path, answers: pd.DataFrame) -> float:
    """RMSE of submitting the stained test scans themselves."""
    pictures = {p.stem: read_picture(p) for p in (competition / "data" / "test").glob("*.png")}
    stained = values_in_order(pictures, answers["id"].astype(str))
    return float(np.sqrt(np.mean((stained - answers["value"].to_numpy()) ** 2)))
