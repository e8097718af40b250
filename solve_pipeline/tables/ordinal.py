"""Ordinal grades read as numbers: a regression on the grade whose prediction is handed on as class
probabilities with that expected value, so the race, the blend and the metric-aware decoding
(decoding.py's cut points on the expected grade) treat it as one more classifier.

A grade target under a label metric (quadratic weighted kappa) is set up as K classes; a classifier
knows nothing of the classes' order, where a regression on the grade does, and cut points fitted
for the metric on its prediction are the usual way such competitions are won. Both are raced, and
the CV keeps the better (or blends them).
"""

from __future__ import annotations

import numpy as np

from solve_pipeline.base.baseline_models import ClassifierBase, LinearModel, Matrix, ModelOptions
from solve_pipeline.base.decoding import numeric_classes
from solve_pipeline.base.setup_modules import TargetSpec

# Probability mass spread evenly over every class: keeps log-probabilities finite (temperature
# fits, log-loss checks) and moves the expected grade by a constant affine map, which the cut
# points absorb.
SMOOTHING = 1e-3


def ordinal_values(spec: TargetSpec) -> tuple[float, ...] | None:
    """The classes as grades (class-index order) when the target is an ordinal classification."""
    return numeric_classes(spec.classes) if spec.is_classification else None


def grade_probabilities(values: np.ndarray, grades: tuple[float, ...]) -> np.ndarray:
    """(n, K) probabilities whose expected grade is each value (clipped to the grades' range): the
    mass is split between the two neighbouring grades, linearly."""
    order = np.argsort(grades)
    ordered = np.asarray(grades, dtype=np.float64)[order]
    v = np.clip(np.asarray(values, dtype=np.float64), ordered[0], ordered[-1])
    upper = np.clip(np.searchsorted(ordered, v, side="right"), 1, len(ordered) - 1)
    lower = upper - 1
    weight = (v - ordered[lower]) / (ordered[upper] - ordered[lower])
    proba = np.zeros((len(v), len(ordered)))
    rows = np.arange(len(v))
    proba[rows, order[lower]] = 1.0 - weight
    proba[rows, order[upper]] += weight
    return (1.0 - SMOOTHING) * proba + SMOOTHING / len(ordered)


class OrdinalRegressionModel(ClassifierBase):
    """Ridge regression on the grade of each row's class (alpha chosen by leave-one-out on modest
    matrices), predicting class probabilities with the regression's value as their expectation."""

    def __init__(self, spec: TargetSpec, options: ModelOptions | None = None) -> None:
        grades = ordinal_values(spec)
        assert grades is not None, "an ordinal model needs numeric classes"
        self.spec = spec
        self.grades = grades
        self.regression = LinearModel(TargetSpec(column=spec.column, task="regression"), options)

    def fit(self, X: Matrix, y: np.ndarray, **_: object) -> OrdinalRegressionModel:
        self.regression.fit(X, np.asarray(self.grades)[y.astype(int)])
        return self

    def predict_proba(self, X: Matrix) -> np.ndarray:
        return grade_probabilities(self.regression.predict(X), self.grades)
