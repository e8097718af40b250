"""The blending tool: combine solutions' out-of-fold predictions once enough solutions exist.

Four blenders are tried: a non-negative weighted average (weights on the simplex, fitted by a
smooth surrogate loss: log loss for classification, squared error for regression), and three
stacking levels over the OOF predictions (stackers.py): a linear one (it can sharpen and re-weigh
per class, which won on spooky-author-identification, log loss 0.308 vs the average's 0.329 out of
fold), a small MLP, and boosting that also reads the table's own columns. Each blender is itself
scored out of fold with CV over the OOF rows (fitted on some rows, scored on others), and a blend
is kept only when that nested score beats the best single solution; otherwise the best single
solution is returned as is.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from scipy.optimize import minimize

from agentk.core.artifacts import Task
from agentk.core.metrics.direction import Direction
from agentk.core.metrics.functions import class_log_loss
from solve_pipeline.base.folds import make_folds
from solve_pipeline.blend.stackers import BoostedStacker, LinearStacker, MLPBlender, boosted_applies, stack_features

Method = Literal["best_single", "weighted", "stack", "mlp", "boosted"]
PROBE_EPOCHS = 4  # the MLP's pace is measured on this many epochs when time is short
PROBE_ROWS = 20_000  # ... on at most this many rows, scaled to all of them


@dataclass
class Solution:
    name: str
    oof: np.ndarray   # (n,) regression value or P(class 1), or (n, K) class probabilities
    test: np.ndarray  # same layout over the test rows


@dataclass
class BestBlend:
    """The best blender's nested out-of-fold predictions, its score and its test predictions."""

    method: Method
    score: float
    oof: np.ndarray
    test: np.ndarray


@dataclass
class BlendResult:
    method: Method
    score: float
    single_scores: dict[str, float]
    weights: dict[str, float] | None  # the weighted-average blender's weights, when fitted
    oof: np.ndarray
    test: np.ndarray
    blend_scores: dict[str, float] = field(default_factory=dict)  # nested-CV score per blender
    dropped: dict[str, str] = field(default_factory=dict)  # blender -> why it did not fit the time left
    best_blend: BestBlend | None = None  # the best blender, winner or not (see `keep_best_blend`)
    # The best blender as fitted on every row, for a predictor of unseen rows: the weights of
    # "weighted", else the fitted stacker; `with_table`: it also read the table's columns.
    blender: object = None
    with_table: bool = False


# Shifts the blender's nested folds off the solutions' CV folds (see blend).
BLEND_FOLD_SEED_OFFSET = 7919


def _layout(pred: np.ndarray, task: Task) -> np.ndarray:
    """Binary as (n,) P(class 1) even when given as two columns; multiclass as (n, K)."""
    pred = np.asarray(pred, dtype=np.float64)
    if task == "binary" and pred.ndim == 2:
        pred = pred[:, -1]
    if task == "regression" and pred.ndim == 2 and pred.shape[1] == 1:
        pred = pred[:, 0]
    if task == "multiclass" and pred.ndim != 2:
        raise ValueError("multiclass predictions must be (n, K) probabilities")
    return pred


def _surrogate_loss(pred: np.ndarray, y: np.ndarray, task: Task) -> float:
    if task == "regression":
        return float(np.mean((pred - y) ** 2))
    return class_log_loss(y, pred)


def _combine(preds: list[np.ndarray], weights: np.ndarray) -> np.ndarray:
    return sum(w * p for w, p in zip(weights, preds, strict=True))


class _OutOfTime(Exception):
    pass


def fit_weights(preds: list[np.ndarray], y: np.ndarray, task: Task, deadline: float | None = None) -> np.ndarray:
    """Non-negative weights summing to 1 that minimise the surrogate loss of the average.

    A smooth surrogate rather than the competition metric, because metrics such as accuracy
    or AUC are piecewise constant in the weights and give the optimiser nothing to follow.
    Past `deadline` (time.monotonic()) the search stops with the best weights it has seen.
    """
    m = len(preds)
    start = np.full(m, 1.0 / m)
    seen = {"loss": np.inf, "w": start}

    def loss(w: np.ndarray) -> float:
        if deadline is not None and time.monotonic() > deadline:
            raise _OutOfTime
        value = _surrogate_loss(_combine(preds, w), y, task)
        if value < seen["loss"] and np.all(np.isfinite(w)) and abs(np.sum(w) - 1.0) < 1e-6 and np.all(w >= -1e-9):
            seen["loss"], seen["w"] = value, np.array(w, dtype=np.float64)
        return value

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            found = minimize(loss, start, method="SLSQP", bounds=[(0.0, 1.0)] * m,
                             constraints=[{"type": "eq", "fun": lambda w: np.sum(w) - 1.0}],
                             options={"maxiter": 200, "ftol": 1e-10}).x
        except _OutOfTime:
            found = seen["w"]
    weights = np.clip(found if np.all(np.isfinite(found)) else start, 0.0, None)
    weights[weights < 1e-6] = 0.0
    return weights / weights.sum() if weights.sum() > 0 else start


