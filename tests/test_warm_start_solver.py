"""The solver warm-started from config.json's `warm_start`, against the same workspace solved cold:
the race's order, HEBO's first trial, the record of what was used and ignored, the timeline and
the summary a campaign's task memory keeps."""

from __future__ import annotations

from pathlib import Path

import pytest
from solver_workspaces import run_solver, titanic_workspace

from agentk.core.records.config import CONFIG_FILE, RunConfig, SolveSettings, WarmStart
from agentk.core.metrics.direction import Direction
from agentk.core.records.results import SolvedSummary, time_to_reach
from solve_pipeline.race.registry import FAMILIES

pytestmark = [pytest.mark.integration, pytest.mark.solo]

# Small enough to be quick, large enough that HEBO gets its 4 trials after the race.
# 30 s: the warm leader (random forest, ~3 s a CV here) must fit 4 HEBO trials before 75% of the budget.
SETTINGS = SolveSettings(folds=2, seed=0, time_budget_s=30, fusion="off", blend_after=2)

# Each tunable family that may be tuned on titanic gets one configuration from "another task",
# with keys this space lacks and values outside it; the expected points are written out by hand.
WARM = WarmStart(
    families=["random_forest", "no_such_model", "fusion", "catboost"],
    configs={
        "lightgbm": [{"learning_rate": 0.9, "num_leaves": 4, "min_child_samples": 30.4, "feature_fraction": 0.6,
                      "bagging_fraction": 0.9, "lambda_l2": 1.0, "boosting": "dart"}],
        "catboost": [{"depth": 2, "learning_rate": 0.9, "colsample_bylevel": 0.5}],
        "linear": [{"C": 1e9}],
        "mystery": [{"a": 1}],
    },
    sources=["task-a", "task-b"],
)
EXPECTED_FIRST = {
    "lightgbm": {"learning_rate": 0.3, "num_leaves": 8, "min_child_samples": 30, "feature_fraction": 0.6,
                 "bagging_fraction": 0.9, "lambda_l2": 1.0},
    "catboost": {"learning_rate": 0.3, "depth": 3, "l2_leaf_reg": 3.0, "random_strength": 1.0,
                 "bagging_temperature": 1.0},
    "linear": {"C": 1000.0},
}


def _solve(root: Path, warm: WarmStart | None) -> tuple[Path, dict, list[dict]]:
    workspace = titanic_workspace(root)
    config = RunConfig(solve=SETTINGS.model_copy(update={"warm_start": warm}))
    (workspace / CONFIG_FILE).write_text(config.model_dump_json(), encoding="utf-8")
    result, events = run_solver(workspace)
    return workspace, result, events


@pytest.fixture(scope="module")
def cold(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict, list[dict]]:
    return _solve(tmp_path_factory.mktemp("cold"), None)


@pytest.fixture(scope="module")
def warm(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict, list[dict]]:
    return _solve(tmp_path_factory.mktemp("warm"), WARM)


def _raced(result: dict) -> list[str]:
    return [entry["family"] for entry in result["race"]]


def _first_fold_models(events: list[dict]) -> list[str]:
    seen: list[str] = []
    for event in events:
        if event["event"] == "fold" and event["model"] not in seen and event["model"] != "constant":
            seen.append(event["model"])
    return seen


def test_cold_start_is_unchanged(cold: tuple[Path, dict, list[dict]]) -> None:
    _, result, events = cold
    registry_order = [f.name for f in FAMILIES]
    raced = _raced(result)
    assert raced == sorted(raced, key=registry_order.index) and raced[0] == "linear"
    assert _first_fold_models(events)[:len(raced)] == raced
    assert result["warm_start"] is None
    assert not any(e["event"] == "warm_start" for e in events)
    assert not any("warm" in t for t in result["tuning"].get("trials", []))
    assert not any("warm" in e for e in events if e["event"] == "trial")


def test_warm_families_race_first(warm: tuple[Path, dict, list[dict]],
                                  cold: tuple[Path, dict, list[dict]]) -> None:
    _, result, events = warm
    cold_order = _raced(cold[1])
    pace = cold_order[0]  # the cheap pace-setter keeps its place: it always finishes
    expected = [pace, "random_forest", "catboost"] + [f for f in cold_order if f not in (pace, "random_forest", "catboost")]
    assert _raced(result) == expected == result["warm_start"]["race_order"]
    # After the pace-setter, random_forest is the first model fitted, where the cold race fits it late.
    fitted = [m for m in _first_fold_models(events) if m != pace]
    assert fitted[0] == "random_forest"
    assert _first_fold_models(cold[2])[1] != "random_forest"
    record = result["warm_start"]
    assert record["sources"] == ["task-a", "task-b"]
    ignored = {(i["family"], i["reason"]) for i in record["ignored"] if "config" not in i}
    assert ("no_such_model", "not a model family") in ignored
    assert ("fusion", "not a race candidate for this task") in ignored
    assert ("mystery", "not a model family") in ignored
    assert [u["family"] for u in record["used"] if u["as"].startswith("raced first")] == ["random_forest", "catboost"]
    race_event = next(e for e in events if e["event"] == "warm_start" and e["phase"] == "race")
    assert race_event["order"] == expected


