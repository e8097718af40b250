"""HEBO tool: tuning a known function, failures, time budget, seeding."""

from __future__ import annotations

import math

import numpy as np
import pytest


from solve_pipeline.race.hebo_tool import (
    HeboConfig,
    SearchParam,
    Trial,
    hebo_missing,
    tune,
)
from solve_pipeline.race.registry import NN_SPACE

pytestmark = pytest.mark.integration

BOWL = [SearchParam(name="x", kind="num", lb=-5, ub=5),
        SearchParam(name="y", kind="num", lb=-5, ub=5)]


def bowl(params: dict) -> float:
    return (params["x"] - 1.0) ** 2 + (params["y"] + 2.0) ** 2


def test_finds_better_than_random_warmup() -> None:
    config = HeboConfig(n_trials=8, n_initial=5, seed=0, higher_is_better=False)
    seen: list[Trial] = []
    result = tune(bowl, BOWL, config, on_trial=seen.append)
    assert len(result.trials) == 8 and seen == result.trials
    warmup = [t.score for t in result.trials[:5]]
    guided = [t.score for t in result.trials[5:]]
    assert min(guided) < float(np.median(warmup))
    assert result.best_score == min(t.score for t in result.trials)
    assert bowl(result.best_params) == pytest.approx(result.best_score)


def test_higher_is_better_maximises() -> None:
    config = HeboConfig(n_trials=4, n_initial=4, seed=1, higher_is_better=True)
    result = tune(lambda p: -bowl(p), BOWL, config)
    assert result.best_score == max(t.score for t in result.trials)


def test_failing_trials_are_recorded_not_raised() -> None:
    calls = {"n": 0}

    def flaky(params: dict) -> float:
        calls["n"] += 1
        if calls["n"] == 1:
            raise RuntimeError("diverged")
        if calls["n"] == 3:
            return math.nan
        return bowl(params)

    result = tune(flaky, BOWL, HeboConfig(n_trials=6, n_initial=5, higher_is_better=False))
    assert len(result.trials) == 6
    errors = [t.error for t in result.trials]
    assert "RuntimeError: diverged" in errors[0]
    assert "non-finite" in errors[2]
    assert all(e is None for i, e in enumerate(errors) if i not in (0, 2))
    assert result.best_score is not None and all(t.seconds >= 0 for t in result.trials)


def test_all_failing_gives_empty_best() -> None:
    def broken(params: dict) -> float:
        raise ValueError("nope")

    result = tune(broken, BOWL, HeboConfig(n_trials=3, higher_is_better=True))
    assert result.best_params is None and result.best_score is None
    assert len(result.trials) == 3


def test_time_budget_stops_early() -> None:
    import time

    def slow(params: dict) -> float:
        time.sleep(0.05)
        return bowl(params)

    result = tune(slow, BOWL, HeboConfig(n_trials=50, max_time_s=0.01, higher_is_better=False))
    assert 1 <= len(result.trials) < 50
    assert result.best_params is not None


def test_seed_reproducible_and_types() -> None:
    space = NN_SPACE + [SearchParam(name="layers", kind="int", lb=1, ub=4),
                        SearchParam(name="batchnorm", kind="bool")]

    def run(seed: int, n_trials: int) -> list[dict]:
        config = HeboConfig(n_trials=n_trials, n_initial=5, seed=seed, higher_is_better=False)
        return [t.params for t in tune(lambda p: p["learning_rate"], space, config).trials]

    # Six trials: five random warm-up suggestions and one from the fitted model.
    first, again, other = run(3, 6), run(3, 6), run(4, 5)
    assert first == again and first[:5] != other
    for params in first:
        assert 1e-6 <= params["learning_rate"] <= 1e-2
        assert params["optimizer"] in {"Adam", "SGD", "AdamW"}
        assert isinstance(params["layers"], int) and isinstance(params["batchnorm"], bool)


def test_bad_space_rejected() -> None:
    with pytest.raises(ValueError):
        SearchParam(name="lr", kind="pow", lb=0.0, ub=1.0)
    with pytest.raises(ValueError):
        SearchParam(name="opt", kind="cat")


def test_a_plateaued_search_stops_and_says_why() -> None:
    # A flat objective never improves on its first trial: the search ends after `patience` more.
    config = HeboConfig(n_trials=8, n_initial=5, seed=0, higher_is_better=False, patience=3)
    result = tune(lambda p: 1.0, BOWL, config)
    assert len(result.trials) == 4
    assert result.stopped is not None and "plateau" in result.stopped
    # Without patience every planned trial runs and nothing is said.
    full = tune(lambda p: 1.0, BOWL, HeboConfig(n_trials=4, n_initial=5, seed=0, higher_is_better=False))
    assert len(full.trials) == 4 and full.stopped is None


def test_hebo_is_there_where_make_installed_it() -> None:
    assert hebo_missing() is None
