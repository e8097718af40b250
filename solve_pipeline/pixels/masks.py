"""The solve of a segmentation task (a mask target, agentk.core.mask_targets), under the same budget
and submission rules as every solve.

First every test picture submits no mask (the "constant" of this kind of task: valid in seconds,
and the score any model must beat); then the pixel model, as a classifier, learns the probability
that a pixel is in a mask from pixels of most training pictures, the post-processing (threshold,
minimum component area, empty-mask rule; mask_post.py) is tuned on whole held-out pictures for the
competition's metric, and the model is adopted only when it beats the empty masks there.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd
from scipy import ndimage

from agentk.core.artifacts import SetupLayout
from agentk.core.maps import read_map
from agentk.core.mask_targets import LABELS_SUFFIX, picture_shape, read_labels, save_labels
from agentk.core.pixels import read_picture, resolve
from solve_pipeline.base.cv import emit
from solve_pipeline.pixels.features import pixel_features
from solve_pipeline.pixels.mask_post import MaskScorer, PostProcess, search
from solve_pipeline.pixels.model import PixelRows, fit_pixel_model
from solve_pipeline.pixels.scale import factor, reduced, resampled
from solve_pipeline.pixels.solve import LIGHT_PAIRS, PictureSolve
from solve_pipeline.base.submission_record import SubmissionRecord, adopt_submission, setup_fingerprint

_HELD_OUT = 0.2  # of the training pictures, at least one: the pictures post-processing is tuned on
_MAX_HELD = 300  # enough pictures to tell an empty-mask rule from luck
_MAX_HELD_PIXELS = 20_000_000  # their probabilities are kept for the search (80 MB)
_MAX_TRAIN_PIXELS = 60_000_000  # pictures read for training (a random share beyond: rows are drawn anyway)
_ROWS_PER_SECOND = 20_000  # pixels LightGBM fits per second of the fit's share on one core (measured)
_MAX_ROWS = 2_000_000
_SIGMAS = (1.0, 2.0, 4.0, 8.0)


def mask_features(picture: np.ndarray) -> np.ndarray:
    """The pixel model's features, with what finds blobs and where a pixel is: smoothed levels and
    their differences (a difference of Gaussians answers to a blob of its scale), the gradient,
    and the pixel's place in the picture (objects often sit in some part of it)."""
    smooth = [ndimage.gaussian_filter(picture, s, mode="reflect") for s in _SIGMAS]
    blobs = [a - b for a, b in zip(smooth, smooth[1:])]
    edge = ndimage.gaussian_gradient_magnitude(picture, 2.0, mode="reflect")
    rows, cols = np.indices(picture.shape, dtype=np.float32)
    place = [rows / max(picture.shape[0] - 1, 1), cols / max(picture.shape[1] - 1, 1)]
    extra = np.stack([*smooth, *blobs, edge, *place], axis=-1).reshape(picture.size, -1).astype(np.float32)
    return np.hstack([pixel_features(picture), extra])


@dataclass
class _Pictures:
    ids: list[str]
    inputs: list[np.ndarray]  # 0..1, at the working size (scale.py)
    labels: list[np.ndarray]  # labelled masks, at the working size
    shapes: list[tuple[int, ...]]  # each picture's own size


@dataclass
class _Tests:
    """Test pictures, read one at a time when predicted: a test set need not fit in memory."""

    ids: list[str]
    paths: list[Path]

    def picture(self, index: int) -> np.ndarray:
        """The picture at its working size (scale.py)."""
        return reduced(read_picture(self.paths[index]))

    def shape(self, index: int) -> tuple[int, int]:
        """The picture's own size, which its prediction is brought back to."""
        return picture_shape(self.paths[index])

    def pixels(self) -> int:
        """All test pixels at the working size, priced from the headers of a few pictures."""
        shown = [picture_shape(p) for p in self.paths[:50]]
        return int(np.mean([h * w * factor((h, w)) ** 2 for h, w in shown]) * len(self.paths)) if shown else 0


