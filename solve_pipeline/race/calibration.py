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
from solve_pipeline.base.cv import CandidateRun, CVContext, cv_score, emit, score_outputs
from solve_pipeline.base.temperature import fit_temperature, tempered


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
