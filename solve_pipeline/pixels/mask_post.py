"""From a probability per pixel to the masks a segmentation metric scores, tuned on held-out pictures.

A Kaggle grandmaster's post-processing: a probability threshold, a minimum component area (specks
of a few pixels are nearly always false), and an empty-mask rule (a picture whose kept area is
tiny submits no mask: with Dice an empty truth scores 1 only against an empty prediction, and
under mean average precision a false object costs a whole picture). The three are searched on
the held-out pictures for the competition's own metric; objects are connected components.

Scores are computed from per-component statistics cached per threshold, so a search over
hundreds of settings never touches a pixel again; `apply` then gives masks that the registry
scores identically (tests/test_masks.py checks both agree).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
from scipy import ndimage

from agentk.core.metrics import MASK_IOU_THRESHOLDS, get_metric
from agentk.core.metrics.spatial import image_precision

THRESHOLDS = tuple(round(0.1 + 0.05 * i, 2) for i in range(17))  # 0.1 .. 0.9
SMOOTHING = (0.0, 1.0)  # Gaussian sigma over the probabilities: a pixel model's edges are ragged
AREA_SHARES = (0.0, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.02, 0.05)  # of a picture's pixels


@dataclass(frozen=True)
class PostProcess:
    threshold: float
    min_area: int  # components smaller than this are dropped
    empty_area: int  # a picture whose kept area is smaller submits no mask
    smooth: float = 0.0

    def apply(self, probability: np.ndarray) -> np.ndarray:
        """Labelled components (int32, 0 = background) of the kept mask."""
        components, n = ndimage.label(_smoothed(probability, self.smooth) >= self.threshold)
        if not n:
            return components.astype(np.int32)
        sizes = np.bincount(components.ravel(), minlength=n + 1)
        keep = sizes >= max(self.min_area, 1)
        keep[0] = False
        if sizes[keep].sum() < self.empty_area:
            return np.zeros(components.shape, dtype=np.int32)
        relabel = np.zeros(n + 1, dtype=np.int32)
        relabel[keep] = np.arange(1, int(keep.sum()) + 1)
        return relabel[components]

    def describe(self) -> str:
        smooth = f"probabilities smoothed (sigma {self.smooth:g}), " if self.smooth else ""
        return (f"{smooth}threshold {self.threshold:.2f}, components of {self.min_area}+ pixels, "
                f"empty below {self.empty_area} pixels")


def _smoothed(probability: np.ndarray, sigma: float) -> np.ndarray:
    return ndimage.gaussian_filter(probability, sigma, mode="nearest") if sigma else probability


@dataclass
class _Picture:
    """One picture's components at one threshold, and their overlap with the truth."""

    sizes: np.ndarray  # pixels per component
    overlap: np.ndarray  # (true objects, components) shared pixels
    true_sizes: np.ndarray


def _stats(probability: np.ndarray, truth: np.ndarray, threshold: float, per_object: bool) -> _Picture:
    components, n = ndimage.label(probability >= threshold)
    truth = truth if per_object else (truth > 0).astype(np.int32)
    k = int(truth.max()) if truth.size else 0
    joint = np.bincount(truth.ravel().astype(np.int64) * (n + 1) + components.ravel(),
                        minlength=(k + 1) * (n + 1)).reshape(k + 1, n + 1)
    true_sizes = joint[1:].sum(axis=1)
    present = true_sizes > 0  # labels absent from the picture are no objects
    return _Picture(joint.sum(axis=0)[1:], joint[1:, 1:][present], true_sizes[present])


class MaskScorer:
    """The metric of a post-processing over held-out pictures, from cached per-threshold stats."""

    def __init__(self, metric: str, probabilities: Sequence[np.ndarray], truths: Sequence[np.ndarray],
                 per_object: bool, iou_thresholds: Sequence[float] | None = None) -> None:
        self.kind = get_metric(metric).kind
        self.name = get_metric(metric).name
        self.probabilities, self.truths = list(probabilities), list(truths)
        self.per_object = per_object
        self.iou_thresholds = tuple(iou_thresholds or MASK_IOU_THRESHOLDS)
        self._cache: dict[tuple[float, float], list[_Picture]] = {}
        self._smoothed: dict[float, list[np.ndarray]] = {0.0: self.probabilities}

    def _at(self, smooth: float, threshold: float) -> list[_Picture]:
        if smooth not in self._smoothed:
            self._smoothed[smooth] = [_smoothed(p, smooth) for p in self.probabilities]
        if (smooth, threshold) not in self._cache:
            self._cache[smooth, threshold] = [_stats(p, t, threshold, self.per_object)
                                              for p, t in zip(self._smoothed[smooth], self.truths)]
        return self._cache[smooth, threshold]

    def score(self, post: PostProcess) -> float:
        scores = []
        for picture in self._at(post.smooth, post.threshold):
            keep = picture.sizes >= max(post.min_area, 1)
            if picture.sizes[keep].sum() < post.empty_area:
                keep[:] = False
            scores.append(self._picture_score(picture, keep))
        counted = [s for s in scores if s is not None]
        if self.kind == "instances":
            return float(np.mean(counted)) if counted else 1.0
        return float(np.mean(counted))

    def _picture_score(self, picture: _Picture, keep: np.ndarray) -> float | None:
        overlap = picture.overlap[:, keep]
        if self.kind == "mask" or not self.per_object:
            # One object each side: the union of the truth's, the union of the kept components.
            a, b, both = float(picture.true_sizes.sum()), float(picture.sizes[keep].sum()), float(overlap.sum())
            if self.kind == "mask":
                if a + b == 0:
                    return 1.0
                return 2 * both / (a + b) if self.name == "dice" else both / (a + b - both)
            matrix = np.array([[both / (a + b - both)]]) if a and b else np.zeros((int(a > 0), int(b > 0)))
            return image_precision(matrix, self.iou_thresholds, np.arange(matrix.shape[1]))
        sizes = picture.sizes[keep].astype(float)
        union = picture.true_sizes[:, None] + sizes[None] - overlap
        matrix = np.divide(overlap, union, out=np.zeros(overlap.shape), where=union > 0)
        best_first = np.argsort(-matrix.max(axis=0, initial=0.0), kind="stable")
        return image_precision(matrix, self.iou_thresholds, best_first)


def area_grid(pictures: Sequence[np.ndarray]) -> list[int]:
    """Candidate areas in pixels: shares of the median picture's size."""
    size = float(np.median([p.size for p in pictures])) if pictures else 0.0
    return sorted({int(round(share * size)) for share in AREA_SHARES})


def search(scorer: MaskScorer, higher_is_better: bool = True, rounds: int = 2) -> tuple[PostProcess, float]:
    """The best (smoothing, threshold, minimum area, empty area), from (0, 0.5, 0, 0): the first
    three searched together (a lower threshold pays only once specks are dropped), then the empty
    area with them held, `rounds` times; ties keep the setting found first."""
    areas = area_grid(scorer.probabilities)
    best = PostProcess(0.5, 0, 0)
    best_score = scorer.score(best)
    sign = 1.0 if higher_is_better else -1.0
    steps = (lambda b: [PostProcess(t, m, b.empty_area, s) for s in SMOOTHING for t in THRESHOLDS for m in areas],
             lambda b: [PostProcess(b.threshold, b.min_area, e, b.smooth) for e in areas])
    for _ in range(rounds):
        changed = False
        for step in steps:
            for candidate in step(best):
                score = scorer.score(candidate)
                if sign * score > sign * best_score + 1e-12:
                    best, best_score, changed = candidate, score, True
        if not changed:
            break
    return best, best_score
