"""A keypoint competition laid out as Kaggle's facial-keypoint tasks ship it, made here: faces drawn
with PIL (a head, two eyes, a nose, a mouth, each at a random place) whose keypoints are known.

- train.csv: one row per picture, two numeric columns per keypoint (`<part>_x`, `<part>_y`), the
  picture last as one cell of space-separated grey levels; the four main keypoints are on nearly
  every row, the four corner keypoints only on about a third (only those rows are complete);
- test.csv: `ImageId,Image`;
- IdLookupTable.csv: `RowId,ImageId,FeatureName,Location` (Location blank), the (picture,
  coordinate) pairs scored: every coordinate for some pictures, the main ones for the rest;
- SampleSubmission.csv: `RowId,Location`; answers the same, RMSE over the listed rows.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw

SIDE = 32
MAIN = ("left_eye_center", "right_eye_center", "nose_tip", "mouth_center_bottom_lip")
CORNERS = ("left_eye_outer_corner", "right_eye_outer_corner", "mouth_left_corner", "mouth_right_corner")
KEYPOINTS = MAIN + CORNERS
COLUMNS = [f"{k}_{axis}" for k in KEYPOINTS for axis in ("x", "y")]

TOML = """[competition]
id = "{name}"
title = "Face Points"
input_modalities = ["image"]
task_type = "regression"

[grading]
metric = "rmse"
higher_is_better = false
id_column = "RowId"
target_columns = ["Location"]
answers = "private/answers.csv"
"""


def draw_face(rng: np.random.Generator) -> tuple[np.ndarray, dict[str, float]]:
    """A noisy SIDExSIDE grey face, placed and sized at random, and its keypoints' coordinates."""
    image = Image.new("L", (SIDE, SIDE), int(rng.integers(0, 50)))
    pen = ImageDraw.Draw(image)
    cx, cy = (float(v) for v in rng.uniform(SIDE * 0.4, SIDE * 0.6, size=2))
    half = float(rng.uniform(SIDE * 0.22, SIDE * 0.3))  # half the eyes' distance, the face's scale
    skin, dark = int(rng.integers(110, 160)), int(rng.integers(0, 40))
    pen.ellipse((cx - 1.6 * half, cy - 1.9 * half, cx + 1.6 * half, cy + 1.9 * half), fill=skin)
    points = {"left_eye_center": (cx - half, cy - 0.6 * half), "right_eye_center": (cx + half, cy - 0.6 * half),
              "nose_tip": (cx, cy + 0.2 * half), "mouth_center_bottom_lip": (cx, cy + 1.1 * half)}
    eye = max(1.0, 0.3 * half)
    for name in ("left_eye_center", "right_eye_center"):
        x, y = points[name]
        pen.ellipse((x - eye, y - 0.6 * eye, x + eye, y + 0.6 * eye), fill=dark)
    x, y = points["nose_tip"]
    pen.polygon([(x, y - 0.6 * half), (x - 0.25 * half, y), (x + 0.25 * half, y)], fill=skin + 50)
    x, y = points["mouth_center_bottom_lip"]
    pen.ellipse((x - 0.7 * half, y - 0.25 * half, x + 0.7 * half, y), fill=dark + 40)
    points |= {"left_eye_outer_corner": (cx - half - eye, cy - 0.6 * half),
               "right_eye_outer_corner": (cx + half + eye, cy - 0.6 * half),
               "mouth_left_corner": (cx - 0.7 * half, cy + 0.95 * half),
               "mouth_right_corner": (cx + 0.7 * half, cy + 0.95 * half)}
    pixels = np.clip(np.asarray(image, dtype=np.float64) + rng.normal(0, 10, (SIDE, SIDE)), 0, 255)
    coordinates = {f"{k}_{axis}": float(v) for k, (x, y) in points.items() for axis, v in (("x", x), ("y", y))}
    return pixels.astype(np.uint8), coordinates


def _cell(pixels: np.ndarray) -> str:
    return " ".join(str(int(v)) for v in pixels.ravel())


