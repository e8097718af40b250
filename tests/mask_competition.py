"""Segmentation competitions made in the test: bright ellipses and blobs with noise on a textured
background, their masks, in Kaggle's two layouts, and the local grader's files.

* `make_mask_files_competition`: masks as pictures beside the training pictures by name
  (`train/images/x.png`, `train/masks/x.png`, `test/images/`), a sample `id,rle_mask` with a
  placeholder, scored by Dice (one mask per picture).
* `make_rle_table_competition`: masks as run-length strings in `train.csv` (`ImageId,EncodedPixels`,
  one row per object, blank for none, ids with the extension), a sample writing no mask as -1,
  scored by mean average precision over IoU thresholds (one row per object).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from PIL import Image
from scipy import ndimage

from agentk.core.masks import rle_encode

DICE_PAGE = """# Find the deposits

## Description
Each picture shows a patch of ground; some hold a bright deposit. Segment it.

## Evaluation
This competition is evaluated on the mean Dice coefficient. The Dice coefficient compares the
pixel-wise agreement between a predicted segmentation mask and its ground truth; an empty
prediction for an empty mask scores 1.

## Submission File
To reduce the submission size, the masks use run-length encoding on the pixel values: pairs of
values that contain a start position and a run length. The pixels are one-indexed and numbered
from top to bottom, then left to right. Submit one row per picture:

    id,rle_mask
    3e06571ef3,1 1
"""

MAP_PAGE = """# Count the cells

## Description
Each picture shows a few bright cells on a busy background. Find every cell.

## Evaluation
This competition is evaluated on the mean average precision at different intersection over union
(IoU) thresholds. The IoU of a proposed set of object pixels and a set of true object pixels is
the size of their intersection over the size of their union. The threshold values range from 0.5
to 0.95 with a step size of 0.05. At each threshold a true positive is a predicted object matching
a true object with an IoU above the threshold.

## Submission File
Each predicted object is a row, its pixels run-length encoded (pixels numbered from top to bottom,
then left to right). A picture without objects takes one row with -1:

    ImageId,EncodedPixels
    0c2550a23b.png,-1