def test_warm_config_is_hebos_first_trial(warm: tuple[Path, dict, list[dict]]) -> None:
    _, result, events = warm
    tuning = result["tuning"]
    assert "skipped" not in tuning, tuning
    family = tuning["family"]
    record = result["warm_start"]
    choice = record["tuning"]
    assert choice["chosen"] == family
    if family != choice["cold_choice"]:
        # Preferred over the race's best only when the race could not tell them apart.
        assert family == "catboost"
        note = next(c for c in choice["candidates"] if c["family"] == "catboost")
        assert note["chosen"] and note["gap"] <= note["noise"]
    trials = tuning["trials"]
    assert "warm" not in trials[0]  # the race's defaults, observed first as before
    assert trials[1]["params"] == EXPECTED_FIRST[family] and trials[1]["warm"] is True
    assert not any("warm" in t for t in trials[2:]) and len(trials) >= 3  # then HEBO carries on
    trial_events = [e for e in events if e["event"] == "trial"]
    assert trial_events[0]["params"] == EXPECTED_FIRST[family] and trial_events[0]["warm"] is True
    used = [u for u in record["used"] if u["as"] == "HEBO trial"]
    assert [u["params"] for u in used] == [EXPECTED_FIRST[family]]
    assert any("not in the search space" in note for note in used[0]["adjusted"]) or family == "linear"
    # Every other family's configurations are reported as not used, with the reason.
    others = {i["family"]: i["reason"] for i in record["ignored"] if "config" in i}
    assert set(others) == {"lightgbm", "catboost", "linear"} - {family}
    assert all(reason == f"{family} was tuned" for reason in others.values())


def test_timeline_and_summary(warm: tuple[Path, dict, list[dict]], cold: tuple[Path, dict, list[dict]]) -> None:
    for workspace, result, events in (cold, warm):
        timeline = result["timeline"]
        direction = Direction(result["higher_is_better"])
        # One point per adopted improvement: from the constant to the submission's score, each better.
        assert timeline[0][1] == pytest.approx(result["cv"]["constant"])
        assert timeline[-1][1] == pytest.approx(result["validation_score"])
        assert all(direction.better(b[1], a[1]) and b[0] >= a[0] for a, b in zip(timeline, timeline[1:]))
        assert len(timeline) == len([e for e in events if e["event"] in ("submission", "submission_kept")])
        assert timeline[0][0] <= result["time_to_first_submission_s"] + 0.01

        summary = SolvedSummary.from_solve(workspace / "solve")
        assert summary is not None
        assert summary.higher_is_better is True and summary.validation_score == result["validation_score"]
        assert summary.timeline == [tuple(point) for point in timeline]
        assert summary.time_budget_s == SETTINGS.time_budget_s
        finished = {e["family"] for e in result["race"] if e["status"] == "finished"}
        assert {f.family for f in summary.families} == finished
        scores = [f.score for f in summary.families]
        assert scores == sorted(scores, reverse=True)
        tuned = [f for f in summary.families if f.tuned]
        trials = [t for t in result["tuning"].get("trials", []) if t["score"] is not None]
        if not trials:  # a short budget may leave no time for four trials: then nothing is tuned
            assert result["tuning"]["skipped"] and tuned == []
            continue
        best = max(trials, key=lambda t: t["score"])
        assert [f.family for f in tuned] == [result["tuning"]["family"]]
        assert tuned[0].params == best["params"]
        assert tuned[0].score == pytest.approx(max(best["score"], result["cv"][tuned[0].family]))

    # The benchmark's measure: when each run first reached the cold run's final score.
    cold_result = cold[1]
    target = cold_result["validation_score"]
    assert time_to_reach(cold_result["timeline"], target, True) == cold_result["timeline"][-1][0]
    reached = time_to_reach(warm[1]["timeline"], target, True)
    assert reached is None or 0 < reached <= warm[1]["elapsed_s"]
