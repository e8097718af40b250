"""Segmentation competitions of masks per picture and class, made in the test: bright discs, dark
squares and striped bands on a textured ground, each class in some pictures only, in Kaggle's
layouts of such tables:

* "joined" (cloud-style): `train.csv` and the sample `Image_Label,EncodedPixels`, ids
  `<picture file>_<class>`, every (picture, class) a row, blank for none; graded by mean Dice over
  the pairs.
* "columns" (steel-style): `train.csv` `ImageId,ClassId,EncodedPixels` listing only the pairs with
  a mask, classes numbered from 1, and a sample `ImageId_ClassId,EncodedPixels` (`sample="joined"`)
  or `ImageId,EncodedPixels,ClassId` (`sample="columns"`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from scipy import ndimage

from agentk.core.masks import rle_encode
from mask_competition import _background, _names, _save, _toml

CLASS_PAGE = """# Patterns in the sky

## Description
Each picture may hold discs, squares and stripes. Segment each kind of pattern separately.

## Evaluation
This competition is evaluated on the mean Dice coefficient over every (image, label) pair. An empty
prediction for an empty mask scores 1.

## Submission File
The masks are run-length encoded, pixels numbered from top to bottom, then left to right. Submit one
row per image and label:

    Image_Label,EncodedPixels
    002f507.jpg_Disc,1 1
"""

NAMES = ("Disc", "Square", "Stripe")


def _shape(rng: np.random.Generator, kind: int, shape: tuple[int, int], taken: np.ndarray) -> np.ndarray | None:
    rows, cols = np.indices(shape)
    for _ in range(20):
        cy, cx, size = rng.uniform(10, shape[0] - 10), rng.uniform(10, shape[1] - 10), rng.uniform(5, 9)
        if kind == 0:
            inside = (rows - cy) ** 2 + (cols - cx) ** 2 <= size ** 2
        elif kind == 1:
            inside = (np.abs(rows - cy) <= size) & (np.abs(cols - cx) <= size)
        else:
            inside = (np.abs(rows - cy) <= size * 0.8) & (cols >= 2) & (cols < shape[1] - 2)
        if not (ndimage.binary_dilation(inside, iterations=2) & taken).any():
            return inside
    return None


def _picture(rng: np.random.Generator, shape: tuple[int, int]) -> tuple[np.ndarray, list[np.ndarray]]:
    """(picture 0..1, one boolean mask per class); each class present in about 60% of pictures."""
    picture = _background(rng, shape)
    taken = np.zeros(shape, bool)
    masks = []
    rows = np.indices(shape)[0]
    for kind in range(len(NAMES)):
        inside = _shape(rng, kind, shape, taken) if rng.random() < 0.6 else None
        mask = np.zeros(shape, bool) if inside is None else inside
        if kind == 0:
            picture = picture + mask * 0.35
        elif kind == 1:
            picture = picture - mask * 0.25
        else:
            picture = picture + mask * 0.25 * (rows % 4 < 2)
        taken |= mask
        masks.append(mask)
    picture = ndimage.gaussian_filter(picture, 0.7) + rng.normal(0, 0.04, shape)
    return np.clip(picture, 0, 1), masks


def make_class_mask_competition(root: Path, n_train: int = 30, n_test: int = 10, seed: int = 0,
                                style: str = "joined", sample: str = "joined") -> Path:
    rng = np.random.default_rng(seed)
    data = root / "data"
    train_rows, answers = [], []
    numbered = style == "columns"
    for index, name in enumerate(_names(rng, n_train + n_test)):
        picture, masks = _picture(rng, (64, 64))
        file = f"{name}.png"
        labels = [str(k) for k in range(1, len(NAMES) + 1)] if numbered else list(NAMES)
        if index < n_train:
            _save(picture, data / "train_images" / file)
            for label, mask in zip(labels, masks):
                if numbered and mask.any():
                    train_rows.append({"ImageId": file, "ClassId": label, "EncodedPixels": rle_encode(mask)})
                elif not numbered:
                    train_rows.append({"Image_Label": f"{file}_{label}", "EncodedPixels": rle_encode(mask)})
        else:
            _save(picture, data / "test_images" / file)
            answers += [{"ImageId": file, "ClassId": label, "EncodedPixels": rle_encode(mask)}
                        for label, mask in zip(labels, masks)]
    pd.DataFrame(train_rows).to_csv(data / "train.csv", index=False)
    truth = pd.DataFrame(answers)
    if sample == "joined":
        id_column = "Image_Label" if not numbered else "ImageId_ClassId"
        truth = pd.DataFrame({id_column: truth["ImageId"] + "_" + truth["ClassId"], "EncodedPixels": truth["EncodedPixels"]})
    else:
        id_column = "ImageId"
        truth = truth[["ImageId", "EncodedPixels", "ClassId"]]
    truth.assign(EncodedPixels="1 1").to_csv(data / "sample_submission.csv", index=False)
    (root / "private").mkdir(parents=True, exist_ok=True)
    truth.to_csv(root / "private" / "answers.csv", index=False)
    (root / "description.md").write_text(CLASS_PAGE, encoding="utf-8")
    _toml(root, "sky-patterns", "dice", id_column, "EncodedPixels")
    return root