"""


def _background(rng: np.random.Generator, shape: tuple[int, int]) -> np.ndarray:
    """A textured ground: smooth clouds, a gradient and fine grain."""
    clouds = ndimage.gaussian_filter(rng.normal(0, 1, shape), 4)
    clouds = clouds / (np.abs(clouds).max() + 1e-9)
    rows = np.linspace(0, 1, shape[0])[:, None]
    return 0.35 + 0.12 * clouds + 0.1 * rows * rng.uniform(-1, 1)


def _object(rng: np.random.Generator, shape: tuple[int, int], taken: np.ndarray) -> np.ndarray | None:
    """An ellipse or a lumpy blob that does not touch `taken`."""
    height, width = shape
    rows, cols = np.indices(shape)
    for _ in range(20):
        cy, cx = rng.uniform(6, height - 6), rng.uniform(6, width - 6)
        a, b = rng.uniform(3, 9), rng.uniform(3, 9)
        angle = rng.uniform(0, np.pi)
        y, x = rows - cy, cols - cx
        u, v = x * np.cos(angle) + y * np.sin(angle), -x * np.sin(angle) + y * np.cos(angle)
        inside = (u / a) ** 2 + (v / b) ** 2 <= 1
        if rng.random() < 0.4:  # a blob: the ellipse made lumpy
            lumps = ndimage.gaussian_filter(rng.normal(0, 1, shape), 2) > 0.3
            inside = ndimage.binary_closing(inside | (ndimage.binary_dilation(inside, iterations=3) & lumps))
        if inside.sum() >= 12 and not (ndimage.binary_dilation(inside, iterations=2) & taken).any():
            return inside
    return None


def _picture(rng: np.random.Generator, shape: tuple[int, int], n_objects: int) -> tuple[np.ndarray, np.ndarray]:
    """(picture 0..1, labelled objects)."""
    labels = np.zeros(shape, dtype=np.int32)
    picture = _background(rng, shape)
    for _ in range(n_objects):
        inside = _object(rng, shape, labels > 0)
        if inside is None:
            continue
        labels[inside] = labels.max() + 1
        picture = picture + inside * rng.uniform(0.2, 0.35)
    # A few bright specks that are not objects, then blur and sensor noise.
    for _ in range(int(rng.integers(0, 4))):
        y, x = rng.integers(0, shape[0]), rng.integers(0, shape[1])
        picture[max(0, y - 1):y + 1, max(0, x - 1):x + 1] += 0.3
    picture = ndimage.gaussian_filter(picture, 0.8) + rng.normal(0, 0.05, shape)
    return np.clip(picture, 0, 1), labels


def _save(picture: np.ndarray, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(np.round(np.clip(picture, 0, 1) * 255).astype(np.uint8)).save(path)


def _names(rng: np.random.Generator, n: int) -> list[str]:
    return [f"{rng.integers(0, 16 ** 10):010x}" for _ in range(n)]


def _toml(root: Path, name: str, metric: str, id_column: str, column: str) -> None:
    (root / "competition.toml").write_text(
        f'[competition]\nid = "{name}"\ninput_modalities = ["image"]\ntask_type = "segmentation"\n\n'
        f'[grading]\nmetric = "{metric}"\nhigher_is_better = true\nid_column = "{id_column}"\n'
        f'target_columns = ["{column}"]\nanswers = "private/answers.csv"\n', encoding="utf-8")


def make_mask_files_competition(root: Path, n_train: int = 40, n_test: int = 10, seed: int = 0,
                                shapes: tuple[tuple[int, int], ...] = ((64, 64), (48, 80))) -> Path:
    """TGS-style: one mask per picture, a third of the pictures empty, scored by Dice."""
    rng = np.random.default_rng(seed)
    data = root / "data"
    answers = []
    for index, name in enumerate(_names(rng, n_train + n_test)):
        shape = shapes[index % len(shapes)]
        picture, labels = _picture(rng, shape, n_objects=0 if rng.random() < 0.3 else int(rng.integers(1, 3)))
        mask = (labels > 0).astype(np.float32)
        if index < n_train:
            _save(picture, data / "train" / "images" / f"{name}.png")
            _save(mask, data / "train" / "masks" / f"{name}.png")
        else:
            _save(picture, data / "test" / "images" / f"{name}.png")
            answers.append({"id": name, "rle_mask": rle_encode(mask)})
    truth = pd.DataFrame(answers)
    truth.assign(rle_mask="1 1").to_csv(data / "sample_submission.csv", index=False)
    (root / "private").mkdir(parents=True, exist_ok=True)
    truth.to_csv(root / "private" / "answers.csv", index=False)
    (root / "description.md").write_text(DICE_PAGE, encoding="utf-8")
    _toml(root, "ground-deposits", "dice", "id", "rle_mask")
    return root


def make_rle_table_competition(root: Path, n_train: int = 40, n_test: int = 10, seed: int = 1,
                               shapes: tuple[tuple[int, int], ...] = ((64, 64), (56, 72)), order: str = "F") -> Path:
    """Airbus/DSB-style: a table of one row per object (blank for none), scored by mAP over IoU;
    pixels numbered in `order` ("C": along the rows first)."""
    rng = np.random.default_rng(seed)
    data = root / "data"
    train_rows, answers, sample = [], [], []
    for index, name in enumerate(_names(rng, n_train + n_test)):
        shape = shapes[index % len(shapes)]
        picture, labels = _picture(rng, shape, n_objects=0 if rng.random() < 0.2 else int(rng.integers(1, 5)))
        file = f"{name}.png"
        strings = [rle_encode(labels == k, order) for k in range(1, labels.max() + 1)] or [""]
        if index < n_train:
            _save(picture, data / "train_images" / file)
            train_rows += [{"ImageId": file, "EncodedPixels": s} for s in strings]
        else:
            _save(picture, data / "test_images" / file)
            answers += [{"ImageId": file, "EncodedPixels": s} for s in strings]
            sample.append({"ImageId": file, "EncodedPixels": "-1"})
    pd.DataFrame(train_rows).to_csv(data / "train.csv", index=False)
    pd.DataFrame(sample).to_csv(data / "sample_submission.csv", index=False)
    (root / "private").mkdir(parents=True, exist_ok=True)
    pd.DataFrame(answers).to_csv(root / "private" / "answers.csv", index=False)
    (root / "description.md").write_text(MAP_PAGE, encoding="utf-8")
    _toml(root, "bright-cells", "map_iou", "ImageId", "EncodedPixels")
    return root
