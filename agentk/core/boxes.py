"""Object boxes as Kaggle's detection competitions write them: one cell per image holding
`conf x y w h conf x y w h ...` (rsna-pneumonia, global-wheat), x/y the top-left corner and
w/h the size, all in pixels. Answers may leave out the confidences (`x y w h ...`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from agentk.core.masks import is_blank


@dataclass(frozen=True)
class Boxes:
    """Boxes of one image: `xywh` is (n, 4), `scores` (n,) their confidences (1.0 when not given)."""

    scores: np.ndarray
    xywh: np.ndarray

    def __len__(self) -> int:
        return len(self.scores)

    def by_confidence(self) -> Boxes:
        """The boxes, most confident first (ties keep their order)."""
        order = np.argsort(-self.scores, kind="stable")
        return Boxes(self.scores[order], self.xywh[order])

    @classmethod
    def empty(cls) -> Boxes:
        return cls(np.zeros(0), np.zeros((0, 4)))

    @classmethod
    def concat(cls, parts: list[Boxes]) -> Boxes:
        if not parts:
            return cls.empty()
        return cls(np.concatenate([b.scores for b in parts]), np.concatenate([b.xywh for b in parts]))


def _numbers(value: Any) -> np.ndarray:
    try:
        return np.array(str(value).split(), dtype=float)
    except ValueError:
        raise ValueError(f"box string holds a non-number: {str(value)[:60]!r}") from None


def parse_boxes(value: Any, confidence: bool | None = True) -> Boxes:
    """The boxes of one cell. `confidence` True reads `conf x y w h` groups (a submission), False
    `x y w h` groups; None decides from the cell (an answer): groups of five when the count is
    not a multiple of four, groups of four when it is not a multiple of five, else five only if
    every would-be confidence lies in [0, 1] and not every would-be x does."""
    if is_blank(value):
        return Boxes.empty()
    numbers = _numbers(value)
    if not np.isfinite(numbers).all():
        raise ValueError("box string holds a non-finite number")
    if confidence is None:
        confidence = _has_confidence(numbers)
    width = 5 if confidence else 4
    if len(numbers) % width:
        raise ValueError(f"box string has {len(numbers)} numbers, not groups of {width}"
                         f" ({'conf x y w h' if confidence else 'x y w h'})")
    groups = numbers.reshape(-1, width)
    xywh = groups[:, 1:] if confidence else groups
    if (xywh[:, 2:] < 0).any():
        raise ValueError("a box has a negative width or height")
    scores = groups[:, 0] if confidence else np.ones(len(groups))
    return Boxes(scores, xywh)


def _has_confidence(numbers: np.ndarray) -> bool:
    fours, fives = len(numbers) % 4 == 0, len(numbers) % 5 == 0
    if fours != fives:
        return fives
    return _in_unit_interval(numbers[0::5]) and not _in_unit_interval(numbers[0::4])


def _in_unit_interval(values: np.ndarray) -> bool:
    return bool(((values >= 0) & (values <= 1)).all())


def format_boxes(scores: Any, xywh: Any, decimals: int = 1) -> str:
    """The cell for boxes (most confident first), as `parse_boxes` reads it back."""
    boxes = Boxes(np.asarray(scores, dtype=float).ravel(), np.asarray(xywh, dtype=float).reshape(-1, 4))
    ordered = boxes.by_confidence()
    return " ".join(f"{s:.4f} " + " ".join(f"{v:.{decimals}f}" for v in row)
                    for s, row in zip(ordered.scores.tolist(), ordered.xywh.tolist()))


def box_iou(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """IoU of every box of `a` (n, 4 xywh) with every box of `b` (m, 4): an (n, m) matrix."""
    a, b = np.asarray(a, dtype=float).reshape(-1, 4), np.asarray(b, dtype=float).reshape(-1, 4)
    ax2, ay2 = a[:, 0] + a[:, 2], a[:, 1] + a[:, 3]
    bx2, by2 = b[:, 0] + b[:, 2], b[:, 1] + b[:, 3]
    w = np.clip(np.minimum(ax2[:, None], bx2[None]) - np.maximum(a[:, None, 0], b[None, :, 0]), 0, None)
    h = np.clip(np.minimum(ay2[:, None], by2[None]) - np.maximum(a[:, None, 1], b[None, :, 1]), 0, None)
    inter = w * h
    union = (a[:, 2] * a[:, 3])[:, None] + (b[:, 2] * b[:, 3])[None] - inter
    return np.divide(inter, union, out=np.zeros_like(inter), where=union > 0)
