"""One temperature for a matrix of class probabilities: softmax(log p / T), with T fitted by the
log loss. The race's fold scores (cv.py) and the calibration of finished runs (calibration.py) use it."""

from __future__ import annotations

import math

import numpy as np

LOG_T_BOUNDS = (math.log(0.05), math.log(20.0))
_FLOOR = 1e-12


def tempered(proba: np.ndarray, temperature: float) -> np.ndarray:
    """softmax(log p / T), row-wise; T > 1 softens, T < 1 sharpens."""
    logits = np.log(np.clip(np.asarray(proba, dtype=np.float64), _FLOOR, 1.0)) / temperature
    logits -= logits.max(axis=1, keepdims=True)
    weights = np.exp(logits)
    return weights / weights.sum(axis=1, keepdims=True)


def _nll(proba: np.ndarray, y: np.ndarray) -> float:
    return float(-np.mean(np.log(np.clip(proba[np.arange(len(y)), y], _FLOOR, 1.0))))


def fit_temperature(proba: np.ndarray, y: np.ndarray) -> float:
    """The T minimising the log loss of `proba` on labels `y` (class indices)."""
    from scipy.optimize import minimize_scalar  # here: scipy.optimize costs every importer of cv.py 1 s of CPU

    if len(y) == 0:
        return 1.0
    result = minimize_scalar(lambda log_t: _nll(tempered(proba, math.exp(log_t)), y),
                             bounds=LOG_T_BOUNDS, method="bounded", options={"xatol": 1e-3})
    return float(math.exp(result.x))