def read_train(setup: Path, column: str, rng: np.random.Generator, limit: int | None,
               labels_of: Callable[[Path], np.ndarray] = read_labels) -> tuple[_Pictures, int]:
    """The training pictures and their masks (`labels_of` a target's path), a random share of them
    when all would not fit `_MAX_TRAIN_PIXELS`; and how many there are in all."""
    layout = SetupLayout(setup)
    inputs = read_map(layout.input_map("train", "img")).drop_duplicates("id")
    truth = read_map(layout.target_map).drop_duplicates("id").set_index("id")[column]
    inputs = inputs[inputs["id"].isin(truth.index)]
    order = rng.permutation(len(inputs))[:limit] if limit is not None else rng.permutation(len(inputs))
    pictures = _Pictures([], [], [], [])
    pixels = 0
    for row in inputs.iloc[order].itertuples(index=False):
        if pixels >= _MAX_TRAIN_PIXELS:
            break
        own = read_picture(resolve(setup, row.image_path))
        picture = reduced(own)
        pictures.shapes.append(own.shape)
        pictures.ids.append(str(row.id))
        pictures.inputs.append(picture)
        pictures.labels.append(resampled(labels_of(resolve(setup, truth.loc[row.id])), picture.shape))
        pixels += picture.size
    return pictures, len(inputs)


def read_tests(setup: Path) -> _Tests:
    frame = read_map(SetupLayout(setup).input_map("test", "img")).drop_duplicates("id")
    return _Tests(frame["id"].astype(str).tolist(), [resolve(setup, p) for p in frame["image_path"]])


