"""Metrics of per-row image outputs: run-length encoded masks and confidence-ordered boxes.

Every function keeps the registry's signature `fn(y_true, y_pred) -> float`; a row is one image
(or one image + class pair), aligned on both sides. A row's cell is one encoded string, blank/NaN
for nothing, or a sequence of strings (the rows a file gives one image, see `group_by_id`).

* ``mask`` kind (`dice`, `iou`): a row's strings are one mask, their union. Both read the masks as
  pixel intervals, so they need no image size and are exact whatever the pixel order ("F"/"C").
  Both empty scores 1, as Kaggle defines it.
* ``instances`` kind (`map_iou`): a row's strings are its objects, one mask each
  (data-science-bowl-2018).
* ``boxes`` kind (`map_boxes`): a row's strings hold `conf x y w h ...` boxes (rsna-pneumonia,
  global-wheat); an answer string may leave out the confidences.

The encoding (absolute 1-indexed, or siim's relative offsets; see `agentk.core.masks`) is read
from the answers (`is_relative`), and every string, true or predicted, is read that way.
Absolute predicted runs must be sorted and disjoint, as Kaggle checks.

The two mean-average-precision metrics score an image, for each IoU threshold t, as
TP / (TP + FP + FN), a prediction matching the unmatched true object it overlaps most with
IoU > t, predictions taken most confident first (masks: best overlap first); the image's score is
the mean over thresholds and the metric the mean over images. As in rsna-pneumonia's metric, an
image with neither true nor predicted objects is left out of the mean, an image with predictions
but no true object scores 0, and a prediction with every image left out scores 1.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from agentk.core.boxes import Boxes, box_iou, parse_boxes
from agentk.core.masks import Runs, is_blank, rle_runs, union_length

# data-science-bowl-2018's thresholds (0.5 to 0.95 by 0.05), and global-wheat's for boxes (to
# 0.75); rsna-pneumonia's start at 0.4: pass `thresholds` for a page that says otherwise.
MASK_IOU_THRESHOLDS: tuple[float, ...] = tuple(round(0.5 + 0.05 * i, 2) for i in range(10))
BOX_IOU_THRESHOLDS: tuple[float, ...] = tuple(round(0.5 + 0.05 * i, 2) for i in range(6))

# "The threshold values range from 0.4 to 0.75 with a step size of 0.05" (Kaggle's wording).
_NUMBER = r"(0?\.\d+|1(?:\.0+)?)"
_RANGE_RE = re.compile(rf"\bthresholds?\b[^.]{{0,80}}?(?:\b(?:range|ranging|go|going|vary|varying|run|running)\s+)?\bfrom\s+"
                       rf"{_NUMBER}\s+to\s+{_NUMBER}\s*,?\s*(?:with\s+|in\s+|by\s+)?(?:a\s+)?"
                       rf"(?:step\s+size|steps?|increments?)\s+(?:of\s+)?{_NUMBER}", re.IGNORECASE)


def stated_thresholds(description: str) -> tuple[float, ...] | None:
    """The IoU thresholds a page states as a range ("range from 0.5 to 0.95 with a step size of
    0.05"), for `map_iou` / `map_boxes`'s `thresholds`; None when it states none."""
    match = _RANGE_RE.search(description)
    if match is None:
        return None
    low, high, step = (float(g) for g in match.groups())
    if not (0 < step and 0 <= low <= high <= 1):
        return None
    return tuple(round(low + step * i, 4) for i in range(int(round((high - low) / step)) + 1))


def row_strings(cell: Any) -> list[str]:
    """The non-blank encoded strings of one row's cell."""
    if isinstance(cell, (list, tuple, np.ndarray)):
        return [str(v) for v in cell if not is_blank(v)]
    return [] if is_blank(cell) else [str(cell)]


def _rows(y_true: Any, y_pred: Any) -> tuple[list[list[str]], list[list[str]]]:
    truth, predicted = [row_strings(c) for c in _cells(y_true)], [row_strings(c) for c in _cells(y_pred)]
    if len(truth) != len(predicted):
        raise ValueError(f"{len(truth)} true rows but {len(predicted)} predicted rows")
    return truth, predicted


def _cells(values: Any) -> list[Any]:
    # A list of lists is one group of strings per row; np.asarray would make it a matrix.
    if isinstance(values, (list, tuple)):
        return list(values)
    return list(np.asarray(values, dtype=object).ravel())


def group_by_id(ids: Sequence[str], values: Sequence[Any]) -> tuple[list[str], list[list[str]]]:
    """Rows grouped by id, in order of first appearance: each id's non-blank strings. An id
    whose rows are all blank keeps an empty group (an image with nothing in it)."""
    groups: dict[str, list[str]] = {}
    for key, value in zip(ids, values):
        groups.setdefault(key, []).extend(row_strings(value))
    return list(groups), list(groups.values())


# ---------------------------------------------------------------------------------------------
# Masks


def is_relative(truth: list[list[str]]) -> bool:
    """Whether the answers' run-length encoding is relative: most of their strings of several
    runs are out of order when read as absolute (a relative string almost always is, its later
    starts being short gaps; a majority, so that a stray malformed answer does not decide)."""
    several = [runs for row in truth for s in row if len((runs := rle_runs(s)).starts) > 1]
    return 2 * sum(not runs.sorted_and_disjoint for runs in several) > len(several)


def _runs(strings: list[str], relative: bool, row: int, check: bool) -> list[Runs]:
    runs = [rle_runs(s, relative) for s in strings]
    if check and not relative and not all(r.sorted_and_disjoint for r in runs):
        raise ValueError(f"predicted row {row}: run-length pairs must be sorted and must not overlap")
    return runs


def _areas(truth: list[Runs], pred: list[Runs]) -> tuple[int, int, int]:
    """|A∩B|, |A|, |B| of the unions of two lists of runs."""
    def joined(runs: list[Runs]) -> tuple[np.ndarray, np.ndarray]:
        if not runs:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        return np.concatenate([r.starts for r in runs]), np.concatenate([r.ends for r in runs])

    (ts, te), (ps, pe) = joined(truth), joined(pred)
    a, b = union_length(ts, te), union_length(ps, pe)
    both = union_length(np.concatenate([ts, ps]), np.concatenate([te, pe]))
    return a + b - both, a, b


def _overlaps(y_true: Any, y_pred: Any, relative: bool | None) -> np.ndarray:
    """(rows, 3): intersection, true area and predicted area of each row."""
    truth, predicted = _rows(y_true, y_pred)
    relative = is_relative(truth) if relative is None else relative
    return np.array([_areas(_runs(t, relative, i, False), _runs(p, relative, i, True))
                     for i, (t, p) in enumerate(zip(truth, predicted))], dtype=float).reshape(-1, 3)


def dice(y_true: Any, y_pred: Any, relative: bool | None = None) -> float:
    """Mean Dice 2|A∩B| / (|A| + |B|) over rows; a row empty on both sides scores 1."""
    inter, a, b = _overlaps(y_true, y_pred, relative).T
    total = a + b
    scores = np.divide(2 * inter, total, out=np.ones_like(total), where=total > 0)
    return float(scores.mean()) if len(scores) else float("nan")


def iou(y_true: Any, y_pred: Any, relative: bool | None = None) -> float:
    """Mean Jaccard |A∩B| / |A∪B| over rows; a row empty on both sides scores 1."""
    inter, a, b = _overlaps(y_true, y_pred, relative).T
    union = a + b - inter
    scores = np.divide(inter, union, out=np.ones_like(union), where=union > 0)
    return float(scores.mean()) if len(scores) else float("nan")


def mask_iou(truth: list[Runs], pred: list[Runs]) -> np.ndarray:
    """IoU of every true object with every predicted one, (n_true, n_pred), from pixel indices
    (objects may overlap on either side)."""
    t_pix, p_pix = [r.pixels() for r in truth], [r.pixels() for r in pred]
    t_area = np.array([len(p) for p in t_pix], dtype=float)
    p_area = np.array([len(p) for p in p_pix], dtype=float)
    inter = np.zeros((len(truth), len(pred)))
    if len(truth) and len(pred):
        t_all, t_obj = np.concatenate(t_pix), np.repeat(np.arange(len(truth)), t_area.astype(int))
        p_all, p_obj = np.concatenate(p_pix), np.repeat(np.arange(len(pred)), p_area.astype(int))
        order = np.argsort(p_all, kind="stable")
        p_all, p_obj = p_all[order], p_obj[order]
        lo, hi = np.searchsorted(p_all, t_all, "left"), np.searchsorted(p_all, t_all, "right")
        counts = hi - lo
        # Every (true pixel, predicted pixel) pair that is the same pixel, as object pairs.
        first = np.cumsum(counts) - counts
        matches = np.arange(int(counts.sum())) + np.repeat(lo - first, counts)
        np.add.at(inter, (np.repeat(t_obj, counts), p_obj[matches]), 1)
    union = t_area[:, None] + p_area[None] - inter
    return np.divide(inter, union, out=np.zeros_like(inter), where=union > 0)


# ---------------------------------------------------------------------------------------------
# Mean average precision over IoU thresholds


def image_precision(iou_matrix: np.ndarray, thresholds: Sequence[float], order: np.ndarray) -> float | None:
    """Mean over thresholds of TP / (TP + FP + FN) for one image; None when it has neither
    true nor predicted objects. `order` is the predictions' matching order."""
    n_true, n_pred = iou_matrix.shape
    if n_true == 0 and n_pred == 0:
        return None
    if n_true == 0 or n_pred == 0:
        return 0.0
    scores = []
    for t in thresholds:
        taken = np.zeros(n_true, dtype=bool)
        hits = 0
        for j in order:
            candidates = np.where(taken, -1.0, iou_matrix[:, j])
            best = int(np.argmax(candidates))
            if candidates[best] > t:
                taken[best] = True
                hits += 1
        scores.append(hits / (n_true + n_pred - hits))
    return float(np.mean(scores))


def _mean_over_images(scores: list[float | None]) -> float:
    counted = [s for s in scores if s is not None]
    return float(np.mean(counted)) if counted else 1.0


def map_iou(y_true: Any, y_pred: Any, thresholds: Sequence[float] = MASK_IOU_THRESHOLDS,
            relative: bool | None = None) -> float:
    """Mean average precision of instance masks (one string per object) over IoU thresholds."""
    truth, predicted = _rows(y_true, y_pred)
    relative = is_relative(truth) if relative is None else relative
    scores = []
    for i, (t, p) in enumerate(zip(truth, predicted)):
        matrix = mask_iou(_runs(t, relative, i, False), _runs(p, relative, i, True))
        best_first = np.argsort(-matrix.max(axis=0, initial=0.0), kind="stable")
        scores.append(image_precision(matrix, thresholds, best_first))
    return _mean_over_images(scores)


def map_boxes(y_true: Any, y_pred: Any, thresholds: Sequence[float] = BOX_IOU_THRESHOLDS) -> float:
    """Mean average precision of boxes over IoU thresholds, predictions by confidence."""
    truth, predicted = _rows(y_true, y_pred)
    return mean_box_precision([Boxes.concat([parse_boxes(s, confidence=None) for s in t]) for t in truth],
                              [Boxes.concat([parse_boxes(s, confidence=True) for s in p]) for p in predicted],
                              thresholds)


def mean_box_precision(truth: Sequence[Boxes], predicted: Sequence[Boxes],
                       thresholds: Sequence[float] = BOX_IOU_THRESHOLDS) -> float:
    """`map_boxes` over parsed boxes, picture by picture (the solver scores its boxes so)."""
    scores = []
    for true_boxes, pred_boxes in zip(truth, predicted):
        matrix = box_iou(true_boxes.xywh, pred_boxes.xywh)
        by_confidence = np.argsort(-pred_boxes.scores, kind="stable")
        scores.append(image_precision(matrix, thresholds, by_confidence))
    return _mean_over_images(scores)


def aligned_groups(true_ids: Sequence[str], true_values: Sequence[Any], pred_ids: Sequence[str],
                   pred_values: Sequence[Any]) -> tuple[list[list[str]], list[list[str]]]:
    """Both sides grouped by id (`group_by_id`), the predictions in the answers' order;
    ValueError when the two sides do not hold the same ids."""
    keys, truth = group_by_id(true_ids, true_values)
    pred_keys, pred_groups = group_by_id(pred_ids, pred_values)
    by_key = dict(zip(pred_keys, pred_groups))
    missing, extra = set(keys) - by_key.keys(), by_key.keys() - set(keys)
    if missing or extra:
        raise ValueError(f"ids differ: {len(missing)} missing, {len(extra)} unexpected")
    return truth, [by_key[k] for k in keys]
