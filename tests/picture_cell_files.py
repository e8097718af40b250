"""Competitions whose pictures are written as numbers inside a table cell (as the facial-expression
and facial-keypoint tables ship them), made here: shapes drawn with PIL, each 24x24 picture's grey
levels written as one space-separated `pixels` cell."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw

SIDE = 24
SHAPES = ("circle", "square", "cross")

TOML = """[competition]
id = "{name}"
title = "Shapes As Numbers"
input_modalities = ["image"]
task_type = "{task}"

[grading]
metric = "{metric}"
higher_is_better = {higher}
id_column = "id"
target_columns = [{targets}]
answers = "private/answers.csv"
"""


def draw(shape: int, rng: np.random.Generator) -> tuple[np.ndarray, tuple[float, float]]:
    """A noisy 24x24 grey picture of one shape, its size and place jittered, and its centre."""
    image = Image.new("L", (SIDE, SIDE), int(rng.integers(0, 40)))
    pen = ImageDraw.Draw(image)
    r = int(rng.integers(5, 9))
    cx, cy = (SIDE // 2 + int(v) for v in rng.integers(-2, 3, size=2))
    ink = int(rng.integers(170, 255))
    if shape == 0:
        pen.ellipse((cx - r, cy - r, cx + r, cy + r), outline=ink, width=2)
    elif shape == 1:
        pen.rectangle((cx - r, cy - r, cx + r, cy + r), outline=ink, width=2)
    else:
        pen.line((cx - r, cy - r, cx + r, cy + r), fill=ink, width=2)
        pen.line((cx - r, cy + r, cx + r, cy - r), fill=ink, width=2)
    pixels = np.asarray(image, dtype=np.float64) + rng.normal(0, 12, (SIDE, SIDE))
    return np.clip(pixels, 0, 255).astype(np.uint8), (float(cx), float(cy))


def as_cell(pixels: np.ndarray) -> str:
    return " ".join(str(int(v)) for v in pixels.ravel())


def make_shape_cells_competition(out: Path, n_train: int = 120, n_test: int = 40, seed: int = 0) -> Path:
    """train.csv `id,label,pixels` and test.csv `id,pixels`; the label is the shape drawn."""
    rng = np.random.default_rng(seed)
    n = n_train + n_test
    labels = rng.permutation(np.arange(n) % len(SHAPES))
    cells = [as_cell(draw(int(y), rng)[0]) for y in labels]
    ids = [str(1000 + i) for i in range(n)]
    data, private = out / "data", out / "private"
    data.mkdir(parents=True, exist_ok=True)
    private.mkdir(parents=True, exist_ok=True)
    (data / "train.csv").write_text("id,label,pixels\n" + "".join(
        f"{ids[i]},{SHAPES[labels[i]]},{cells[i]}\n" for i in range(n_train)))
    (data / "test.csv").write_text("id,pixels\n" + "".join(f"{ids[i]},{cells[i]}\n" for i in range(n_train, n)))
    (data / "sample_submission.csv").write_text("id,label\n" + "".join(f"{ids[i]},circle\n" for i in range(n_train, n)))
    (private / "answers.csv").write_text("id,label\n" + "".join(f"{ids[i]},{SHAPES[labels[i]]}\n" for i in range(n_train, n)))
    (out / "description.md").write_text(
        "# Shapes As Numbers\n\nEach picture shows a circle, a square or a cross. Predict which.\n\n"
        "## Evaluation\nSubmissions are scored by classification accuracy.\n\n"
        "## Data\n- **train.csv**: `id,label,pixels`; `pixels` holds the picture's grey levels, "
        "row by row, separated by spaces.\n- **test.csv**: `id,pixels`.\n"
        "- **sample_submission.csv**: every test id with a placeholder label.\n")
    (out / "competition.toml").write_text(TOML.format(name=out.name, task="multiclass", metric="accuracy",
                                                      higher="true", targets='"label"'))
    return out


def make_keypoint_cells_competition(out: Path, n_train: int = 120, n_test: int = 40, seed: int = 0,
                                    missing: float = 0.3) -> Path:
    """train.csv `id,<x>,<y>,pixels` with the shape's centre as numeric targets, each missing on
    a share of the rows (as facial keypoints are); test.csv `id,pixels`; RMSE."""
    rng = np.random.default_rng(seed)
    n = n_train + n_test
    drawn = []
    for _ in range(n):
        pixels = np.clip(rng.normal(20, 12, (SIDE, SIDE)), 0, 255)
        cx, cy = (float(v) for v in rng.integers(5, SIDE - 5, size=2))
        yy, xx = np.mgrid[0:SIDE, 0:SIDE]
        pixels[(xx - cx) ** 2 + (yy - cy) ** 2 <= 9] = 220
        drawn.append((pixels.astype(np.uint8), (cx, cy)))
    ids = [str(1000 + i) for i in range(n)]
    data, private = out / "data", out / "private"
    data.mkdir(parents=True, exist_ok=True)
    private.mkdir(parents=True, exist_ok=True)

    def cell(value: float) -> str:
        return "" if rng.random() < missing else f"{value:.1f}"

    (data / "train.csv").write_text("id,spot_x,spot_y,pixels\n" + "".join(
        f"{ids[i]},{cell(drawn[i][1][0])},{cell(drawn[i][1][1])},{as_cell(drawn[i][0])}\n" for i in range(n_train)))
    (data / "test.csv").write_text("id,pixels\n" + "".join(f"{ids[i]},{as_cell(drawn[i][0])}\n" for i in range(n_train, n)))
    (data / "sample_submission.csv").write_text("id,spot_x,spot_y\n" + "".join(f"{ids[i]},12.0,12.0\n" for i in range(n_train, n)))
    (private / "answers.csv").write_text("id,spot_x,spot_y\n" + "".join(
        f"{ids[i]},{drawn[i][1][0]:.1f},{drawn[i][1][1]:.1f}\n" for i in range(n_train, n)))
    (out / "description.md").write_text(
        "# Spot Finder\n\nEach picture shows one bright spot. Predict where its centre is.\n\n"
        "## Evaluation\nSubmissions are scored by the root mean squared error over both coordinates.\n\n"
        "## Data\n- **train.csv**: `id,spot_x,spot_y,pixels`; some coordinates are missing. `pixels` holds the "
        "picture's grey levels, row by row, separated by spaces.\n- **test.csv**: `id,pixels`.\n")
    (out / "competition.toml").write_text(TOML.format(name=out.name, task="regression", metric="rmse",
                                                      higher="false", targets='"spot_x", "spot_y"'))
    return out
