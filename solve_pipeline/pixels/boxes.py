"""The solve of a detection task (boxes, agentk.core.box_targets), under the same budget and
submission rules as every solve.

No box anywhere comes first (valid in seconds, the score a model must beat). Then the pixel
classifier of the segmentation solve learns where each box's centre lies, its central half: boxes
packed side by side stay apart there, so each connected component of the thresholded probability
is one object. A component's bounding box, grown back by a factor, is the box, its mean
probability the confidence. Threshold, smoothing, minimum area and growth are searched on
held-out pictures for the competition's own metric, as a grandmaster tunes a detector's
post-processing; the model is adopted only when it beats no boxes there.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
from scipy import ndimage

from agentk.core.artifacts import SetupLayout
from agentk.core.box_targets import read_boxes, rectangles, save_boxes, score_boxes
from agentk.core.boxes import Boxes
from agentk.core.maps import read_map
from agentk.core.mask_targets import read_labels
from agentk.core.pixels import resolve
from solve_pipeline.base.cv import emit
from solve_pipeline.pixels.mask_post import SMOOTHING, THRESHOLDS, area_grid
from solve_pipeline.pixels.masks import MaskSolve, fit_tuned, read_tests, read_train, split
from solve_pipeline.pixels.solve import LIGHT_PAIRS

SHRINK = 0.5  # of a box's width and height, the centre the pixel model learns
GROWTH = tuple(round(1.0 + 0.2 * i, 1) for i in range(9))  # 1.0 .. 2.6: a component's box, grown back


@dataclass(frozen=True)
class BoxPost:
    threshold: float
    min_area: int  # components smaller than this are no objects
    growth: float  # each component's box scaled about its centre by this
    smooth: float = 0.0

    def apply(self, probability: np.ndarray) -> Boxes:
        """The boxes of a probability map, clipped to the picture, each with its confidence."""
        return _grown(_components(probability, self.smooth, self.threshold), self, probability.shape)

    def describe(self) -> str:
        smooth = f"probabilities smoothed (sigma {self.smooth:g}), " if self.smooth else ""
        return (f"{smooth}threshold {self.threshold:.2f}, components of {self.min_area}+ pixels, "
                f"boxes grown {self.growth:g}x from the centres")


@dataclass
class _Found:
    """One picture's components at one threshold: their tight boxes, areas and mean probabilities."""

    xywh: np.ndarray
    areas: np.ndarray
    confidence: np.ndarray


def _components(probability: np.ndarray, smooth: float, threshold: float) -> _Found:
    smoothed = ndimage.gaussian_filter(probability, smooth, mode="nearest") if smooth else probability
    labels, n = ndimage.label(smoothed >= threshold)
    if not n:
        return _Found(np.zeros((0, 4)), np.zeros(0), np.zeros(0))
    index = np.arange(1, n + 1)
    slices = ndimage.find_objects(labels)
    xywh = np.array([[s[1].start, s[0].start, s[1].stop - s[1].start, s[0].stop - s[0].start] for s in slices], float)
    areas = np.bincount(labels.ravel(), minlength=n + 1)[1:].astype(float)
    confidence = np.asarray(ndimage.mean(probability, labels, index), dtype=float)
    return _Found(xywh, areas, confidence)


def _grown(found: _Found, post: BoxPost, shape: tuple[int, ...]) -> Boxes:
    keep = found.areas >= max(post.min_area, 1)
    xywh = found.xywh[keep]
    if not len(xywh):
        return Boxes.empty()
    centre = xywh[:, :2] + xywh[:, 2:] / 2
    size = xywh[:, 2:] * post.growth
    low = np.clip(centre - size / 2, 0, None)
    high = np.minimum(centre + size / 2, [shape[1], shape[0]])
    return Boxes(found.confidence[keep], np.column_stack([low, high - low]))


class BoxScorer:
    """The metric of a post-processing over held-out pictures, components cached per threshold."""

    def __init__(self, metric: str, probabilities: Sequence[np.ndarray], truths: Sequence[Boxes],
                 iou_thresholds: Sequence[float] | None = None) -> None:
        self.metric, self.probabilities, self.truths = metric, list(probabilities), list(truths)
        self.iou_thresholds = iou_thresholds
        self._cache: dict[tuple[float, float], list[_Found]] = {}

    def score(self, post: BoxPost) -> float:
        key = (post.smooth, post.threshold)
        if key not in self._cache:
            self._cache[key] = [_components(p, post.smooth, post.threshold) for p in self.probabilities]
        predicted = [_grown(found, post, p.shape) for found, p in zip(self._cache[key], self.probabilities)]
        return score_boxes(self.metric, self.truths, predicted, self.iou_thresholds)


