"""The solve of an image-to-image task, under the same budget and submission rules as every solve.

First the input pictures themselves are submitted (the "constant" of this kind of task: a valid
submission in seconds, and the score any model must beat); then a boosted pixel model learns the
target from pixels of most training pairs, is scored on whole held-out pictures, and is adopted
only when it beats that. Every adoption goes through the submission record, so the file on disk
only improves, across resumes too.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd

from agentk.core.artifacts import SetupLayout
from agentk.core.box_targets import BOX_OUTPUT
from agentk.core.mask_targets import MASK_TASK
from agentk.core.maps import read_map
from agentk.core.metrics.direction import Direction
from agentk.core.pixels import read_picture, resolve, save_prediction, score_pictures, write_pixel_csv
from agentk.core.records.results import SolveResult
from agentk.core.records.workspace import atomic_write_json
from solve_pipeline.base.cv import emit
from solve_pipeline.pixels.model import PixelModel, PixelRows, PredictionDue, fit_pixel_model
from solve_pipeline.pixels.target import picture_target
from solve_pipeline.base.setup_modules import load_setup_module
from solve_pipeline.base.submission_record import SubmissionRecord, adopt_submission, setup_fingerprint

_HELD_OUT = 0.2  # of the training pairs, at least one: the pictures every candidate is scored on
_MAX_HELD = 12  # millions of pixels already; more would only cost prediction time
_ROWS_PER_SECOND = 20_000  # pixels LightGBM fits per second of the fit's share on one core (measured)
_MAX_ROWS = 2_000_000
LIGHT_PAIRS = 3


@dataclass
class _Pictures:
    ids: list[str]
    inputs: list[np.ndarray]  # 0..1
    targets: list[np.ndarray] | None  # 0..1; None for test pictures


def _read(setup: Path, split: str, target: dict, limit: int | None = None) -> _Pictures:
    layout = SetupLayout(setup)
    inputs = read_map(layout.input_map(split, "img")).drop_duplicates("id")
    if split == "train":
        truth = read_map(layout.target_map).drop_duplicates("id").set_index("id")[target["column"]]
        inputs = inputs[inputs["id"].isin(truth.index)]
    if limit is not None:
        inputs = inputs.head(limit)
    ids = inputs["id"].astype(str).tolist()
    pictures = [read_picture(resolve(setup, p)) for p in inputs["image_path"]]
    targets = None
    if split == "train":
        targets = [read_picture(resolve(setup, truth.loc[i])) for i in ids]
    return _Pictures(ids, pictures, targets)


class PictureSolve:
    """One solve's state: the budget's clock, the best score so far and the adopted file."""

    def __init__(self, workspace: Path, out: Path, budget: float | None, seed: int, light: bool) -> None:
        self.workspace, self.setup, self.out = workspace, workspace / "setup", out
        self.began = time.monotonic()
        self.budget, self.seed, self.light = budget, seed, light
        self.target = picture_target(self.setup) or {}
        # Stored intensity / scale = the submission's value; pictures are read as intensity / 255.
        self.to_submission = 255.0 / float(self.target.get("scale", 255.0))
        self.metric_module = load_setup_module(SetupLayout(self.setup).module("metric"), "agentk_setup_metric")
        self.submission_module = load_setup_module(SetupLayout(self.setup).module("submission"), "agentk_setup_submission")
        self.metric = str(getattr(self.metric_module, "METRIC", "rmse"))
        self.higher = bool(self.metric_module.HIGHER_IS_BETTER)
        self.direction = Direction(self.higher)
        self.best: float | None = None
        self.best_model: str | None = None
        self.first_submission_s: float | None = None
        self.timeline: list[tuple[float, float]] = []
        self.cv: dict[str, float | None] = {}
        self.race: list[dict[str, Any]] = []
        self.threads = max(1, min(os.cpu_count() or 2, 16))
        self.submit_s = 0.0  # what writing a submission took (the light check writes one only at the end)

    def elapsed(self) -> float:
        return time.monotonic() - self.began

    def left(self) -> float:
        return float("inf") if self.budget is None else self.budget - self.elapsed()

    def model_finished(self, began: float, score: float, line: str, **detail: Any) -> None:
        """The pixel model's held-out score and what it was, recorded and said."""
        self.cv["pixel_lightgbm"] = score
        self.race.append({"family": "pixel_lightgbm", "status": "finished", "first_fold_score": score,
                          "seconds": round(time.monotonic() - began, 2), "reason": line})
        emit("candidate", model="pixel_lightgbm", score=score, **detail, detail=line)

    def model_failed(self, began: float, exc: Exception) -> None:
        """The model's failure, said; whatever was submitted before it stands."""
        self.race.append({"family": "pixel_lightgbm", "status": "failed", "seconds": round(time.monotonic() - began, 2),
                          "reason": f"{type(exc).__name__}: {exc}"})
        emit("candidate_failed", model="pixel_lightgbm", message=f"{type(exc).__name__}: {exc}")

    def finish(self, column: str, held: int, n_train: int, n_test: int, task: str) -> dict:
        """The solve's record, written where every solve writes it, and returned."""
        record = SolveResult.model_validate({
            "validation_score": self.best, "model": self.best_model, "models_per_target": {column: self.best_model},
            "submission_from": "this_solve", "higher_is_better": self.higher, "metric": "setup", "cv": self.cv,
            "race": self.race, "validation": {"kind": "held-out pictures", "pictures": held},
            "folds": 1, "n_train": n_train, "n_test": n_test, "light": self.light, "seed": self.seed,
            "time_budget_s": self.budget, "submission_path": str(self.out), "elapsed_s": round(self.elapsed(), 3),
            "time_to_first_submission_s": round(self.first_submission_s or 0.0, 3), "timeline": self.timeline,
            "candidates": [], "task": task,
        }).to_json()
        atomic_write_json(SolveResult.path_in(self.workspace / "solve"), record)
        emit("done", validation_score=self.best, model=self.best_model, elapsed_s=round(self.elapsed(), 3))
        return record

    def score(self, truth: list[np.ndarray], predicted: list[np.ndarray]) -> float:
        scale = self.to_submission
        return score_pictures(self.metric, [t * scale for t in truth], [p * scale for p in predicted])

    def submit(self, name: str, score: float, predict: Callable[[np.ndarray], np.ndarray], test: _Pictures) -> bool:
        """Predict every test picture, and adopt the submission when `score` beats the record."""
        if self.best is not None and not self.direction.better(score, self.best):
            return False
        began = time.monotonic()
        folder = self.workspace / "solve" / "pictures" / name
        paths = []
        for image_id, picture in zip(test.ids, test.inputs):
            path = folder / f"{image_id}.npy"
            save_prediction(predict(picture) * self.to_submission, path)
            paths.append(os.path.relpath(path, self.setup))
        pred = pd.DataFrame({"id": test.ids, self.target["column"]: paths})
        formatted = self.submission_module.format_submission(pred)
        record = SubmissionRecord(model=name, validation_score=score, metric="setup", higher_is_better=self.higher,
                                  setup_fingerprint=setup_fingerprint(self.setup, test.ids))
        adoption = adopt_submission(self.out, lambda tmp: write_pixel_csv(formatted, tmp), record, force=self.light)
        self.best, self.best_model = score, name
        self.submit_s = time.monotonic() - began
        self.timeline.append((round(self.elapsed(), 3), score))
        self.first_submission_s = self.first_submission_s or self.elapsed()
        emit("submission" if adoption.written else "submission_kept", path=str(self.out), model=name,
             validation_score=score, reason=adoption.reason, elapsed_s=round(self.elapsed(), 2))
        return True


