"""Bags of repeats: a tuned run's own partition never counts towards its score; every repeat's
fold models count towards the test predictions."""

from __future__ import annotations

import numpy as np

from solve_pipeline.race.bagging import Bag
from solve_pipeline.base.baseline_models import constant_candidate
from solve_pipeline.base.cv import CandidateRun


def _run(name: str, oof: float, test: float) -> CandidateRun:
    return CandidateRun(name, constant_candidate(), np.zeros((4, 1)), np.zeros((2, 1)),
                        {"y": np.full(4, oof)}, {"y": np.full(2, test)}, done=[0, 1], seconds=2.0)


def test_a_tuned_bag_scores_only_its_fresh_repeats() -> None:
    tuned = Bag(_run("lightgbm_tuned", oof=9.0, test=3.0), base_honest=False)
    assert tuned.combined() is None  # nothing honest yet: no score to adopt it on
    tuned.repeats += [_run("r1", oof=1.0, test=1.0), _run("r2", oof=2.0, test=2.0)]
    combined = tuned.combined()
    assert combined is not None and combined.name == "lightgbm_tuned_bag3"
    assert np.allclose(combined.oof["y"], 1.5)  # the tuning partition's OOF is left out
    assert np.allclose(combined.test["y"], 2.0)  # its fold models still vote on the test rows
    assert combined.calibration == {}  # repeats were calibrated one by one; not again
    assert tuned.seconds_per_repeat == 2.0


def test_a_race_bag_averages_every_run() -> None:
    bag = Bag(_run("catboost", oof=4.0, test=4.0), base_honest=True)
    bag.repeats.append(_run("r1", oof=2.0, test=0.0))
    combined = bag.combined()
    assert combined is not None and combined.name == "catboost_bag2"
    assert np.allclose(combined.oof["y"], 3.0) and np.allclose(combined.test["y"], 2.0)
