"""Regressors fitted on log1p of a non-negative target and answering on the target's own scale.

Counts and sales are skewed and judged relatively (SMAPE, RMSLE): a model of log1p(y) fits the
multiplicative seasonality and promotions that a model of y spreads over many trees, and never
predicts below zero. Relative to a level (a series' recent mean, read from a column of X), the
model learns the deviations that every series shares, whatever its size, and a series that has
drifted keeps its new level. Whether either pays is the race's decision (fold scores), not a rule
here; a target with negative values is fitted as it is.
"""

from __future__ import annotations

from typing import Any

import numpy as np


class Log1pTarget:
    """Model wrapper: `inner` learns log1p(y) - log1p(level) when every training y is >= 0, the
    level read from column `level` of X (or `fallback` where that is missing; 0 without either);
    predictions are expm1 of its output plus the level's log1p, floored at 0."""

    def __init__(self, inner: Any, level: int | None = None, fallback: int | None = None) -> None:
        self.inner = inner
        self.level = level
        self.fallback = fallback

    def _offset(self, X: Any) -> np.ndarray | float:
        if self.level is None:
            return 0.0
        base = np.asarray(X[:, self.level], dtype=float).ravel()
        if self.fallback is not None:
            base = np.where(np.isnan(base), np.asarray(X[:, self.fallback], dtype=float).ravel(), base)
        return np.log1p(np.clip(np.nan_to_num(base, nan=0.0), 0, None))

    def fit(self, X: Any, y: np.ndarray, *, X_val: Any | None = None, y_val: np.ndarray | None = None) -> "Log1pTarget":
        y = np.asarray(y, dtype=float)
        self.logged_ = bool(len(y)) and float(np.nanmin(y)) >= 0
        if self.logged_:
            y = np.log1p(y) - self._offset(X)
            if X_val is not None and y_val is not None:
                y_val = np.log1p(np.clip(np.asarray(y_val, dtype=float), 0, None)) - self._offset(X_val)
        self.inner.fit(X, y, X_val=X_val, y_val=y_val)
        return self

    def predict(self, X: Any) -> np.ndarray:
        raw = np.asarray(self.inner.predict(X), dtype=float)
        return np.clip(np.expm1(raw + self._offset(X)), 0, None) if self.logged_ else raw
