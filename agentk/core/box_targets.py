"""The box contract: a mask target (agentk.core.mask_targets) whose objects are boxes, submitted as
one `conf x y w h ...` cell per picture (agentk.core.boxes).

A training picture's boxes are kept as a labelled mask of filled rectangles (what the pixel model
learns from, like any mask) together with the exact boxes, since overlapping rectangles in a
labelled mask lose their extents. A predicted picture keeps its boxes and their confidences the
same way. The setup's generated code, the checks and the solver all read and write boxes here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd

from agentk.core.boxes import Boxes, format_boxes
from agentk.core.mask_targets import LABELS_SUFFIX, picture_keys, save_labels
from agentk.core.masks import is_blank

BOX_OUTPUT = "boxes"  # target_info's `output` for a mask target submitted as boxes
BoxFormat = Literal["xywh", "xyxy"]
_NUMBER = re.compile(r"-?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?")


def cell_boxes(value: Any, box_format: BoxFormat = "xywh") -> np.ndarray:
    """(n, 4) xywh boxes of a training cell: `[x, y, w, h]`, `x y w h ...` (groups of four), or
    blank for none; `xyxy` cells hold corners instead of sizes."""
    if is_blank(value):
        return np.zeros((0, 4))
    numbers = np.array([float(n) for n in _NUMBER.findall(str(value))])
    if len(numbers) % 4:
        raise ValueError(f"box cell has {len(numbers)} numbers, not groups of four: {str(value)[:60]!r}")
    return to_xywh(numbers.reshape(-1, 4), box_format)


def row_boxes(cells: Sequence[Any], box_format: BoxFormat = "xywh") -> np.ndarray:
    """(n, 4) xywh boxes of one training row: one cell of boxes, or four number cells (a blank
    among them: no box)."""
    if len(cells) == 1:
        return cell_boxes(cells[0], box_format)
    if any(c is None or str(c).strip().lower() in ("", "nan") for c in cells):
        return np.zeros((0, 4))
    return to_xywh(np.array([float(c) for c in cells]), box_format)


def to_xywh(boxes: np.ndarray, box_format: BoxFormat) -> np.ndarray:
    boxes = np.asarray(boxes, dtype=float).reshape(-1, 4)
    if box_format == "xyxy":
        boxes = np.column_stack([boxes[:, 0], boxes[:, 1], boxes[:, 2] - boxes[:, 0], boxes[:, 3] - boxes[:, 1]])
    if (boxes[:, 2:] < 0).any():
        raise ValueError("a box has a negative width or height")
    return boxes


def rectangles(xywh: np.ndarray, shape: tuple[int, int], shrink: float = 1.0) -> np.ndarray:
    """A labelled mask (int32) of the boxes filled in, object k the k-th box (later ones on top);
    `shrink` keeps each box's central share (objects packed side by side stay apart)."""
    labels = np.zeros(shape, dtype=np.int32)
    for k, (x, y, w, h) in enumerate(np.asarray(xywh, dtype=float).reshape(-1, 4), start=1):
        cx, cy, hw, hh = x + w / 2, y + h / 2, w * shrink / 2, h * shrink / 2
        # The pixels whose centres lie in the (shrunk) box.
        r0, r1 = int(np.ceil(cy - hh - 0.5)), int(np.ceil(cy + hh - 0.5))
        c0, c1 = int(np.ceil(cx - hw - 0.5)), int(np.ceil(cx + hw - 0.5))
        labels[max(r0, 0):max(min(r1, shape[0]), 0), max(c0, 0):max(min(c1, shape[1]), 0)] = k
    return labels


def save_boxes(xywh: np.ndarray, shape: tuple[int, int], path: Path, scores: np.ndarray | None = None) -> None:
    """A picture's boxes as a labelled mask of rectangles plus the exact boxes (and confidences)."""
    xywh = np.asarray(xywh, dtype=np.float32).reshape(-1, 4)
    kept = np.ones(len(xywh)) if scores is None else np.asarray(scores, dtype=np.float32)
    save_labels(rectangles(xywh, shape), path, boxes=xywh, scores=kept)


def read_boxes(path: str | Path) -> Boxes:
    """The boxes a saved picture holds; a labelled mask saved without them gives its objects'
    bounding boxes, each with confidence 1."""
    from scipy import ndimage

    from agentk.core.mask_targets import read_labels

    path = Path(path)
    if path.suffix.lower() == LABELS_SUFFIX:
        with np.load(path) as stored:
            if "boxes" in stored:
                xywh = stored["boxes"].astype(float).reshape(-1, 4)
                return Boxes(stored["scores"].astype(float), xywh)
    labels = read_labels(path)
    found = [s for s in ndimage.find_objects(labels) if s is not None]
    xywh = np.array([[s[1].start, s[0].start, s[1].stop - s[1].start, s[0].stop - s[0].start] for s in found],
                    dtype=float).reshape(-1, 4)
    return Boxes(np.ones(len(xywh)), xywh)


def box_submission(predictions: Mapping[str, Path], sample_ids: Sequence[str], id_column: str,
                   value_column: str, empty: str = "") -> pd.DataFrame:
    """The submission: the sample's ids in its order, each picture's boxes in one cell, most
    confident first (`empty` as the sample writes a picture without any)."""
    values = []
    for key in picture_keys(sample_ids, set(predictions)):
        boxes = read_boxes(predictions[key])
        values.append(format_boxes(boxes.scores, boxes.xywh) if len(boxes) else empty)
    return pd.DataFrame({id_column: list(sample_ids), value_column: values})


def score_boxes(metric: str, truth: Sequence[Boxes], predicted: Sequence[Boxes],
                thresholds: Sequence[float] | None = None) -> float:
    """The registry's boxes `metric` (mean average precision over IoU thresholds), picture by picture."""
    from agentk.core.metrics import BOX_IOU_THRESHOLDS, get_metric
    from agentk.core.metrics.spatial import mean_box_precision

    if get_metric(metric).kind != "boxes":
        raise ValueError(f"metric {metric} does not score boxes")
    return mean_box_precision(truth, predicted, tuple(thresholds or BOX_IOU_THRESHOLDS))


def score_box_frames(metric: str, y_true: pd.DataFrame, y_pred: pd.DataFrame, column: str, setup_dir: Path,
                     thresholds: Sequence[float] | None = None) -> float:
    """`metric` over the truth's boxes and the prediction's, matched by id (paths relative to setup/)."""
    from agentk.core.pixels import resolve

    truth = y_true.assign(id=y_true["id"].astype(str)).drop_duplicates("id").set_index("id")
    predicted = y_pred.assign(id=y_pred["id"].astype(str)).drop_duplicates("id").set_index("id")
    ids = [i for i in predicted.index if i in truth.index]
    if not ids:
        raise ValueError("no prediction id is in the truth")
    return score_boxes(metric, [read_boxes(resolve(setup_dir, truth.loc[i, column])) for i in ids],
                       [read_boxes(resolve(setup_dir, predicted.loc[i, column])) for i in ids], thresholds)
