"""Warm start, piece by piece: configurations fitted into a family's space, the race's order, the
tuned family's choice, the summary a campaign reads back, and time-to-reach."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from solver_workspaces import shapes_workspace, titanic_workspace

from agentk.core.records.config import Fusion, WarmStart
from agentk.core.metrics.direction import Direction
from agentk.core.records.results import SolvedSummary, SolveResult, time_to_reach
from solve_pipeline.base.cv import CandidateRun
from solve_pipeline.inputs.features import build_features
from solve_pipeline.race.hebo_tool import HeboConfig, SearchParam, tune
from solve_pipeline.race.registry import (
    CATBOOST_DEFAULTS, CATBOOST_SPACE, FUSION_DEFAULTS, FUSION_SPACE, LIGHTGBM_DEFAULTS, LIGHTGBM_SPACE,
    family_candidate, race_candidates,
)
from solve_pipeline.base.setup_modules import SetupArtifacts
from solve_pipeline.race.warm_start import WarmReport, choose_tuned, fit_config, order_race, warm_points

# ---- configurations fitted into a space ----


def test_fit_config_clips_rounds_drops_and_fills() -> None:
    config = {"learning_rate": 5.0, "num_leaves": 3.6, "min_child_samples": 40.4, "feature_fraction": 0.5,
              "lambda_l2": 1e-9, "boosting": "dart", "seed": 3}
    point, notes = fit_config(config, LIGHTGBM_SPACE, LIGHTGBM_DEFAULTS)
    assert point == {"learning_rate": 0.3, "num_leaves": 8, "min_child_samples": 40, "feature_fraction": 0.5,
                     "bagging_fraction": 0.8, "lambda_l2": 1e-3}
    assert isinstance(point["num_leaves"], int) and isinstance(point["min_child_samples"], int)
    assert isinstance(point["feature_fraction"], float)
    joined = " | ".join(notes)
    for fragment in ("dropped 'boosting'", "dropped 'seed'", "'learning_rate' 5.0 -> 0.3", "'num_leaves' 3.6 -> 8",
                     "'bagging_fraction' missing", "'lambda_l2' 1e-09 -> 0.001"):
        assert fragment in joined
    assert not any("feature_fraction" in n for n in notes)  # inside the space: untouched, unremarked


def test_fit_config_categories_and_wrong_kinds_take_the_default() -> None:
    config = {"optimizer": "RMSprop", "batch_size": 64, "dropout": "high", "weight_decay": math.nan,
              "learning_rate": True, "hidden_size": 100}
    point, notes = fit_config(config, FUSION_SPACE, FUSION_DEFAULTS)
    assert point == {**FUSION_DEFAULTS, "batch_size": "64", "hidden_size": 100}  # 64 is the category "64"
    assert len(notes) == 4 and all("default used" in n for n in notes)
    flags = [SearchParam(name="on", kind="bool"), SearchParam(name="x", kind="num", lb=0, ub=1)]
    assert fit_config({"on": 1, "x": 2}, flags, {})[0] == {"on": True, "x": 1.0}
    # Neither a usable value nor a default: the configuration cannot be placed.
    point, notes = fit_config({"on": "yes"}, flags, {"x": 0.5})
    assert point is None and "configuration dropped" in notes[-1]


def test_warm_points_skip_defaults_repeats_and_overflow() -> None:
    report = WarmReport(sources=["a"])
    configs = [dict(CATBOOST_DEFAULTS), {"depth": 2}, {"depth": 3.2}, {"depth": 8}, {"depth": 9}, {"depth": 5}]
    points = warm_points("catboost", configs, CATBOOST_SPACE, CATBOOST_DEFAULTS, planned_trials=5, report=report)
    # Room for int(0.5 * 5) = 2: depth 2 (clipped to 3) and depth 8; 3.2 rounds onto the first.
    assert points == [{**CATBOOST_DEFAULTS, "depth": 3}, {**CATBOOST_DEFAULTS, "depth": 8}]
    reasons = [i["reason"] for i in report.ignored]
    assert reasons[0].startswith("the family's defaults")
    assert reasons[1].startswith("the same point")
    assert all(r.startswith("beyond the warm share") for r in reasons[2:]) and len(reasons) == 4
    used = [u for u in report.used if u["as"] == "HEBO trial"]
    assert used[0]["config"] == {"depth": 2} and "'depth' 2 -> 3 (space 3..10)" in used[0]["adjusted"]


# ---- the race's order ----


@pytest.fixture(scope="module")
def titanic_features(tmp_path_factory: pytest.TempPathFactory):
    return build_features(SetupArtifacts.load(titanic_workspace(tmp_path_factory.mktemp("titanic"))))


def test_order_race_puts_warm_families_first(titanic_features) -> None:
    cold = race_candidates(titanic_features, fusion=Fusion.OFF)
    cold_names = [c.name for c in cold]
    assert cold_names[:3] == ["linear", "linear_power", "lightgbm"]
    warm = WarmStart(families=["random_forest", "no_such_model", "fusion", "catboost", "random_forest"],
                     configs={"mystery": [{"a": 1}]}, sources=["t1"])
    report = WarmReport(sources=warm.sources)
    ordered = [c.name for c in order_race(cold, warm, titanic_features, report)]
    # The cheap pace-setter keeps its place; the warm families come right after it.
    assert ordered == ["linear", "random_forest", "catboost"] + [n for n in cold_names if n not in ("linear", "random_forest", "catboost")]
    assert report.race_order == ordered
    assert {(i["family"], i["reason"]) for i in report.ignored} == {
        ("no_such_model", "not a model family"), ("fusion", "not a race candidate for this task"),
        ("mystery", "not a model family")}
    assert [u["family"] for u in report.used] == ["random_forest", "catboost"]
    # An empty warm start keeps the cold order.
    assert [c.name for c in order_race(cold, WarmStart(), titanic_features, WarmReport([]))] == cold_names


def test_the_leader_keeps_its_place(tmp_path: Path) -> None:
    features = build_features(SetupArtifacts.load(shapes_workspace(tmp_path / "shapes")), image_size=16)
    cold = [c.name for c in race_candidates(features)]
    assert cold[:2] == ["pretrained_head", "pretrained_linear"]
    report = WarmReport([])
    ordered = [c.name for c in order_race(race_candidates(features), WarmStart(families=["extratrees"]), features,
                                          report)]
    assert ordered[:3] == ["pretrained_head", "pretrained_linear", "extratrees"]


# ---- which family HEBO tunes ----


def _run(name: str, fold_scores: list[float]) -> CandidateRun:
    empty = np.zeros(0)
    return CandidateRun(name, family_candidate(name), empty, empty, {}, {},
                        done=list(range(len(fold_scores))), fold_scores=dict(enumerate(fold_scores)), seconds=1.0)


def test_choose_tuned_prefers_a_warm_family_within_the_noise() -> None:
    best = _run("lightgbm", [0.80, 0.84, 0.82])  # standard error 0.01155
    close = _run("catboost", [0.81, 0.81, 0.81])
    scores = {"lightgbm": 0.82, "catboost": 0.81}
    report = WarmReport([])
    warm = WarmStart(families=["random_forest", "no_such_model", "linear", "fusion", "catboost"])
    chosen = choose_tuned([best, close], warm, scores, Direction(True), report,
                          tunable={"lightgbm", "catboost", "linear"})
    assert chosen is close
    assert report.tuning["chosen"] == "catboost" and report.tuning["cold_choice"] == "lightgbm"
    assert report.used == [{"family": "catboost", "as": "tuned instead of the race's best", "race_best": "lightgbm"}]
    reasons = {i["family"]: i["reason"] for i in report.ignored}
    assert reasons == {"random_forest": "has no search space",
                       "linear": "its cross-validation is too slow for a worthwhile number of trials in the time left",
                       "fusion": "not tunable for this task, or did not finish the race"}
    # Twice the noise behind: the race's best is tuned.
    far = {"lightgbm": 0.82, "catboost": 0.795}
    report = WarmReport([])
    assert choose_tuned([best, close], WarmStart(families=["catboost"]), far, Direction(True), report) is best
    assert "more than the race's noise" in report.ignored[0]["reason"]
    # Lower is better: the gap is measured the same way.
    low = {"lightgbm": 0.30, "catboost": 0.305}
    assert choose_tuned([best, close], WarmStart(configs={"catboost": [{}]}), low, Direction(False),
                        WarmReport([])) is close
    # No warm family: the cold choice.
    assert choose_tuned([best, close], WarmStart(), scores, Direction(True), WarmReport([])) is best


# ---- HEBO's first points ----


@pytest.mark.integration
def test_first_points_are_the_first_trials_and_change_nothing_when_absent() -> None:
    space = [SearchParam(name="x", kind="num", lb=-5, ub=5), SearchParam(name="n", kind="int", lb=1, ub=9)]

    def bowl(params: dict) -> float:
        return (params["x"] - 1.0) ** 2 + (params["n"] - 4) ** 2

    config = HeboConfig(n_trials=4, n_initial=4, seed=3, higher_is_better=False)
    def points(trials: list) -> list:
        return [(t.params, t.score) for t in trials]

    plain = tune(bowl, space, config)
    assert points(tune(bowl, space, config, first=[]).trials) == points(plain.trials)  # the old path
    warm = tune(bowl, space, config, first=[{"x": 1.0, "n": 4}, {"x": -2.0, "n": 9}])
    assert [t.params for t in warm.trials[:2]] == [{"x": 1.0, "n": 4}, {"x": -2.0, "n": 9}]
    assert len(warm.trials) == 4 and warm.best_score == 0.0 and warm.best_params == {"x": 1.0, "n": 4}


# ---- the summary and time-to-reach ----


def test_time_to_reach() -> None:
    up = [(1.0, 0.6), (3.5, 0.7), (9.0, 0.8)]
    assert time_to_reach(up, 0.7, True) == 3.5
    assert time_to_reach(up, 0.65, True) == 3.5
    assert time_to_reach(up, 0.6, True) == 1.0
    assert time_to_reach(up, 0.81, True) is None
    down = [(0.5, 0.69), (2.0, 0.45), (4.0, 0.40)]
    assert time_to_reach(down, 0.45, False) == 2.0
    assert time_to_reach(down, 0.1, False) is None
    assert time_to_reach([], 0.5, True) is None


def _write_result(solve_dir: Path, **fields: object) -> None:
    solve_dir.mkdir(parents=True, exist_ok=True)
    SolveResult.path_in(solve_dir).write_text(json.dumps(fields))


def test_summary_from_a_solve_result(tmp_path: Path) -> None:
    assert SolvedSummary.from_solve(tmp_path / "solve") is None
    (tmp_path / "setup").mkdir()
    (tmp_path / "setup" / "plan.json").write_text(json.dumps({"metric": "rmse"}))
    _write_result(
        tmp_path / "solve", higher_is_better=False, metric="setup", validation_score=0.30, time_budget_s=60,
        cv={"constant": 0.9, "linear": 0.5, "lightgbm": 0.35, "lightgbm_tuned": 0.31, "catboost": 0.33,
            "blend": 0.30},
        race=[{"family": "linear", "status": "finished"}, {"family": "lightgbm", "status": "finished"},
              {"family": "catboost", "status": "finished"}, {"family": "extratrees", "status": "pruned"}],
        tuning={"family": "lightgbm", "trials": [
            {"params": {"num_leaves": 31}, "score": 0.35, "seconds": 1, "error": None},
            {"params": {"num_leaves": 64}, "score": 0.31, "seconds": 1, "error": None},
            {"params": {"num_leaves": 256}, "score": None, "seconds": 1, "error": "TimeoutError"}]},
        timeline=[[0.2, 0.9], [1.5, 0.5], [4.0, 0.35], [20.0, 0.30]])
    summary = SolvedSummary.from_solve(tmp_path / "solve")
    assert summary is not None
    assert (summary.metric, summary.higher_is_better, summary.validation_score) == ("rmse", False, 0.30)
    assert [(f.family, f.score, f.tuned) for f in summary.families] == [
        ("lightgbm", 0.31, True), ("catboost", 0.33, False), ("linear", 0.5, False)]
    assert summary.families[0].params == {"num_leaves": 64} and summary.families[1].params == {}
    assert summary.timeline == [(0.2, 0.9), (1.5, 0.5), (4.0, 0.35), (20.0, 0.30)]
    assert summary.time_budget_s == 60
    assert time_to_reach(summary.timeline, 0.35, summary.higher_is_better) == 4.0


def test_summary_of_a_light_check_or_a_surrogate_solve(tmp_path: Path) -> None:
    _write_result(tmp_path / "solve", light=True, higher_is_better=True, cv={"linear": 0.7},
                  race=[{"family": "linear", "status": "finished"}])
    assert SolvedSummary.from_solve(tmp_path / "solve") is None  # the setup's quick check is no solve
    _write_result(tmp_path / "solve", light=False, higher_is_better=False, metric="surrogate",
                  cv={"linear": 0.7}, race=[{"family": "linear", "status": "finished"}], tuning={"skipped": "x"})
    summary = SolvedSummary.from_solve(tmp_path / "solve")
    assert summary is not None and summary.metric == "surrogate"
    assert [(f.family, f.score, f.tuned, f.params) for f in summary.families] == [("linear", 0.7, False, {})]
    assert summary.timeline == []