def blend(solutions: list[Solution], y: np.ndarray, task: Task,
          score_fn: Callable[[np.ndarray, np.ndarray], float], higher_is_better: bool,
          blend_after: int = 3, folds: int = 5, seed: int = 0, deadline: float | None = None,
          table: tuple[np.ndarray, np.ndarray] | None = None, splits: list[tuple] | None = None,
          keep_best_blend: bool = False) -> BlendResult:
    """Blend when at least `blend_after` solutions exist and a blend beats the best single one.

    `score_fn(y, pred)` scores predictions in the solutions' layout (higher or lower better as
    `higher_is_better` says). `y` holds class indices 0..K-1 for classification.
    With a `deadline` (time.monotonic()), a blender whose projected cost no longer fits the time
    left is dropped (recorded in `dropped`); with none left, the best single solution stands.
    `table` (train, test) holds the table's own columns, row for row, for the boosted stacker.
    `splits`: the blenders' nested folds; None: shuffled (stratified) folds off the solutions' own.
    `keep_best_blend`: the best blender's predictions go to `best_blend` even when it loses.
    """
    if not solutions:
        raise ValueError("no solutions to blend")
    y = np.asarray(y)
    oofs = [_layout(s.oof, task) for s in solutions]
    tests = [_layout(s.test, task) for s in solutions]
    for s, oof, test in zip(solutions, oofs, tests, strict=True):
        if len(oof) != len(y) or oof.shape[1:] != oofs[0].shape[1:] or \
                test.shape[1:] != oofs[0].shape[1:] or len(test) != len(tests[0]):
            raise ValueError(f"solution {s.name!r} has predictions of mismatched shape")

    single = {s.name: float(score_fn(y, oof)) for s, oof in zip(solutions, oofs, strict=True)}
    direction = Direction(higher_is_better)
    # A solution the metric could not score (NaN) never stands as the best; when none scores, the first.
    best = direction.best(range(len(solutions)), key=lambda i: single[solutions[i].name])
    best = 0 if best is None else best
    result = BlendResult("best_single", single[solutions[best].name], single, None,
                         oofs[best], tests[best])
    if len(solutions) < blend_after:
        return result
    if task != "regression" and len(np.unique(y)) < 2:
        return result  # one class: every solution already predicts it; nothing to weigh

    n_classes = oofs[0].shape[1] if task == "multiclass" else (2 if task == "binary" else 0)
    # A partition other than the solutions' own CV folds: a family whose one fold was cut short (its
    # out-of-fold rows there much worse) looked excellent on the other folds, and a blender tried
    # on the same folds weighted it up and met that fold unseen (house prices: nested 0.150 where
    # the weights fitted on every row score 0.119). Every row is out of fold either way.
    if splits is None:
        splits = make_folds(len(y), folds, seed + BLEND_FOLD_SEED_OFFSET, None if task == "regression" else y)
    features = stack_features(oofs, task)
    if table is not None and (len(table[0]) != len(y) or len(table[1]) != len(tests[0])):
        table = None  # rows that do not line up with the predictions' are no help
    boosted_features = features if table is None else np.hstack([features, table[0]])
    names = ["weighted", "stack", "mlp"] + (["boosted"] if boosted_applies(task, n_classes) else [])
    nested = {name: np.zeros_like(oofs[0]) for name in names}
    active = list(nested)
    if deadline is not None:
        # The MLP cannot be stopped once fitting: one fit's cost is projected from a few epochs
        # first (an upper bound: it often converges before max_iter; the first fit also pays the
        # imports, so the pace is the difference of two probes), and the MLP is left out when
        # even one fit would not fit the time left. After each fold the measured pace decides.
        # Probed on a slice of the rows and scaled up: on 4M rows the probe's own fits took
        # 100 s past the budget to find that one fit needs an hour and a half.
        rows = min(len(y), PROBE_ROWS)
        at = np.sort(np.random.default_rng(seed).choice(len(y), rows, replace=False))  # every class, whatever the order
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            MLPBlender(task, n_classes, seed, max_iter=1).fit(features[at], y[at])
            began = time.monotonic()
            MLPBlender(task, n_classes, seed, max_iter=1).fit(features[at], y[at])
            one = time.monotonic() - began
            MLPBlender(task, n_classes, seed, max_iter=1 + PROBE_EPOCHS).fit(features[at], y[at])
            more = time.monotonic() - began - one
        per_epoch = max(more - one, 0.0) / PROBE_EPOCHS * len(y) / rows
        per_fit = max(one - per_epoch * rows / len(y), 0.0) + per_epoch * MLPBlender.max_iter
        if per_fit > deadline - time.monotonic():
            active.remove("mlp")
            result.dropped["mlp"] = f"one fit projected {per_fit:.0f} s, {max(deadline - time.monotonic(), 0):.0f} s left"
    spent = dict.fromkeys(nested, 0.0)
    for index, (train_idx, valid_idx) in enumerate(splits):
        for name in list(active):
            began = time.monotonic()
            if name == "weighted":
                weights = fit_weights([p[train_idx] for p in oofs], y[train_idx], task, deadline)
                nested[name][valid_idx] = _combine([p[valid_idx] for p in oofs], weights)
            elif name == "stack":
                stacker = LinearStacker(task, n_classes).fit(features[train_idx], y[train_idx])
                nested[name][valid_idx] = stacker.predict(features[valid_idx])
            elif name == "boosted":
                # Boosting could take every second left: each fit gets a share of it, so the
                # other blenders' folds and its own refit still fit (a fit cut short keeps its trees).
                cap = _fit_share(deadline, len(splits) - index + 1)
                boosted = BoostedStacker(task, n_classes, seed, cap).fit(boosted_features[train_idx], y[train_idx])
                nested[name][valid_idx] = boosted.predict(boosted_features[valid_idx])
            else:
                mlp = MLPBlender(task, n_classes, seed).fit(features[train_idx], y[train_idx])
                nested[name][valid_idx] = mlp.predict(features[valid_idx])
            spent[name] += time.monotonic() - began
        if deadline is None:
            continue
        # The folds still to go and the final refit, at the pace measured so far; the dearest
        # blender goes first when they do not all fit.
        for name in sorted(active, key=lambda b: -spent[b]):
            left = deadline - time.monotonic()
            need = sum(spent[b] / (index + 1) * (len(splits) - index) for b in active)
            if need <= left and time.monotonic() <= deadline:
                break
            active.remove(name)
            result.dropped[name] = f"needs ~{need:.0f} s more, {max(left, 0):.0f} s left"
    if not active:
        return result
    result.blend_scores = {name: float(score_fn(y, nested[name])) for name in active}

    full_weights = fit_weights(oofs, y, task, deadline)
    result.weights = {s.name: float(w) for s, w in zip(solutions, full_weights, strict=True)}
    winner = direction.best(result.blend_scores, key=lambda name: result.blend_scores[name])
    if winner is None:
        return result
    wins = direction.better(result.blend_scores[winner], result.score)
    # A losing blend is still worth its refit where the caller weighs it as a challenger (a blend
    # within noise of the best single model may generalise better: choice_rule.py), time allowing.
    if not wins and not (keep_best_blend and (deadline is None or time.monotonic() < deadline)):
        return result

    if winner == "weighted":
        result.blender = full_weights
    elif winner == "stack":
        result.blender = LinearStacker(task, n_classes).fit(features, y)
    elif winner == "boosted":
        result.with_table = table is not None
        # Never cut shorter than its folds ran: a refit of a few trees would not be the blender scored.
        cap = None if deadline is None else max(_fit_share(deadline, 1) or 0.0,
                                                time.monotonic() + 1.5 * spent["boosted"] / len(splits))
        result.blender = BoostedStacker(task, n_classes, seed, cap).fit(boosted_features, y)
    else:
        result.blender = MLPBlender(task, n_classes, seed).fit(features, y)
    test = blended_test(winner, result.blender, tests, task, table[1] if result.with_table and table else None)
    result.best_blend = BestBlend(winner, result.blend_scores[winner], nested[winner], test)
    if wins:
        result.method, result.score = winner, result.blend_scores[winner]
        result.oof, result.test = nested[winner], test
    return result


def blended_test(method: str, blender: object, tests: list[np.ndarray], task: Task,
                 table: np.ndarray | None = None) -> np.ndarray:
    """The fitted blender over the solutions' test predictions (in `_layout`), beside the table's
    columns where it read them: the blend's test side, for the run's rows and unseen ones alike."""
    if method == "weighted":
        return _combine(tests, blender)  # type: ignore[arg-type]
    features = stack_features(tests, task)
    if table is not None:
        features = np.hstack([features, table])
    return blender.predict(features)  # type: ignore[attr-defined]


def _fit_share(deadline: float | None, fits_left: int) -> float | None:
    """The deadline of one boosted fit: half the time left shared by the fits still to go."""
    if deadline is None:
        return None
    now = time.monotonic()
    return now + max(deadline - now, 0.0) / (2 * max(fits_left, 1))


def as_class_matrix(pred: np.ndarray, task: Task) -> np.ndarray:
    """Back to the solver's layout: (n, K) probabilities for classification, (n,) otherwise."""
    if task == "binary" and pred.ndim == 1:
        return np.column_stack([1.0 - pred, pred])
    return pred
