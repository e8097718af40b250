"""Scaled errors of forecasts over many series: RMSSE and its weighted form (the M5 competition's).

RMSSE divides each series' squared forecast errors by the mean squared one-step change of that
series' own training history (from its first non-zero value: a product not yet on sale has no
history), so a series that moves by hundreds a day and one that moves by one count alike; the
root is taken per series and the roots are averaged. The weighted form averages them with each
series' weight (M5: its dollar sales over the last 28 training days). M5 also scores the sums of
its series over 11 levels of its product and store hierarchy; those sums are not made here: the
series are the rows' own.

Neither the scale nor the weight can be read from the answers: they come from the training
history. A caller that knows it passes them per row (`series`, `scale`, `weight`; each row
carries its series' values), as columns of the answer frame named by `context_columns`; the
solver fills them from the series keys and the training target (`forecast_features.
scaled_error_context`). Without them every row is one series of scale 1 and weight 1: the score is
then the RMSE, which ranks forecasts of one series as RMSSE would, not forecasts of many.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from agentk.core.metrics.functions import floats

# Columns of an answer frame (`id` + targets) that carry the history a scaled error needs: the
# series of each row, and per target the scale and weight of that series.
SERIES_COLUMN = "__series__"
_SCALE, _WEIGHT = "__scale__", "__weight__"


def context_columns(target: str) -> tuple[str, str, str]:
    """The answer frame's (series, scale, weight) columns for `target`."""
    return SERIES_COLUMN, f"{_SCALE}{target}", f"{_WEIGHT}{target}"


def context_of(y_true: pd.DataFrame, target: str) -> dict[str, np.ndarray]:
    """The keyword arguments of `rmsse`/`wrmsse` the answer frame holds for `target` (none: {})."""
    names = dict(zip(("series", "scale", "weight"), context_columns(target)))
    return {key: y_true[column].to_numpy() for key, column in names.items() if column in y_true.columns}


def _per_series(y_true: Any, y_pred: Any, series: Any, scale: Any, weight: Any) -> tuple[np.ndarray, np.ndarray]:
    """(each series' root mean scaled squared error, each series' weight)."""
    t, p = floats(y_true), floats(y_pred)
    n = len(t)
    if len(p) != n:
        raise ValueError(f"{n} answers but {len(p)} predictions")
    keys = np.zeros(n, dtype=np.int64) if series is None else pd.factorize(np.asarray(series, dtype=object))[0]
    scales = np.ones(n) if scale is None else floats(scale)
    if not np.all(np.isfinite(scales)) or np.any(scales <= 0):
        raise ValueError("each series' scale must be a positive number")
    weights = np.ones(n) if weight is None else np.clip(np.nan_to_num(floats(weight)), 0.0, None)
    frame = pd.DataFrame({"key": keys, "scaled": (t - p) ** 2 / scales, "weight": weights})
    grouped = frame.groupby("key", sort=False)
    return np.sqrt(grouped["scaled"].mean().to_numpy()), grouped["weight"].mean().to_numpy()


def rmsse(y_true: Any, y_pred: Any, series: Any = None, scale: Any = None, weight: Any = None) -> float:
    """Root mean squared scaled error: the mean over series of sqrt(mean((y - ŷ)² / scale)).
    `weight` is accepted (one context for both forms) and not read."""
    roots, _ = _per_series(y_true, y_pred, series, scale, None)
    return float(np.mean(roots))


def wrmsse(y_true: Any, y_pred: Any, series: Any = None, scale: Any = None, weight: Any = None) -> float:
    """Weighted RMSSE: the series' roots averaged with their weights (equal where none is known
    or every weight is zero)."""
    roots, weights = _per_series(y_true, y_pred, series, scale, weight)
    total = weights.sum()
    return float(np.mean(roots) if total <= 0 else np.dot(roots, weights) / total)


def series_history_scale(grid: np.ndarray, origins: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Each row's scale from its series' history up to its origin: the mean squared one-step change
    of the (series, step) `grid` (NaN where unknown) over the steps from the series' first
    non-zero value to `origins` (inclusive); NaN where fewer than one change is known."""
    started = np.maximum.accumulate(np.nan_to_num(np.abs(grid)) > 0, axis=1)
    change = np.diff(grid, axis=1)
    valid = np.isfinite(change) & started[:, :-1]
    squared = np.where(valid, change, 0.0) ** 2
    # Column o: the changes into steps 1..o (pairs ending at or before the origin).
    sums = np.concatenate([np.zeros((len(grid), 1)), np.cumsum(squared, axis=1)], axis=1)
    counts = np.concatenate([np.zeros((len(grid), 1)), np.cumsum(valid, axis=1)], axis=1)
    at = np.clip(origins, 0, grid.shape[1] - 1)
    n = counts[rows, at]
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where((origins >= 0) & (n > 0), sums[rows, at] / np.maximum(n, 1), np.nan)