def _draw(rows: PixelRows, features: np.ndarray, labels: np.ndarray, n: int, rng: np.random.Generator) -> None:
    """`n` pixels of one picture: half uniform, half from the mask and its border (where the model
    must learn where a mask ends), so that rare small objects are seen at all."""
    inside = labels > 0
    flat = inside.ravel().astype(np.float32)
    if n >= flat.size:
        chosen = np.arange(flat.size)
    else:
        border = ndimage.binary_dilation(inside, iterations=2) & ~ndimage.binary_erosion(inside, iterations=2)
        focus = np.flatnonzero((inside | border).ravel())
        half = min(n // 2, len(focus))
        picked = rng.choice(focus, size=half, replace=False) if half else np.zeros(0, dtype=np.int64)
        chosen = np.unique(np.concatenate([picked, rng.choice(flat.size, size=n - half, replace=False)]))
    rows.x.append(features[chosen])
    rows.y.append(flat[chosen])


class MaskSolve(PictureSolve):
    """A picture solve whose predictions are labelled masks, submitted run-length encoded."""

    def submit_masks(self, name: str, score: float, masks: Callable[[int], np.ndarray], test: _Tests) -> bool:
        """Save every test picture's mask and adopt the submission when `score` beats the record."""
        return self.submit_pictures(name, score, lambda index, path: save_labels(masks(index), path), test)

    def submit_pictures(self, name: str, score: float, write: Callable[[int, Path], None], test: _Tests) -> bool:
        """`write` every test picture's prediction (its index, the file) and adopt the submission
        when `score` beats the record."""
        if self.best is not None and not self.direction.better(score, self.best):
            return False
        folder = self.workspace / "solve" / "masks" / name
        paths = []
        for index, image_id in enumerate(test.ids):
            path = folder / f"{image_id}{LABELS_SUFFIX}"
            write(index, path)
            paths.append(os.path.relpath(path, self.setup))
        pred = pd.DataFrame({"id": test.ids, self.target["column"]: paths})
        formatted = self.submission_module.format_submission(pred)
        record = SubmissionRecord(model=name, validation_score=score, metric="setup", higher_is_better=self.higher,
                                  setup_fingerprint=setup_fingerprint(self.setup, test.ids))
        adoption = adopt_submission(self.out, lambda tmp: formatted.to_csv(tmp, index=False), record, force=self.light)
        self.best, self.best_model = score, name
        self.timeline.append((round(self.elapsed(), 3), score))
        self.first_submission_s = self.first_submission_s or self.elapsed()
        emit("submission" if adoption.written else "submission_kept", path=str(self.out), model=name,
             validation_score=score, reason=adoption.reason, elapsed_s=round(self.elapsed(), 2))
        return True


def split(pictures: _Pictures, rng: np.random.Generator) -> tuple[list[int], list[int]]:
    """(held-out, fitted) picture indices; one picture alone is both."""
    n = len(pictures.ids)
    order = rng.permutation(n).tolist()
    if n < 2:
        return order, order
    n_held = min(_MAX_HELD, max(1, int(round(_HELD_OUT * n))))
    sizes = np.cumsum([pictures.inputs[i].size for i in order[:n_held]])
    n_held = max(1, int(np.searchsorted(sizes, _MAX_HELD_PIXELS, side="right")))  # their probabilities are kept
    return order[:n_held], order[n_held:]


@dataclass
class Fitted:
    predict: Callable[[np.ndarray], np.ndarray]  # picture -> probability per pixel
    post: Any  # what turns a probability map into the prediction (PostProcess, boxes' BoxPost)
    score: float
    line: str


# Held-out probabilities -> (post-processing, its score, what it is): the metric's own tuning.
Tune = Callable[[list[np.ndarray]], tuple[Any, float, str]]


def _afford(run: MaskSolve, train: _Pictures, held: list[int], fit: list[int], test: _Tests) -> tuple[list[int], float]:
    """(the fitted pictures the budget can featurise, the seconds predicting the held-out and test
    pictures will take), priced on one picture before anything is fitted: a model whose test
    pictures cannot all be predicted in time is not started at all."""
    began = time.monotonic()
    mask_features(train.inputs[held[0]])
    per_pixel = (time.monotonic() - began) / max(train.inputs[held[0]].size, 1)
    pixels = sum(train.inputs[i].size for i in held) + test.pixels()
    predict_s = 1.5 * per_pixel * pixels  # the trees cost about half as much as the features (measured)
    if run.budget is None:
        return fit, predict_s
    left = run.left()
    if predict_s > 0.7 * left:
        raise TimeoutError(f"featurising {pixels / 1e6:.1f}M held-out and test pixels needs ~{predict_s:.0f} s "
                           f"of the {left:.0f} s left")
    # Every fitted picture is featurised whole to draw its rows: at most a third of what is left.
    sizes = np.cumsum([train.inputs[i].size for i in fit])
    keep = max(1, int(np.searchsorted(sizes, (left - predict_s) / 3 / max(per_pixel, 1e-12), side="right")))
    if keep < len(fit):
        emit("pixel_model_cut", message=f"rows drawn from {keep} of {len(fit)} pictures to fit the budget")
    return fit[:keep], predict_s


def fit_tuned(run: MaskSolve, train: _Pictures, held: list[int], fit: list[int], test: _Tests, tune: Tune,
              rng: np.random.Generator) -> Fitted:
    """The pixel classifier, its post-processing tuned on the held-out pictures, and their score."""
    fit, predict_s = _afford(run, train, held, fit, test)
    n_pixels = sum(train.inputs[i].size for i in fit)
    seconds = 0.4 * (run.left() - predict_s) if run.budget is not None else 120.0
    rows = min(n_pixels, 20_000) if run.light else int(min(n_pixels, _MAX_ROWS, max(50_000, seconds * _ROWS_PER_SECOND)))
    rows_train, rows_stop = PixelRows(), PixelRows()
    per_picture = max(1, rows // max(len(fit), 1))
    for i in fit:
        _draw(rows_train, mask_features(train.inputs[i]), train.labels[i], per_picture, rng)
    for i in held[:24]:
        _draw(rows_stop, mask_features(train.inputs[i]), train.labels[i], max(1, min(per_picture, 20_000)), rng)
    deadline = time.monotonic() + (0.6 * (run.left() - predict_s) if run.budget is not None else 600.0)
    model = fit_pixel_model(rows_train, rows_stop, deadline, run.threads, run.seed, light=run.light,
                            objective="binary", featurise=mask_features)
    line = f"{rows_train.size} pixels of {len(fit)} pictures, {model.trees} trees"
    # The held-out pictures are predicted with the trees the test pictures can afford, so the
    # post-processing is tuned on the probabilities the submission will have.
    pixels_left = sum(train.inputs[i].size for i in held[1:]) + test.pixels()
    cut = model.fit_prediction_into(train.inputs[held[0]], pixels_left, 0.8 * run.left())
    if cut:
        line += f"; {cut}"
        emit("pixel_model_cut", message=cut)
    if model.use_trees == 0:
        raise TimeoutError(cut)
    post, score, tuned = tune([model.predict(train.inputs[i]) for i in held])
    return Fitted(model.predict, post, score, f"{line}; {tuned}")


def solve_masks(workspace: Path, out: Path, budget: float | None, seed: int, light: bool) -> dict:
    """Empty masks first, then the tuned pixel classifier; returns (and writes) the solve's record."""
    run = MaskSolve(workspace, out, budget, seed, light)
    target = run.target
    if target.get("mask_classes"):
        from solve_pipeline.pixels.class_masks import solve_class_masks  # masks per picture and class

        return solve_class_masks(run)
    column, per_object = target["column"], bool(target.get("per_object"))
    rng = np.random.default_rng(seed)
    train, n_train = read_train(run.setup, column, rng, limit=LIGHT_PAIRS if light else None)
    test = read_tests(run.setup)
    held, fit = split(train, rng)
    emit("start", n_train=len(train.ids), n_train_total=n_train, n_test=len(test.ids), held_out_pictures=len(held),
         task="segmentation")
    scorer_args: dict[str, Any] = {"metric": run.metric, "per_object": per_object,
                                   "iou_thresholds": getattr(run.metric_module, "THRESHOLDS", None)}
    empty = MaskScorer(probabilities=[np.zeros(train.inputs[i].shape, np.float32) for i in held],
                       truths=[train.labels[i] for i in held], **scorer_args).score(PostProcess(0.5, 0, 0))
    run.cv["empty"] = empty
    run.race.append({"family": "empty", "status": "finished", "first_fold_score": empty, "seconds": 0.0})
    best_name, best_score = "empty", empty
    best_masks: Callable[[int], np.ndarray] = lambda index: np.zeros(test.shape(index), np.int32)  # noqa: E731
    if not light:  # a valid submission in seconds; the light check writes only its best, once
        run.submit_masks(best_name, best_score, best_masks, test)
    began = time.monotonic()
    try:
        def tune(probabilities: list[np.ndarray]) -> tuple[PostProcess, float, str]:
            scorer = MaskScorer(truths=[train.labels[i] for i in held], probabilities=probabilities, **scorer_args)
            post, score = search(scorer, run.higher)
            return post, score, f"{post.describe()} (plain threshold 0.5: {scorer.score(PostProcess(0.5, 0, 0)):.4f})"

        fitted = fit_tuned(run, train, held, fit, test, tune, rng)
        run.model_finished(began, fitted.score, fitted.line)
        if run.direction.better(fitted.score, empty):
            best_name, best_score = "pixel_lightgbm", fitted.score
            best_masks = lambda index: resampled(fitted.post.apply(fitted.predict(test.picture(index))),  # noqa: E731
                                                 test.shape(index))
    except Exception as exc:  # noqa: BLE001 - the empty submission stands; say why the model did not
        run.model_failed(began, exc)
    if light or best_name != "empty":
        run.submit_masks(best_name, best_score, best_masks, test)
    return run.finish(column, len(held), n_train, len(test.ids), "segmentation")