def make_keypoint_lookup_competition(out: Path, n_train: int = 160, n_test: int = 40, seed: int = 0,
                                     complete: float = 0.3) -> Path:
    """The layout above under `out/` (local source: data/, private/answers.csv, competition.toml)."""
    rng = np.random.default_rng(seed)
    faces = [draw_face(rng) for _ in range(n_train + n_test)]
    data, private = out / "data", out / "private"
    data.mkdir(parents=True, exist_ok=True)
    private.mkdir(parents=True, exist_ok=True)
    lines = [",".join(COLUMNS + ["Image"])]
    for pixels, points in faces[:n_train]:
        full = rng.random() < complete
        kept = {c: v for c, v in points.items() if (full or c.rsplit("_", 1)[0] in MAIN) and rng.random() > 0.01}
        lines.append(",".join([f"{kept[c]:.4f}" if c in kept else "" for c in COLUMNS] + [_cell(pixels)]))
    (data / "training.csv").write_text("\n".join(lines) + "\n")
    test = faces[n_train:]
    (data / "test.csv").write_text("ImageId,Image\n" + "".join(f"{i + 1},{_cell(p)}\n" for i, (p, _) in enumerate(test)))
    lookup, answers = ["RowId,ImageId,FeatureName,Location"], ["RowId,Location"]
    for i, (_, points) in enumerate(test):
        asked = COLUMNS if rng.random() < complete else [c for c in COLUMNS if c.rsplit("_", 1)[0] in MAIN]
        for column in asked:
            lookup.append(f"{len(lookup)},{i + 1},{column},")
            answers.append(f"{len(answers)},{points[column]:.4f}")
    (data / "IdLookupTable.csv").write_text("\n".join(lookup) + "\n")
    (data / "SampleSubmission.csv").write_text("RowId,Location\n" + "".join(f"{r},0\n" for r in range(1, len(lookup))))
    (private / "answers.csv").write_text("\n".join(answers) + "\n")
    (out / "description.md").write_text(
        "# Face Points\n\nPredict where the eyes, nose and mouth are on pictures of faces.\n\n"
        "## Evaluation\nSubmissions are scored on the root mean squared error over the listed rows.\n\n"
        "## Data\n- **training.csv**: the coordinates of 8 keypoints, some missing, and the picture in "
        "`Image` as space-separated grey levels, row by row.\n- **test.csv**: `ImageId,Image`.\n"
        "- **IdLookupTable.csv**: which coordinate of which picture each `RowId` asks for.\n"
        "- **SampleSubmission.csv**: `RowId,Location`.\n")
    (out / "competition.toml").write_text(TOML.format(name=out.name))
    return out


def make_class_lookup_competition(out: Path, n_train: int = 90, n_test: int = 30, seed: int = 0) -> Path:
    """A long submission naming classes: `row,pic,asked` pairs (a test picture, a shape), the sample
    `row,prob` the probability that the picture shows that shape; log loss over the pairs."""
    from picture_cell_files import SHAPES, as_cell, draw

    rng = np.random.default_rng(seed)
    labels = rng.permutation(np.arange(n_train + n_test) % len(SHAPES))
    cells = [as_cell(draw(int(y), rng)[0]) for y in labels]
    data, private = out / "data", out / "private"
    data.mkdir(parents=True, exist_ok=True)
    private.mkdir(parents=True, exist_ok=True)
    (data / "train.csv").write_text("shape,pixels\n" + "".join(f"{SHAPES[labels[i]]},{cells[i]}\n" for i in range(n_train)))
    (data / "test.csv").write_text("pic,pixels\n" + "".join(f"p{i},{cells[n_train + i]}\n" for i in range(n_test)))
    pairs, answers = ["row,pic,asked"], ["row,prob"]
    for i in range(n_test):
        for shape in SHAPES:
            pairs.append(f"{len(pairs)},p{i},{shape}")
            answers.append(f"{len(answers)},{int(SHAPES[labels[n_train + i]] == shape)}")
    (data / "pairs.csv").write_text("\n".join(pairs) + "\n")
    (data / "sample_submission.csv").write_text("row,prob\n" + "".join(f"{r},0.5\n" for r in range(1, len(pairs))))
    (private / "answers.csv").write_text("\n".join(answers) + "\n")
    (out / "description.md").write_text("# Shape Pairs\n\nFor each listed picture and shape, the probability that "
                                        "the picture shows that shape.\n\n## Evaluation\nSubmissions are scored by log loss.\n")
    (out / "competition.toml").write_text(
        f'[competition]\nid = "{out.name}"\ntitle = "Shape Pairs"\ninput_modalities = ["image"]\ntask_type = "binary"\n\n'
        '[grading]\nmetric = "logloss"\nhigher_is_better = false\nid_column = "row"\ntarget_columns = ["prob"]\n'
        'answers = "private/answers.csv"\n')
    return out
