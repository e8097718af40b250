"""Temperature calibration: fitted on out-of-fold rows, cross-fitted, kept only when the metric gains."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import accuracy_score, log_loss

from agentk.core.metrics.direction import Direction
from solve_pipeline.race.calibration import calibrate_target, cross_fitted, fit_temperature, tempered
from solve_pipeline.base.folds import make_folds


def _timid(n: int = 600, k: int = 4, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Labels and probabilities that rank the true class first 90% of the time but far too
    timidly (as a heavily regularised model does)."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n)
    logits = rng.normal(0, 0.3, (n, k))
    right = rng.random(n) < 0.9
    logits[np.arange(n), np.where(right, y, (y + 1) % k)] += 1.0
    proba = np.exp(logits / 4.0)  # temperature 4: nearly uniform
    return y, proba / proba.sum(axis=1, keepdims=True)


def test_tempering_keeps_the_argmax_and_sharpens_timid_probabilities() -> None:
    y, proba = _timid()
    t = fit_temperature(proba, y)
    assert t < 0.5  # recovers a sharpening temperature
    sharp = tempered(proba, t)
    assert np.array_equal(sharp.argmax(axis=1), proba.argmax(axis=1))
    assert np.allclose(sharp.sum(axis=1), 1.0)
    assert log_loss(y, sharp) < 0.8 * log_loss(y, proba)


def test_cross_fitted_rows_use_temperatures_fitted_elsewhere() -> None:
    y, proba = _timid()
    folds = make_folds(len(y), 5, 0, y)
    calibrated, temperatures = cross_fitted(proba, y, folds)
    assert len(temperatures) == 5 and len(set(np.round(temperatures, 6))) > 1
    train, valid = folds[0]
    assert np.allclose(calibrated[valid], tempered(proba[valid], fit_temperature(proba[train], y[train])))


def test_kept_for_log_loss_not_for_a_label_metric() -> None:
    y, proba = _timid()
    folds = make_folds(len(y), 5, 0, y)
    lower = Direction(False).better
    record, oof = calibrate_target("t", proba, y, folds, log_loss(y, proba),
                                   lambda _c, p: log_loss(y, p), lower)
    assert record.kept and record.temperature < 0.5 and record.score < record.raw_score
    assert record.score == pytest.approx(log_loss(y, oof))
    # Accuracy reads labels only: tempering cannot gain, so the raw predictions stay.
    accuracy = accuracy_score(y, proba.argmax(axis=1))
    record, oof = calibrate_target("t", proba, y, folds, accuracy,
                                   lambda _c, p: accuracy_score(y, p.argmax(axis=1)), Direction(True).better)
    assert not record.kept and record.temperature == 1.0 and oof is proba
