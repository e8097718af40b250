"""The blender's choices follow the solver's shared rules: `Direction` for every comparison (a NaN
never beats a number), the metrics' log loss, and the race's folds."""

from __future__ import annotations

import numpy as np

from agentk.core.metrics.functions import class_log_loss, log_loss
from solve_pipeline.blend import blending
from solve_pipeline.blend.blending import Solution, blend
from solve_pipeline.base.folds import make_folds


RNG = np.random.default_rng(0)
SOLUTIONS = {name: RNG.uniform(size=40) for name in ("broken", "good", "better")}


def _scorer(scores: dict[str, float]):
    """A metric that knows each solution's score and scores anything else (a blend) NaN."""
    def score(_y: np.ndarray, pred: np.ndarray) -> float:
        return next((v for name, v in scores.items() if np.array_equal(pred, SOLUTIONS[name])), float("nan"))
    return score


def test_a_nan_first_solution_is_not_kept_as_best() -> None:
    solutions = [Solution(name, oof, oof[:5]) for name, oof in SOLUTIONS.items()]
    y = (RNG.uniform(size=40) > 0.5).astype(int)
    for higher, expected in ((True, "better"), (False, "good")):
        score = _scorer({"broken": float("nan"), "good": 0.6, "better": 0.7})
        result = blend(solutions, y, "binary", score, higher_is_better=higher, blend_after=5)
        assert result.method == "best_single"
        assert np.array_equal(result.oof, SOLUTIONS[expected])
        assert result.score == result.single_scores[expected]


def test_a_blend_the_metric_cannot_score_is_not_adopted() -> None:
    solutions = [Solution(name, oof, oof[:5]) for name, oof in SOLUTIONS.items()]
    y = (RNG.uniform(size=40) > 0.5).astype(int)
    score = _scorer({"broken": 0.5, "good": 0.6, "better": 0.7})
    result = blend(solutions, y, "binary", score, higher_is_better=True, blend_after=2)
    assert result.method == "best_single" and np.array_equal(result.oof, SOLUTIONS["better"])


def test_the_blenders_surrogate_is_the_metrics_log_loss() -> None:
    y = np.array([0, 2, 1, 2, 0])
    proba = RNG.dirichlet(np.ones(3), size=5)
    assert blending._surrogate_loss(proba, y, "multiclass") == log_loss(y, proba) == class_log_loss(y, proba)
    p = RNG.uniform(size=5)
    assert np.isclose(blending._surrogate_loss(p, y % 2, "binary"), log_loss(y % 2, p))


def test_a_rare_class_still_gets_stratified_folds() -> None:
    y = np.array([0] * 60 + [1] * 37 + [2] * 3)  # class 2 cannot fill five folds
    folds = make_folds(len(y), 5, 0, y)
    for _, valid in folds:
        assert 11 <= int((y[valid] == 0).sum()) <= 13  # stratified: each fold holds a fifth of class 0
