"""Temperature calibration of class probabilities, for metrics that read them (log loss above all).

A model's probabilities are often too timid (a regularised logistic model on 99 classes) or too
bold (boosting): dividing the log-probabilities by one temperature T fixes most of it without
changing any argmax, so a label metric never moves and a probability metric often moves a lot
(measured on leaf-classification: logistic log loss 0.115 -> 0.032 out of fold). One scalar per
target is fitted on out-of-fold rows by the log loss, cross-fitted (each fold's rows calibrated by a
T fitted on the other folds' rows) so the calibrated OOF score stays honest, and kept only when the
setup's own metric on that cross-fitted OOF beats the raw one. Test rows get the T fitted on all rows.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize_scalar

from solve_pipeline.cv import CandidateRun, CVContext, cv_score, emit, score_outputs

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
    if len(y) == 0:
        return 1.0
    result = minimize_scalar(lambda log_t: _nll(tempered(proba, math.exp(log_t)), y),
                             bounds=LOG_T_BOUNDS, method="bounded", options={"xatol": 1e-3})
    return float(math.exp(result.x))


def cross_fitted(oof: np.ndarray, y: np.ndarray, folds: list[tuple]) -> tuple[np.ndarray, list[float]]:
    """OOF probabilities with each fold's rows tempered by a T fitted on the other folds' rows."""
    out = np.array(oof, dtype=np.float64, copy=True)
    temperatures = []
    for train_rows, valid_rows in folds:
        t = fit_temperature(oof[train_rows], y[train_rows])
        out[valid_rows] = tempered(oof[valid_rows], t)
        temperatures.append(t)
    return out, temperatures


@dataclass(frozen=True)
class Calibration:
    target: str
    temperature: float  # applied to test rows; 1.0 when not kept
    raw_score: float
    score: float  # the setup's metric on the cross-fitted calibrated OOF
    kept: bool

    def to_json(self) -> dict[str, object]:
        return {"temperature": round(self.temperature, 4), "raw_score": self.raw_score, "score": self.score,
                "kept": self.kept}


# (target column, calibrated OOF of that target) -> the whole frame's metric, others held.
FrameScorer = Callable[[str, np.ndarray], float]


def calibrate_target(column: str, oof: np.ndarray, y: np.ndarray, folds: list[tuple], raw_score: float,
                     score: FrameScorer, better: Callable[[float, float], bool]) -> tuple[Calibration, np.ndarray]:
    """The calibration of one classification target and its cross-fitted OOF (raw when not kept)."""
    calibrated, _ = cross_fitted(oof, y, folds)
    new_score = score(column, calibrated)
    t_all = fit_temperature(oof, y)
    # A T this close to 1 changes nothing worth a second set of predictions.
    kept = abs(math.log(t_all)) > 0.01 and better(new_score, raw_score)
    record = Calibration(column, t_all if kept else 1.0, raw_score, new_score, kept)
    return record, (calibrated if kept else oof)


def calibrate_run(run: CandidateRun, ctx: CVContext) -> float:
    """Temper the run's classification targets in place where the setup's metric gains, once per
    run; returns the run's (possibly calibrated) CV score. Light solves and runs whose OOF are not
    complete are left alone."""
    if run.calibration is not None or ctx.light or not run.complete(len(ctx.folds)):
        return cv_score(run, ctx)
    score = cv_score(run, ctx)
    report: dict[str, object] = {}
    for spec in ctx.targets:
        if not spec.is_classification or spec.n_classes < 2 or not math.isfinite(score):
            continue
        held = dict(run.oof)

        def frame_score(column: str, calibrated: np.ndarray, held: dict = held) -> float:
            return score_outputs(ctx, None, {**held, column: calibrated})

        record, oof = calibrate_target(spec.column, run.oof[spec.column], ctx.y[spec.column].astype(int),
                                       ctx.folds, score, frame_score, ctx.direction.better)
        report[spec.column] = record.to_json()
        if record.kept:
            run.oof[spec.column] = oof
            run.test[spec.column] = tempered(run.test[spec.column], record.temperature)
            score = record.score
    run.calibration = report
    if any(r["kept"] for r in report.values()):  # type: ignore[index]
        emit("calibrated", model=run.name, targets=report)
    return score
