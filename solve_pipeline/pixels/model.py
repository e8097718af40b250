"""A boosted pixel model: LightGBM over each pixel's features (features.py), fitted on pixels drawn
from the training pictures and stopped early on pixels of pictures it never saw.

Pixels of one picture are near copies of each other, so the stopping rows and every score come
from held-out *pictures*; and the rows drawn favour the few informative pixels (ink, stains,
edges) over the plain paper that makes up most of a page.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from solve_pipeline.base.baseline_models import lightgbm_deadline
from solve_pipeline.pixels.features import pixel_features


@dataclass
class PixelRows:
    """Training or stopping rows: features, targets (0..1) and the picture each row came from."""

    x: list[np.ndarray] = field(default_factory=list)
    y: list[np.ndarray] = field(default_factory=list)
    featurise_s: float = 0.0  # what computing the pictures' features took, and over how many pixels
    pixels: int = 0

    def add(self, picture: np.ndarray, target: np.ndarray, n: int, rng: np.random.Generator) -> None:
        began = time.monotonic()
        features = pixel_features(picture)
        self.featurise_s += time.monotonic() - began
        self.pixels += picture.size
        flat = target.ravel()
        if n >= flat.size:
            chosen = np.arange(flat.size)
        else:
            # Half the draw where the input differs from plain paper (ink, stains, edges), half uniform.
            busy = np.abs(features[:, 0] - np.median(features[:, 0])) + np.abs(flat - features[:, 0])
            weights = busy / busy.sum() if busy.sum() > 0 else None
            half = n // 2
            chosen = np.unique(np.concatenate([
                rng.choice(flat.size, size=half, replace=False, p=weights),
                rng.choice(flat.size, size=n - half, replace=False)]))
        self.x.append(features[chosen])
        self.y.append(flat[chosen])

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        return np.concatenate(self.x), np.concatenate(self.y)

    @property
    def size(self) -> int:
        return sum(len(y) for y in self.y)


@dataclass
class PixelModel:
    """A fitted booster; `predict` maps a picture (0..1) to its predicted target picture (0..1)."""

    booster: object
    trees: int
    fit_s: float

    threads: int = 1
    use_trees: int | None = None  # fewer than `trees` when predicting every test picture with all would not fit
    featurise: Callable[[np.ndarray], np.ndarray] = pixel_features  # what the model was fitted on

    def predict(self, picture: np.ndarray) -> np.ndarray:
        values = self.booster.predict(self.featurise(picture), num_iteration=self.use_trees or self.trees,  # type: ignore[attr-defined]
                                      num_threads=self.threads)
        return np.clip(values, 0.0, 1.0).reshape(picture.shape).astype(np.float32)

    def fit_prediction_into(self, picture: np.ndarray, pixels_left: int, seconds: float) -> str | None:
        """Price predicting `pixels_left` more pixels on `picture`; keep only as many trees as fit
        `seconds`. Returns what was cut (None when all trees fit)."""
        if not np.isfinite(seconds):
            return None  # no budget: every tree
        began = time.monotonic()
        features = self.featurise(picture)
        featurise = time.monotonic() - began
        self.booster.predict(features, num_iteration=self.trees, num_threads=self.threads)  # type: ignore[attr-defined]
        per_tree = max(time.monotonic() - began - featurise, 1e-6) / self.trees
        pictures = pixels_left / max(picture.size, 1)
        affordable = int((seconds / max(pictures, 1e-9) - featurise) / per_tree)
        if affordable >= self.trees:
            return None
        self.use_trees = max(affordable, 0)
        return (f"predicting {pictures:.0f} more pictures with {self.trees} trees needs "
                f"~{pictures * (featurise + per_tree * self.trees):.0f} s of {seconds:.0f} s: {self.use_trees} trees kept")


@dataclass(frozen=True)
class PredictionDue:
    """Pixels the fitted model must still predict (`pixels`), and when that must be done: the fit
    stops growing trees once predicting them all with the trees grown so far would end later."""

    pixels: int
    finish_by: float  # time.monotonic()
    every: int = 25  # trees between checks


def _prediction_due(due: PredictionDue, sample: np.ndarray) -> Callable:
    """LightGBM callback: stop when now + (predicting `due.pixels` with every tree so far) passes
    `due.finish_by`. The pace of prediction is timed on `sample` rows with the model as it stands
    (every few hundred trees again: deeper trees cost more)."""
    import lightgbm as lgb

    per_row_tree: list[float] = []

    def callback(env: object) -> None:
        trees = env.iteration + 1  # type: ignore[attr-defined]
        if trees % due.every:
            return
        if not per_row_tree or trees % (8 * due.every) == 0:
            began = time.monotonic()
            env.model.predict(sample, num_iteration=trees)  # type: ignore[attr-defined]
            per_row_tree[:] = [(time.monotonic() - began) / (len(sample) * trees)]
        if time.monotonic() + per_row_tree[0] * due.pixels * trees > due.finish_by:
            raise lgb.callback.EarlyStopException(env.iteration, env.evaluation_result_list)  # type: ignore[attr-defined]

    callback.order = 45  # type: ignore[attr-defined]  # after the deadline's
    return callback


def fit_pixel_model(train: PixelRows, stop: PixelRows, deadline: float, threads: int, seed: int,
                    max_trees: int = 2000, light: bool = False, objective: str = "regression",
                    featurise: Callable[[np.ndarray], np.ndarray] = pixel_features,
                    due: PredictionDue | None = None) -> PixelModel:
    """LightGBM on the drawn pixels, stopped early on the held-out pictures' pixels or at `deadline`,
    or (`due`) once predicting the pixels still to predict would not end in time.
    `objective` "binary" makes it a classifier of 0/1 pixels (a mask), predicting probabilities;
    `featurise` is what the rows were drawn from."""
    import lightgbm as lgb

    x, y = train.arrays()
    vx, vy = stop.arrays()
    params = {"objective": objective, "learning_rate": 0.1 if light else 0.05, "num_leaves": 15 if light else 127,
              "min_data_in_leaf": 20, "feature_fraction": 0.8, "bagging_fraction": 0.8, "bagging_freq": 1,
              "lambda_l2": 1.0, "num_threads": threads, "seed": seed, "verbose": -1}
    began = time.monotonic()
    callbacks = [lgb.early_stopping(50, verbose=False), lightgbm_deadline(deadline)]
    if due is not None:
        callbacks.append(_prediction_due(due, vx[:20_000]))
    booster = lgb.train(params, lgb.Dataset(x, y, free_raw_data=True), num_boost_round=50 if light else max_trees,
                        valid_sets=[lgb.Dataset(vx, vy)], callbacks=callbacks)
    trees = booster.best_iteration or booster.current_iteration()
    return PixelModel(booster, int(trees), time.monotonic() - began, threads=threads, featurise=featurise)