def _rows_for(seconds: float, n_pixels: int, light: bool) -> int:
    if light:
        return min(n_pixels, 20_000)
    return int(min(n_pixels, _MAX_ROWS, max(50_000, seconds * _ROWS_PER_SECOND)))


def _split(n: int, rng: np.random.Generator) -> tuple[list[int], list[int]]:
    """(held-out, fitted) picture indices; one picture alone is both."""
    order = rng.permutation(n).tolist()
    if n < 2:
        return order, order
    n_held = min(_MAX_HELD, max(1, int(round(_HELD_OUT * n))))
    return order[:n_held], order[n_held:]


def _fit_model(run: PictureSolve, train: _Pictures, held: list[int], fit: list[int], test: _Pictures,
               rng: np.random.Generator) -> tuple[PixelModel, float, str]:
    """The pixel model, its held-out score, and a line saying what it was fitted on."""
    assert train.targets is not None
    n_pixels = sum(train.inputs[i].size for i in fit)
    rows = _rows_for(0.45 * run.left() if run.budget is not None else 120.0, n_pixels, run.light)
    rows_train, rows_stop = PixelRows(), PixelRows()
    per_picture = max(1, rows // max(len(fit), 1))
    for i in fit:
        rows_train.add(train.inputs[i], train.targets[i], per_picture, rng)
    for i in held:
        rows_stop.add(train.inputs[i], train.targets[i], max(1, min(per_picture, 50_000)), rng)
    # The fit may take what is left but predicting the held-out and test pictures: it stops growing
    # trees once predicting those pixels with every tree so far (priced as it goes) would not end
    # in time. A fixed share for the fit (60 %) left a third of its trees cut at 2 M rows; a margin
    # of 15 % of the time left ended the solve at 480 s of 600 (the cut below still guards).
    # Writing the submission again costs what the first one did (millions of rows), past the prediction.
    due = None
    if run.budget is not None:
        pixels = sum(train.inputs[i].size for i in held) + sum(p.size for p in test.inputs)
        featurise = rows_train.featurise_s / max(rows_train.pixels, 1) * pixels
        due = PredictionDue(pixels, time.monotonic() + 0.92 * run.left() - 1.2 * run.submit_s - featurise)
    deadline = time.monotonic() + (0.9 * run.left() if run.budget is not None else 600.0)
    model = fit_pixel_model(rows_train, rows_stop, deadline, run.threads, run.seed, light=run.light, due=due)
    line = f"{rows_train.size} pixels of {len(fit)} pictures, {model.trees} trees"
    pixels_left = sum(train.inputs[i].size for i in held[1:]) + sum(p.size for p in test.inputs)
    seconds = 0.9 * run.left() - 1.2 * run.submit_s
    cut = model.fit_prediction_into(train.inputs[held[0]], pixels_left, max(seconds, 0.0))
    if cut:
        line += f"; {cut}"
        emit("pixel_model_cut", message=cut)
    if model.use_trees == 0:
        raise TimeoutError(cut)
    predicted = [model.predict(train.inputs[i]) for i in held]
    return model, run.score([train.targets[i] for i in held], predicted), line


def solve_pictures(workspace: Path, out: Path, budget: float | None, seed: int, light: bool) -> dict:
    """Identity first, then the boosted pixel model; returns (and writes) the solve's record."""
    mask = picture_target(workspace / "setup", (MASK_TASK,))
    if mask is not None and mask.get("output") == BOX_OUTPUT:
        from solve_pipeline.pixels.boxes import solve_boxes  # boxes: masks whose objects are boxes

        return solve_boxes(workspace, out, budget, seed, light)
    if mask is not None:
        from solve_pipeline.pixels.masks import solve_masks  # a mask target has a solve of its own

        return solve_masks(workspace, out, budget, seed, light)
    run = PictureSolve(workspace, out, budget, seed, light)
    target = run.target
    train = _read(run.setup, "train", target, limit=LIGHT_PAIRS if light else None)
    test = _read(run.setup, "test", target)
    assert train.targets is not None
    rng = np.random.default_rng(seed)
    held, fit = _split(len(train.ids), rng)
    emit("start", n_train=len(train.ids), n_test=len(test.ids), held_out_pictures=len(held), task="image_to_image")

    identity = run.score([train.targets[i] for i in held], [train.inputs[i] for i in held])
    run.cv["identity"] = identity
    run.race.append({"family": "identity", "status": "finished", "first_fold_score": identity, "seconds": 0.0})
    best: tuple[str, float, Callable[[np.ndarray], np.ndarray]] = ("identity", identity, lambda picture: picture)
    # A valid submission in seconds. The light check writes only this one: the model below is fitted
    # and scored on a held-out picture all the same, and predicting every test picture is the
    # full solve's work.
    run.submit(*best, test)
    began = time.monotonic()
    try:
        model, score, line = _fit_model(run, train, held, fit, test, rng)
        run.model_finished(began, score, line, trees=model.use_trees or model.trees)
        if run.direction.better(score, identity):
            best = ("pixel_lightgbm", score, model.predict)
    except Exception as exc:  # noqa: BLE001 - the identity submission stands; say why the model did not
        run.model_failed(began, exc)
    if not light and best[0] != "identity":
        run.submit(*best, test)
    return run.finish(target["column"], len(held), len(train.ids), len(test.ids), "image_to_image")
