"""Metric-aware decoding: how class probabilities become the labels a label metric scores.

Argmax is right for accuracy, but not for F1 (the best threshold is rarely 0.5) nor for ordinal
metrics such as quadratic weighted kappa (the expected class value cut at tuned points beats the
most likely class). The decoder is chosen on out-of-fold predictions with the setup's own metric,
and kept only when a cross-fitted check (fit on one half of the rows, score on the other) beats
argmax, so its validation score is honest. Probabilities are never changed: a metric that reads
them (log loss, AUC) is unaffected.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Literal

import numpy as np

from agentk.core.metrics.direction import Direction

THRESHOLD_GRID = 41
CUTPOINT_GRID = 15
CUTPOINT_SWEEPS = 2


@dataclass(frozen=True)
class Decoder:
    kind: Literal["argmax", "threshold", "cutpoints"]
    values: tuple[float, ...] = ()
    class_values: tuple[float, ...] = ()  # cutpoints: the classes as numbers, in class-index order

    def labels(self, proba: np.ndarray) -> np.ndarray:
        """Class indices for (n, K) probabilities."""
        if self.kind == "threshold":
            return (proba[:, 1] > self.values[0]).astype(int)
        if self.kind == "cutpoints":
            expected = proba @ np.asarray(self.class_values)
            order = np.argsort(self.class_values)
            return order[np.searchsorted(np.asarray(self.values), expected)]
        return proba.argmax(axis=1)


ARGMAX = Decoder("argmax")
# score(decoder, rows) -> the metric on those train rows with the decoder applied (NaN if it fails)
Scorer = Callable[[Decoder, np.ndarray], float]


def numeric_classes(classes: Sequence[object] | None) -> tuple[float, ...] | None:
    """The classes as numbers when every one is a number (ordinal labels such as 3..8)."""
    try:
        values = tuple(float(c) for c in classes or [])
    except (TypeError, ValueError):
        return None
    return values if len(values) >= 3 and len(set(values)) == len(values) else None


def _fit_threshold(proba: np.ndarray, rows: np.ndarray, score: Scorer, direction: Direction) -> Decoder:
    candidates = np.unique(np.quantile(proba[rows, 1], np.linspace(0.02, 0.98, THRESHOLD_GRID)))
    best, best_score = ARGMAX, score(ARGMAX, rows)
    for t in candidates:
        decoder = Decoder("threshold", (float(t),))
        value = score(decoder, rows)
        if direction.better(value, best_score):
            best, best_score = decoder, value
    return best


def _fit_cutpoints(proba: np.ndarray, rows: np.ndarray, class_values: tuple[float, ...], score: Scorer,
                   direction: Direction) -> Decoder:
    """Coordinate search over the cut points between consecutive class values."""
    ordered = sorted(class_values)
    cuts = [(a + b) / 2 for a, b in pairwise(ordered)]
    best = Decoder("cutpoints", tuple(cuts), class_values)
    best_score = score(best, rows)
    for _ in range(CUTPOINT_SWEEPS):
        for i in range(len(cuts)):
            low, high = ordered[i], ordered[i + 1]
            for value in np.linspace(low, high, CUTPOINT_GRID)[1:-1]:
                trial = list(best.values)
                trial[i] = float(value)
                if any(b <= a for a, b in pairwise(trial)):
                    continue
                decoder = Decoder("cutpoints", tuple(trial), class_values)
                result = score(decoder, rows)
                if direction.better(result, best_score):
                    best, best_score = decoder, result
    return best


def fit_decoder(proba: np.ndarray, rows: np.ndarray, classes: Sequence[object] | None, score: Scorer,
                direction: Direction) -> Decoder:
    """The best decoder on these rows: a threshold for two classes, cut points for ordinal ones."""
    if proba.shape[1] == 2:
        return _fit_threshold(proba, rows, score, direction)
    class_values = numeric_classes(classes)
    if class_values is None:
        return ARGMAX
    cut = _fit_cutpoints(proba, rows, class_values, score, direction)
    return cut if direction.better(score(cut, rows), score(ARGMAX, rows)) else ARGMAX


def fit_evaluations(n_classes: int, classes: Sequence[object] | None) -> int:
    """How many metric calls one `fit_decoder` makes at most (its search's size)."""
    if n_classes == 2:
        return THRESHOLD_GRID + 1
    class_values = numeric_classes(classes)
    if class_values is None:
        return 0
    return 3 + CUTPOINT_SWEEPS * (len(class_values) - 1) * (CUTPOINT_GRID - 2)


@dataclass(frozen=True)
class DecodingChoice:
    decoder: Decoder
    # The full-OOF argmax score moved by the cross-fitted gain (each half decoded by the decoder
    # fitted on the other half, against argmax on the same halves): comparable with other models.
    score: float
    argmax_score: float
    skipped: str | None = None  # why no search ran (it would not fit the time left)


class _OutOfTime(Exception):
    pass


def choose_decoder(proba: np.ndarray, classes: Sequence[object] | None, score: Scorer, higher: bool,
                   seed: int = 0, deadline: float | None = None) -> DecodingChoice:
    """Fit on all rows; keep it only if the cross-fitted score beats argmax on the same rows.

    With a `deadline` (time.monotonic()), a search whose metric calls would not fit the time left
    (projected from one full-rows call: 99 ordinal classes mean ~7,600 calls) is not started, and
    one that still runs past the deadline is abandoned: argmax stays."""
    n = len(proba)
    everything = np.arange(n)
    began = time.monotonic()
    argmax_score = score(ARGMAX, everything)
    per_call = time.monotonic() - began
    if n < 20:
        return DecodingChoice(ARGMAX, argmax_score, argmax_score)
    if deadline is not None:
        # Two half-row fits and four checks, then (if it wins) one full-rows fit; a half-rows
        # call costs about half a full one, plus the metric's fixed overhead.
        calls = fit_evaluations(proba.shape[1], classes)
        projected = per_call * (0.6 * (2 * calls + 4) + calls)
        left = deadline - time.monotonic()
        if calls and projected > left:
            reason = f"~{3 * calls + 4} metric calls need ~{projected:.0f} s, {max(left, 0):.0f} s left"
            return DecodingChoice(ARGMAX, argmax_score, argmax_score, skipped=reason)

        def timed(decoder: Decoder, rows: np.ndarray) -> float:
            if time.monotonic() > deadline:
                raise _OutOfTime
            return score(decoder, rows)
    else:
        timed = score
    try:
        return _cross_fitted(proba, classes, timed, Direction(higher), seed, argmax_score)
    except _OutOfTime:
        return DecodingChoice(ARGMAX, argmax_score, argmax_score, skipped="the deadline passed mid-search")


def _cross_fitted(proba: np.ndarray, classes: Sequence[object] | None, score: Scorer, direction: Direction,
                  seed: int, argmax_score: float) -> DecodingChoice:
    n = len(proba)
    everything = np.arange(n)
    halves = np.array_split(np.random.default_rng(seed).permutation(n), 2)
    crossed = []
    for fit_rows, check_rows in ((halves[0], halves[1]), (halves[1], halves[0])):
        decoder = fit_decoder(proba, fit_rows, classes, score, direction)
        crossed.append((score(decoder, check_rows), score(ARGMAX, check_rows)))
    honest = float(np.mean([c[0] for c in crossed]))
    baseline = float(np.mean([c[1] for c in crossed]))
    if not direction.better(honest, baseline):
        return DecodingChoice(ARGMAX, argmax_score, argmax_score)
    decoder = fit_decoder(proba, everything, classes, score, direction)
    return DecodingChoice(decoder, argmax_score + (honest - baseline), argmax_score)
