"""An image-to-image competition made in the test: rendered text with stains, noise and a grey
paper, beside its clean scan; Kaggle's layout (train/, train_cleaned/, test/, a per-pixel sample
submission `<image>_<row>_<col>,value`) and the local grader's files."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from PIL import Image, ImageDraw, ImageFont

WORDS = ("the quick brown fox jumps over a lazy dog while seven wizards quietly box "
         "jackdaws and five boxing judges vex the nymph").split()

DESCRIPTION = """# Denoise the scans

## Description
Optical character recognition works badly on stained, crumpled scans. Remove the noise.

## Evaluation
Submissions are evaluated on the root mean squared error between the cleaned pixel intensities and
the actual grayscale pixel intensities.

## Submission File
Form the submission file by melting each image into a set of pixels, assigning each pixel an id of
image_row_col (e.g. 1_2_1 is image 1, row 2, column 1). Intensity values range from 0 (black) to 1
(white). The file should contain a header and have the following format:

    id,value
    1_1_1,1
    1_2_1,1
    1_3_1,1
    etc.
"""


def _clean_page(rng: np.random.Generator, shape: tuple[int, int]) -> np.ndarray:
    height, width = shape
    page = Image.new("L", (width, height), 255)
    draw = ImageDraw.Draw(page)
    size = max(10, height // 16)  # about sixteen lines a page, as a scanned letter
    font = ImageFont.load_default(size=size)
    for top in range(4, height - size, int(size * 1.4)):
        text = " ".join(rng.choice(WORDS, size=max(8, width // (3 * size))))
        draw.text((3 + int(rng.integers(0, 6)), top), text, fill=int(rng.integers(0, 60)), font=font)
    return np.asarray(page, dtype=np.float32) / 255.0


def _stained(rng: np.random.Generator, clean: np.ndarray) -> np.ndarray:
    """Grey paper, a few soft coffee stains, a crease and sensor noise; the ink stays dark."""
    height, width = clean.shape
    rows, cols = np.mgrid[0:height, 0:width]
    paper = np.full(clean.shape, rng.uniform(0.8, 0.95), dtype=np.float32)
    for _ in range(3):
        cy, cx = rng.uniform(0, height), rng.uniform(0, width)
        radius = rng.uniform(0.1, 0.3) * min(height, width)
        paper -= rng.uniform(0.1, 0.3) * np.exp(-((rows - cy) ** 2 + (cols - cx) ** 2) / (2 * radius**2))
    paper -= 0.15 * (np.abs(cols - rng.uniform(0, width)) < 1.5)  # a crease
    noisy = np.minimum(paper, clean)  # ink stays as dark as printed, the paper goes grey
    noisy += rng.normal(0, 0.04, clean.shape)
    return np.clip(noisy, 0, 1).astype(np.float32)


def _save(picture: np.ndarray, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(np.round(picture * 255).astype(np.uint8)).save(path)


def make_pixel_competition(root: Path, n_train: int = 10, n_test: int = 4, seed: int = 0,
                           shapes: tuple[tuple[int, int], ...] = ((40, 72), (48, 64))) -> Path:
    """The competition folder: description.md, data/, private/answers.csv, competition.toml."""
    rng = np.random.default_rng(seed)
    data = root / "data"
    answers = []
    for index in range(1, n_train + n_test + 1):
        shape = shapes[index % len(shapes)]
        clean = _clean_page(rng, shape)
        noisy = _stained(rng, clean)
        name = f"{index}.png"
        if index <= n_train:
            _save(noisy, data / "train" / name)
            _save(clean, data / "train_cleaned" / name)
        else:
            _save(noisy, data / "test" / name)
            rows, cols = np.indices(shape)
            # Column by column, as Kaggle's own sample lists them (1_1_1, 1_2_1, ...).
            answers.append(pd.DataFrame({
                "id": [f"{index}_{r + 1}_{c + 1}" for r, c in zip(rows.ravel("F"), cols.ravel("F"))],
                "value": np.round(clean.ravel("F"), 6)}))
    truth = pd.concat(answers, ignore_index=True)
    truth.assign(value=1).to_csv(data / "sampleSubmission.csv", index=False)
    (root / "private").mkdir(parents=True, exist_ok=True)
    truth.to_csv(root / "private" / "answers.csv", index=False)
    (root / "description.md").write_text(DESCRIPTION, encoding="utf-8")
    (root / "competition.toml").write_text(
        '[competition]\nid = "stained-scans"\ninput_modalities = ["image"]\ntask_type = "regression"\n\n'
        '[grading]\nmetric = "rmse"\nhigher_is_better = false\nid_column = "id"\ntarget_columns = ["value"]\n'
        'answers = "private/answers.csv"\n', encoding="utf-8")
    return root
