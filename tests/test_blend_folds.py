"""The blender's nested CV is tried on a partition other than the solutions' own CV folds: a family
whose one fold was cut short is bad on exactly that fold's rows, and folds shared with the CV
would show the blender a fold it never saw that family fail on."""

from __future__ import annotations

import numpy as np
import pytest

import solve_pipeline.blend.blending as blending
from solve_pipeline.blend.blending import Solution, blend
from solve_pipeline.base.folds import make_folds


def _rmse(y: np.ndarray, pred: np.ndarray) -> float:
    return float(np.sqrt(np.mean((np.ravel(pred) - y) ** 2)))


def _solutions(seed: int) -> tuple[np.ndarray, list[Solution]]:
    rng = np.random.default_rng(1)
    n = 600
    y = rng.normal(size=n)
    # The solver's CV folds (validation.py makes them with the same call and seed).
    cut_short = make_folds(n, 5, seed, None)[0][1]
    steady = y + rng.normal(scale=0.5, size=n)
    uneven = y + rng.normal(scale=0.1, size=n)
    uneven[cut_short] = y[cut_short] + rng.normal(scale=3.0, size=len(cut_short))
    return y, [Solution("steady", steady, steady[:50]), Solution("uneven", uneven, uneven[:50])]


def test_a_family_bad_on_one_cv_fold_still_blends_by_its_weight_on_every_row() -> None:
    y, solutions = _solutions(seed=0)
    result = blend(solutions, y, "regression", _rmse, False, blend_after=2, seed=0)
    assert result.method != "best_single", result.blend_scores
    assert result.blend_scores["weighted"] < _rmse(y, solutions[0].oof)
    assert result.score < _rmse(y, solutions[0].oof)  # better than the steady family alone
    assert result.weights is not None and 0 < result.weights["uneven"] < 0.5


def test_on_the_cv_folds_themselves_the_same_blend_would_be_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """What the separate partition avoids, shown by undoing it."""
    monkeypatch.setattr(blending, "BLEND_FOLD_SEED_OFFSET", 0)
    y, solutions = _solutions(seed=0)
    result = blend(solutions, y, "regression", _rmse, False, blend_after=2, seed=0)
    assert result.blend_scores["weighted"] > _rmse(y, solutions[0].oof)
