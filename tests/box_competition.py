"""Detection competitions made in the test: the bright blobs of `mask_competition` on textured
ground, their bounding boxes, in Kaggle's two usual layouts, and the local grader's files.

* `make_box_cell_competition` (wheat-style): `train/`, `test/`, a `train.csv` of one row per box
  with the box in one cell (`[x, y, w, h]`) beside the picture's size, listing only pictures with
  boxes, and a sample `image_id,PredictionString` with a placeholder box.
* `make_box_columns_competition` (pneumonia-style): one row per box in four columns
  (`x, y, width, height`), a blank row for a picture without any, DICOM-free PNGs.

Both are scored by mean average precision over IoU thresholds, predictions ordered by confidence.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from scipy import ndimage

from mask_competition import _names, _picture, _save

PAGE = """# Spot the blobs

## Description
Each picture shows a patch of ground with a few bright blobs. Find every blob and draw a box around it.

## Evaluation
This competition is evaluated on the mean average precision at different intersection over union
(IoU) thresholds. The IoU of a set of predicted bounding boxes and ground truth bounding boxes is
the area of their intersection over the area of their union. The metric sweeps over IoU thresholds
from {low} to 0.75 with a step size of 0.05. Submitted boxes are evaluated in order of their
confidence levels.

## Submission File
Submit a space-delimited set of bounding boxes for each picture, each as `confidence x y width height`
(x and y the top-left corner, in pixels):

    {header}
    {example}
"""


def _boxes(labels: np.ndarray) -> list[tuple[int, int, int, int]]:
    found = [s for s in ndimage.find_objects(labels) if s is not None]
    return [(s[1].start, s[0].start, s[1].stop - s[1].start, s[0].stop - s[0].start) for s in found]


def _answer(boxes: list[tuple[int, int, int, int]]) -> str:
    return " ".join(f"{x} {y} {w} {h}" for x, y, w, h in boxes)


def _toml(root: Path, name: str, id_column: str) -> None:
    (root / "competition.toml").write_text(
        f'[competition]\nid = "{name}"\ninput_modalities = ["image"]\ntask_type = "detection"\n\n'
        f'[grading]\nmetric = "map_boxes"\nhigher_is_better = true\nid_column = "{id_column}"\n'
        f'target_columns = ["PredictionString"]\nanswers = "private/answers.csv"\n', encoding="utf-8")


def _pictures(root: Path, n_train: int, n_test: int, seed: int, empty_share: float, shape: tuple[int, int],
              train_dir: str, test_dir: str) -> tuple[list[tuple[str, list]], list[dict]]:
    """Saves the pictures; ([(train name, boxes)], [answers rows])."""
    rng = np.random.default_rng(seed)
    train, answers = [], []
    for index, name in enumerate(_names(rng, n_train + n_test)):
        picture, labels = _picture(rng, shape, n_objects=0 if rng.random() < empty_share else int(rng.integers(1, 5)))
        boxes = _boxes(labels)
        if index < n_train:
            _save(picture, root / "data" / train_dir / f"{name}.png")
            train.append((name, boxes))
        else:
            _save(picture, root / "data" / test_dir / f"{name}.png")
            answers.append({"image_id": name, "PredictionString": _answer(boxes)})
    return train, answers


def _finish(root: Path, answers: list[dict], id_column: str, placeholder: str, low: str, name: str) -> Path:
    truth = pd.DataFrame(answers).rename(columns={"image_id": id_column})
    truth.assign(PredictionString=placeholder).to_csv(root / "data" / "sample_submission.csv", index=False)
    (root / "private").mkdir(parents=True, exist_ok=True)
    truth.to_csv(root / "private" / "answers.csv", index=False)
    page = PAGE.format(low=low, header=f"{id_column},PredictionString", example=f"a3f0c9e2d1,{placeholder}")
    (root / "description.md").write_text(page, encoding="utf-8")
    _toml(root, name, id_column)
    return root


def make_box_cell_competition(root: Path, n_train: int = 40, n_test: int = 10, seed: int = 3,
                              shape: tuple[int, int] = (64, 64)) -> Path:
    train, answers = _pictures(root, n_train, n_test, seed, 0.2, shape, "train", "test")
    rows = [{"image_id": name, "width": shape[1], "height": shape[0], "bbox": f"[{x}.0, {y}.0, {w}.0, {h}.0]",
             "source": "field"} for name, boxes in train for x, y, w, h in boxes]
    pd.DataFrame(rows).to_csv(root / "data" / "train.csv", index=False)
    return _finish(root, answers, "image_id", "1.0 0 0 50 50", "0.5", "blob-boxes")


def make_box_columns_competition(root: Path, n_train: int = 40, n_test: int = 10, seed: int = 4,
                                 shape: tuple[int, int] = (64, 64)) -> Path:
    train, answers = _pictures(root, n_train, n_test, seed, 0.3, shape, "stage_1_train_images", "stage_1_test_images")
    rows = []
    for name, boxes in train:
        rows += [{"patientId": name, "x": x, "y": y, "width": w, "height": h, "Target": 1} for x, y, w, h in boxes]
        if not boxes:
            rows.append({"patientId": name, "x": None, "y": None, "width": None, "height": None, "Target": 0})
    pd.DataFrame(rows).to_csv(root / "data" / "stage_1_train_labels.csv", index=False)
    return _finish(root, answers, "patientId", "0.5 0 0 100 100", "0.4", "blob-boxes-columns")