def search(scorer: BoxScorer, higher_is_better: bool = True) -> tuple[BoxPost, float]:
    """The best (smoothing, threshold, growth), then the minimum area with them held; ties keep
    the setting found first."""
    sign = 1.0 if higher_is_better else -1.0
    best = BoxPost(0.5, 0, 1.0 / SHRINK)
    best_score = scorer.score(best)
    steps = (lambda b: [BoxPost(t, b.min_area, g, s) for s in SMOOTHING for t in THRESHOLDS for g in GROWTH],
             lambda b: [BoxPost(b.threshold, m, b.growth, b.smooth) for m in area_grid(scorer.probabilities)])
    for step in steps:
        for candidate in step(best):
            score = scorer.score(candidate)
            if sign * score > sign * best_score + 1e-12:
                best, best_score = candidate, score
    return best, best_score


def _scale(working: tuple[int, ...], own: tuple[int, ...]) -> np.ndarray:
    """x, y, w, h multipliers from a picture's own size to its working size."""
    fx, fy = working[1] / own[1], working[0] / own[0]
    return np.array([fx, fy, fx, fy])


def _centres(path: Path) -> np.ndarray:
    """The training label of a picture's boxes: their central halves as a labelled mask."""
    return rectangles(read_boxes(path).xywh, read_labels(path).shape, SHRINK)


def solve_boxes(workspace: Path, out: Path, budget: float | None, seed: int, light: bool) -> dict:
    """No boxes first, then the tuned centre classifier; returns (and writes) the solve's record."""

    run = MaskSolve(workspace, out, budget, seed, light)
    column = run.target["column"]
    rng = np.random.default_rng(seed)
    train, n_train = read_train(run.setup, column, rng, limit=LIGHT_PAIRS if light else None, labels_of=_centres)
    targets = read_map(SetupLayout(run.setup).target_map).drop_duplicates("id").set_index("id")[column]
    # Scored at the working size (scale.py): IoU is the same at any scale of both sides.
    truths = {}
    for image_id, picture, shape in zip(train.ids, train.inputs, train.shapes):
        own = read_boxes(resolve(run.setup, targets.loc[image_id]))
        truths[image_id] = Boxes(own.scores, own.xywh * _scale(picture.shape, shape))
    test = read_tests(run.setup)
    held, fit = split(train, rng)
    emit("start", n_train=len(train.ids), n_train_total=n_train, n_test=len(test.ids), held_out_pictures=len(held),
         task="detection")
    thresholds = getattr(run.metric_module, "THRESHOLDS", None)
    held_truths = [truths[train.ids[i]] for i in held]
    empty = score_boxes(run.metric, held_truths, [Boxes.empty()] * len(held), thresholds)
    run.cv["empty"] = empty
    run.race.append({"family": "empty", "status": "finished", "first_fold_score": empty, "seconds": 0.0})

    def nothing(index: int, path: Path) -> None:
        save_boxes(np.zeros((0, 4)), test.shape(index), path)

    best_name, best_score, best_write = "empty", empty, nothing
    if not light:  # a valid submission in seconds; the light check writes only its best, once
        run.submit_pictures(best_name, best_score, best_write, test)
    began = time.monotonic()

    def tune(probabilities: list[np.ndarray]) -> tuple[BoxPost, float, str]:
        scorer = BoxScorer(run.metric, probabilities, held_truths, thresholds)
        post, score = search(scorer, run.higher)
        return post, score, f"{post.describe()} (threshold 0.5, grown {1 / SHRINK:g}x: {scorer.score(BoxPost(0.5, 0, 1 / SHRINK)):.4f})"

    try:
        fitted = fit_tuned(run, train, held, fit, test, tune, rng)
        run.model_finished(began, fitted.score, fitted.line)
        if run.direction.better(fitted.score, empty):
            best_name, best_score = "pixel_lightgbm", fitted.score

            def best_write(index: int, path: Path) -> None:
                picture, shape = test.picture(index), test.shape(index)
                boxes = fitted.post.apply(fitted.predict(picture))
                save_boxes(boxes.xywh / _scale(picture.shape, shape), shape, path, boxes.scores)
    except Exception as exc:  # noqa: BLE001 - the empty submission stands; say why the model did not
        run.model_failed(began, exc)
    if light or best_name != "empty":
        run.submit_pictures(best_name, best_score, best_write, test)
    return run.finish(column, len(held), n_train, len(test.ids), "detection")
