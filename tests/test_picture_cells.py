"""Pictures written as numbers in a table cell (perception/picture_cells.py): recognised by
structure (N grey levels per cell, N a square or three squares), each cell written once as a
`.npy` read as the image input and never as text; and `agentk run` end to end on shapes drawn with
PIL and written as a `pixels` column, graded above the majority class."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from agentk.bench.baselines import constant_score
from agentk.core.pictures import load_picture
from agentk.core.records.workspace import Workspace
from agentk.sources import Competition, load_competition
from picture_cell_files import SIDE, as_cell, draw, make_keypoint_cells_competition, make_shape_cells_competition
from setup_pipeline.expert.inspect import inspect_competition
from setup_pipeline.perception.picture_cells import find_picture_cells, write_picture_cells


def _frame(cells: list[str], **other: list[str]) -> pd.DataFrame:
    return pd.DataFrame({"pixels": cells, **other}, dtype=str)


def test_grey_colour_and_fraction_cells_are_pictures() -> None:
    rng = np.random.default_rng(0)
    grey = [as_cell(draw(i % 3, rng)[0]) for i in range(12)]
    found = find_picture_cells(_frame(grey), _frame(grey[:4]), set())
    assert [(c.column, c.height, c.width, c.channels, c.eight_bit) for c in found] == [("pixels", SIDE, SIDE, 1, True)]
    fractions = [" ".join(f"{v / 255:.4f}" for v in draw(i % 3, rng)[0].ravel()) for i in range(6)]
    assert not find_picture_cells(_frame(fractions), _frame(fractions), set())[0].eight_bit
    # Colour written plane by plane (CIFAR's order): smooth only when read as planes.
    planes = [np.stack([draw(i % 3, rng)[0]] * 3) for i in range(6)]
    colour = [" ".join(str(int(v)) for v in p.ravel()) for p in planes]
    (cells,) = find_picture_cells(_frame(colour), _frame(colour), set())
    assert (cells.channels, cells.planar) == (3, True)


def test_what_is_no_picture() -> None:
    sentences = ["the quick brown fox jumps over the lazy dog " * 20] * 6
    not_square = [" ".join(["7"] * 600)] * 6
    too_bright = [" ".join(["300"] * 576)] * 6
    ragged = [" ".join(["7"] * (576 if i % 2 else 400)) for i in range(6)]
    for cells in (sentences, not_square, too_bright, ragged, [" ".join(["7"] * 575 + ["x"])] * 6):
        assert find_picture_cells(_frame(cells), _frame(cells), set()) == []
    good = [" ".join(["7"] * 576)] * 6
    assert find_picture_cells(_frame(good), _frame(good), {"pixels"}) == []  # a key or an answer
    assert find_picture_cells(_frame(good), pd.DataFrame({"other": good}), set()) == []  # not in test


def test_cells_are_written_one_picture_per_row(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    pictures = [draw(i % 3, rng)[0] for i in range(5)]
    cells = [as_cell(p) for p in pictures] + ["", "5 6 x"]
    (found,) = find_picture_cells(_frame(cells[:5]), _frame(cells[:5]), set())
    folder, bad = write_picture_cells(_frame(cells)["pixels"], found, tmp_path, "train")
    assert bad == 2 and folder.name == "pixels_train"
    np.testing.assert_array_equal(np.load(folder / "3.npy"), pictures[3])
    assert np.load(folder / "5.npy").max() == np.load(folder / "6.npy").max() == 0  # no picture: black
    np.testing.assert_allclose(load_picture(folder / "0.npy").pixels[:, :, 0], pictures[0] / 255, atol=1e-6)
    assert write_picture_cells(_frame(cells)["pixels"], found, tmp_path, "train") == (folder, 2)  # done once


def test_inspection_reads_the_column_as_pictures_not_text(tmp_path: Path) -> None:
    source = make_shape_cells_competition(tmp_path / "shapes", n_train=30, n_test=10)
    workspace = Workspace(tmp_path / "ws")
    workspace.create()
    load_competition(source).prepare(workspace.raw)
    facts = inspect_competition(workspace.raw)
    assert facts.input_modalities == ["image"] and facts.text_columns == [] and facts.tabular_columns == []
    assert facts.image is not None and facts.image.stack_dirs == {
        "train": "../setup/pictures/pixels_train", "test": "../setup/pictures/pixels_test"}
    assert "pixels" in facts.dropped_columns
    assert any("24x24 grey pictures written as numbers" in n for n in facts.notes)
    assert len(list((workspace.setup / "pictures" / "pixels_test").glob("*.npy"))) == 10


def _run_valid(source: Path, root: Path) -> tuple[Competition, Path, dict]:
    """`agentk run` at 10 s, 2 folds: a valid submission, every setup stage passed."""
    proc = subprocess.run([sys.executable, "-m", "agentk.cli", "run", str(source), "--workspace-root", str(root / "ws"),
                           "--time-budget", "10", "--folds", "2", "--json"],
                          cwd=root, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    competition = load_competition(source)
    workspace = root / "ws" / competition.id
    result = json.loads((workspace / "result.json").read_text())
    assert result["valid_submission"] is True
    assert all(stage["passed"] for stage in result["setup"].values()), result["setup"]
    return competition, workspace, result


@pytest.mark.integration
def test_shape_cells_competition_end_to_end(tmp_path: Path) -> None:
    competition, workspace, result = _run_valid(make_shape_cells_competition(tmp_path / "shapes"), tmp_path)
    assert all(meta["passed"] for meta in result["meta"].values()), result["meta"]
    plan = json.loads((workspace / "setup" / "plan.json").read_text())
    assert any("column 'pixels': 24x24 grey pictures" in n for n in plan["facts"]["notes"])
    assert plan["facts"]["text_columns"] == [] and plan["facts"]["input_modalities"] == ["image"]
    constant = constant_score(competition)
    assert constant is not None and result["test_score"] is not None
    print(f"{competition.id}: test {result['test_score']:.3f}, majority {constant:.3f}")  # -s shows the figures
    assert result["test_score"] >= constant + 0.2, (result["test_score"], constant)


@pytest.mark.integration
def test_keypoint_cells_competition_end_to_end(tmp_path: Path) -> None:
    """Numeric targets (a spot's coordinates) some of them missing, the picture in a `pixels` cell."""
    competition, _, result = _run_valid(make_keypoint_cells_competition(tmp_path / "spots"), tmp_path)
    constant = constant_score(competition)
    assert constant is not None and result["test_score"] is not None
    print(f"{competition.id}: test RMSE {result['test_score']:.3f}, constant {constant:.3f}")
    assert result["test_score"] <= 0.5 * constant, (result["test_score"], constant)
