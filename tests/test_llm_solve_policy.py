"""The LLM solve policy (issue #27): the sandboxed solver asks at its decision points, the runner's
advisor asks the model (a real OpenAI-compatible server on loopback replaying model-like replies)
and writes the reply file; feature code is checked and kept only on a CV gain; every failure falls
back to the expert; and a run without an LLM writes no `llm_solve` at all."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from llm_server import Reply, ScriptedLLMServer
from llm_solve_helpers import (
    LEAKING_FEATURE,
    MODEL,
    RATIO_FEATURE,
    SLOW_FEATURE,
    USELESS_FEATURE,
    model_reply,
    ratio_frames,
    ratio_workspace,
    solve_with_llm,
)
from solver_workspaces import check_solved, run_solver

from agentk.core.records.config import SolveSettings
from agentk.core.records.events import EventLog
from agentk.core.records.solve_decisions import (
    DecisionRecord,
    DecisionReply,
    DecisionRequest,
    FamilyView,
    FeatureRecord,
    LLMSolveRecord,
    TaskView,
    reply_path,
    request_path,
)
from agentk.core.records.workspace import atomic_write_json
from agentk.llm import LLMConfig, MalformedJSON, NoCodeInReply, make_client
from agentk.report.run_report import render_run_report
from agentk.solve_advisor import SolveAdvisor, parse_action
from solve_pipeline.llm.feature_code import check_feature_code

SHARED = Path(__file__).resolve().parents[2] / "shared" / "competitions"
SETTINGS = SolveSettings(folds=3, seed=0, time_budget_s=60, fusion="off", blend_after=2, llm_solve=True)


def _request(allowed: list[str] | None = None) -> DecisionRequest:
    return DecisionRequest(
        n=1, token="abc", budget_left_s=30.0, allowed=allowed or ["tune", "race", "feature", "bag", "blend", "stop"],
        task=TaskView(metric="accuracy", higher_is_better=True, n_train=240, n_test=60),
        race=[FamilyView(family="lightgbm", status="finished", cv=0.9)], tunable=["lightgbm"], unfinished=["catboost"])


# ---- the feature code's checks, on the real frames in a real child process ----

def _check(code: str, tmp_path: Path, cap_s: float = 30.0):
    train, test = ratio_frames()
    return check_feature_code(code, train, test, ["y"], cap_s)


def test_a_good_feature_passes_every_check(tmp_path: Path) -> None:
    verdict = _check(RATIO_FEATURE, tmp_path)
    assert verdict.refused is None and set(verdict.checks.values()) == {"passed"}
    assert verdict.block is not None and list(verdict.block.train.columns) == ["a_over_b"]
    train, _ = ratio_frames()
    assert verdict.block.train["a_over_b"].tolist() == pytest.approx((train["a"] / train["b"]).tolist())


@pytest.mark.parametrize(("code", "refused", "check"), [
    (LEAKING_FEATURE, "uses the target", "leakage"),
    ("def add_features(train, test):\n    import numpy as np\n    train['r'] = np.random.rand(len(train))\n"
     "    test['r'] = np.random.rand(len(test))\n    return train, test\n", "not deterministic", "deterministic"),
    ("def add_features(train, test):\n    return train.iloc[::-1], test\n", "train rows were reordered or their ids changed", "rows"),
    ("def add_features(train, test):\n    train['a'] = 0\n    test['z'] = 1\n    train['z'] = 1\n    return train, test\n",
     "changes the input column 'a' in train (only new columns may be added)", "columns"),
    ("def add_features(train, test):\n    return train, test\n", "no new column", "columns"),
    ("def add_features(train, test):\n    return train['missing'], test\n", "failed: KeyError: 'missing'", "runs"),
])
def test_bad_feature_code_is_refused_with_its_reason(tmp_path: Path, code: str, refused: str, check: str) -> None:
    verdict = _check(code, tmp_path)
    assert verdict.block is None and verdict.refused == refused
    assert verdict.checks[check] != "passed"


def test_slow_feature_code_is_stopped_at_its_cap(tmp_path: Path) -> None:
    verdict = _check(SLOW_FEATURE, tmp_path, cap_s=3.0)
    assert verdict.refused == "timed out" and verdict.checks["time"] == "timed out after 3 s"


# ---- the model's reply → an action ----

def test_model_replies_become_actions() -> None:
    request = _request()
    for action, family in (("tune", "lightgbm"), ("race", "catboost"), ("bag", None), ("blend", None), ("stop", None)):
        parsed = parse_action(model_reply(action, "because the scores say so", family), request)
        assert (parsed.action, parsed.family, parsed.reason) == (action, family, "because the scores say so")
    feature = parse_action(model_reply("feature", "a ratio", code=RATIO_FEATURE), request)
    assert feature.action == "feature" and feature.code == RATIO_FEATURE.strip()


@pytest.mark.parametrize(("text", "error"), [
    ("Let me think.\n```json\n{\"action\": \"train_xgboost\", \"reason\": \"strong\"}\n```", "unknown action 'train_xgboost'"),
    ("I would tune.\n```json\n{\"action\": \"tune\", \"family\": \"lightgbm\",,}\n```", "no valid JSON"),
    ("Blending is best here, no JSON needed.", "no valid JSON"),
    ("```json\n{\"action\": \"feature\", \"reason\": \"ratio\"}\n```\nThe code follows in my next message.", "no code"),
])
def test_unusable_replies_raise_with_a_reason(text: str, error: str) -> None:
    with pytest.raises((ValueError, MalformedJSON, NoCodeInReply)) as raised:
        parse_action(text, _request())
    assert error in str(raised.value)


def test_an_action_not_allowed_now_is_refused() -> None:
    with pytest.raises(ValueError, match="'race' is not allowed now"):
        parse_action(model_reply("race", "finish it", "catboost"), _request(["tune", "stop"]))


# ---- the advisor: every failure still writes a reply, handing the decision to the expert ----

def _advisor(server: ScriptedLLMServer, root: Path, budget: int | None = None) -> SolveAdvisor:
    config = LLMConfig(base_url=server.base_url, model=MODEL, timeout_s=10, max_retries=0, token_budget=budget, cache=False)
    return SolveAdvisor(make_client(config, root), root / "solve", EventLog(root / "logs" / "events.jsonl", quiet=True))


def _answer(advisor: SolveAdvisor, root: Path, request: DecisionRequest) -> DecisionReply:
    atomic_write_json(request_path(root / "solve", request.n), request.model_dump(mode="json"))
    advisor.on_request({"event": "decision_request", "n": request.n})
    path = reply_path(root / "solve", request.n)
    while not path.is_file():
        time.sleep(0.05)
    return DecisionReply.model_validate_json(path.read_text())


def test_the_advisor_falls_back_to_the_expert_on_every_failure(tmp_path: Path) -> None:
    replies = [Reply(model_reply("bag", "the leaders are noisy")),
               Reply(status=500, body={"error": {"message": "CUDA out of memory", "type": "InternalServerError"}}),
               Reply("Here is my plan.\n```json\n{\"action\": \"blend\", \"reason\": \"diverse models\"\n```")]
    with ScriptedLLMServer(replies) as server:
        advisor = _advisor(server, tmp_path, budget=None)
        answers = [_answer(advisor, tmp_path, _request().model_copy(update={"n": n})) for n in (1, 2, 3)]
        advisor.close()
    assert answers[0].action is not None and answers[0].action.action == "bag" and answers[0].tokens > 0
    assert answers[1].action is None and "LLMServerError" in str(answers[1].expert_reason)
    assert answers[2].action is None and "MalformedJSON" in str(answers[2].expert_reason)
    logged = [json.loads(line) for line in (tmp_path / "logs" / "events.jsonl").read_text().splitlines()]
    assert [e["action"] for e in logged if e["event"] == "llm_solve_decision"] == ["bag", "expert", "expert"]


def test_a_spent_token_budget_hands_the_decision_back(tmp_path: Path) -> None:
    with ScriptedLLMServer([Reply(model_reply("bag", "variance")), Reply(model_reply("stop", "done"))]) as server:
        advisor = _advisor(server, tmp_path, budget=10)
        first = _answer(advisor, tmp_path, _request())
        second = _answer(advisor, tmp_path, _request().model_copy(update={"n": 2}))
        advisor.close()
        assert len(server.chat_requests) == 1  # the spent budget makes no call at all
    assert first.action is not None and first.action.action == "bag"
    assert second.action is None and "TokenBudgetExceeded" in str(second.expert_reason)


# ---- whole solves: the sandboxed solver's loop against the real advisor ----

def _features(decisions: list[dict]) -> list[dict]:
    return [d["feature"] for d in decisions if d["action"] == "feature"]


@pytest.mark.integration
@pytest.mark.solo  # four feature children in a 60 s budget: at load 6 on two cores the last ones get no time
def test_feature_code_kept_refused_timed_out_dropped_then_expert(tmp_path: Path) -> None:
    workspace = ratio_workspace(tmp_path / "ws", SETTINGS)
    replies = [
        lambda r: Reply(model_reply("feature", "The target seems to follow the ratio of a and b.", code=RATIO_FEATURE)),
        lambda r: Reply(model_reply("feature", "The class mean is a strong signal.", code=LEAKING_FEATURE)),
        lambda r: Reply(model_reply("feature", "An expensive interaction search.", code=SLOW_FEATURE)),
        lambda r: Reply(model_reply("feature", "A bias column.", code=USELESS_FEATURE)),
        lambda r: Reply("Next I would bag the leaders.\n```json\n{\"action\": \"bag\" \"reason\": \"variance\"}\n```"),
    ]
    with ScriptedLLMServer([]) as server:
        result, events, requests = solve_with_llm(workspace, server, replies)
    check_solved(workspace, result, events)
    record = result["llm_solve"]
    good, leak, slow, useless = _features(record["decisions"])
    assert good["kept"] and good["verdict"] == "kept: CV improved beyond noise" and good["columns"] == ["a_over_b"]
    assert good["cv_after"] - good["cv_before"] > good["margin"] >= 0
    assert leak["refused"] == "uses the target" and not leak["kept"]
    assert slow["refused"] == "timed out" and slow["checks"]["time"].startswith("timed out")
    assert useless["verdict"].startswith("dropped: no gain") and useless["family"] == good["family"]
    # The dropped block was judged against the kept one's run, not the race's older one.
    assert useless["cv_before"] == good["cv_after"]
    last = record["decisions"][-1]
    assert last["action"] == "expert" and last["source"] == "expert" and "MalformedJSON" in last["reason"]
    assert record["expert_resumed"] and record["kept_features"] == [RATIO_FEATURE.strip()]
    assert f"{good['family']}_fe1" in result["cv"]
    assert result["validation_score"] >= good["cv_after"]
    # The model saw each step's outcome: the second request's history holds the kept block.
    assert requests[1].history[0].outcome == "kept: CV improved beyond noise"
    assert all(d["tokens"] > 0 for d in record["decisions"])


@pytest.mark.integration
def test_race_tune_bag_and_blend_chosen_by_the_model(tmp_path: Path) -> None:
    workspace = ratio_workspace(tmp_path / "ws", SETTINGS)
    replies = [
        lambda r: Reply(model_reply("race", "A pruned family can still help the blend.", r.unfinished[0])),
        lambda r: Reply(model_reply("tune", "The leader has never been tuned.", r.tunable[0])),
        lambda r: Reply(model_reply("bag", "Fresh partitions lower the variance.")),
        lambda r: Reply(model_reply("blend", "Several diverse models are finished.")),
    ]
    with ScriptedLLMServer([]) as server:
        result, events, requests = solve_with_llm(workspace, server, replies)
    check_solved(workspace, result, events)
    decisions = result["llm_solve"]["decisions"]
    assert [d["action"] for d in decisions] == ["race", "tune", "bag", "blend"]
    raced = decisions[0]["family"]
    assert raced == requests[0].unfinished[0] and raced not in requests[1].unfinished
    assert decisions[1]["outcome"].startswith("tuned: ")
    assert not result["llm_solve"]["expert_resumed"]
    assert result["tuning"]["skipped"].startswith("the LLM solve policy: the model blended")
    assert "y" in result["blend"]  # the model's blend is the record's: it ran once, per target
    for decision in decisions:
        assert decision["score_after"] is not None and decision["score_after"] >= decision["score_before"]


@pytest.mark.integration
def test_stop_skips_to_blending_and_an_expert_run_writes_no_llm_solve(tmp_path: Path) -> None:
    short = SETTINGS.model_copy(update={"time_budget_s": 15.0})
    workspace = ratio_workspace(tmp_path / "llm", short)
    with ScriptedLLMServer([]) as server:
        result, _, _ = solve_with_llm(workspace, server, [lambda r: Reply(model_reply("stop", "The race settled it."))])
    assert [d["action"] for d in result["llm_solve"]["decisions"]] == ["stop"]
    assert result["bagging"] == {"skipped": "the LLM solve policy: the model stopped: The race settled it."}

    expert = ratio_workspace(tmp_path / "expert", short.model_copy(update={"llm_solve": None}))
    result, events = run_solver(expert)
    check_solved(expert, result, events)
    assert "llm_solve" not in result and not any(e["event"] == "decision_request" for e in events)
    assert "llm_solve" not in (expert / "config.json").read_text()
    assert not (expert / "solve" / "llm").exists()


TITANIC_FEATURE = '''
def add_features(train, test):
    # Fares are paid per ticket: a family's fare shared out says more about class than the total.
    for frame in (train, test):
        people = frame["SibSp"].fillna(0) + frame["Parch"].fillna(0) + 1
        frame["fare_per_person"] = frame["Fare"] / people
    return train, test
'''


@pytest.mark.integration
def test_cli_run_on_titanic_falls_back_when_the_token_budget_runs_out(tmp_path: Path) -> None:
    """`agentk run --llm-solve`: the first decision is the model's (feature code, run inside the
    solver's sandbox), the spent budget hands the rest to the expert, and the run still ends with a
    valid, graded submission."""
    first = model_reply("feature", "Titanic fares are per ticket; a per-person fare is a classic feature.",
                        code=TITANIC_FEATURE)
    with ScriptedLLMServer([Reply(first)]) as server:
        proc = subprocess.run(
            [sys.executable, "-m", "agentk.cli", "run", str(SHARED / "titanic"), "-w", str(tmp_path / "ws"),
             "--llm", server.base_url, "--model", MODEL, "--llm-solve", "--token-budget", "1",
             "--time-budget", "60", "--folds", "2", "--json"],
            capture_output=True, text=True, timeout=600, cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout)
    assert result["valid_submission"] and result["test_score"] > 0.7
    solve = json.loads((tmp_path / "ws" / result["competition_id"] / "solve" / "solve_result.json").read_text())
    decisions = solve["llm_solve"]["decisions"]
    assert decisions[0]["action"] == "feature" and decisions[0]["tokens"] > 0
    checks = decisions[0]["feature"]["checks"]
    assert {checks[name] for name in ("time", "runs", "rows", "columns", "deterministic", "leakage")} == {"passed"}
    assert decisions[0]["feature"]["verdict"].startswith(("kept", "dropped"))
    assert decisions[-1]["action"] == "expert" and "TokenBudgetExceeded" in decisions[-1]["reason"]
    assert solve["llm_solve"]["expert_resumed"]
    assert result["llm_usage"]["stages"]["solve"]["calls"] == 1
    page = (tmp_path / "ws" / result["competition_id"] / "report.html").read_text()
    assert 'id="llm-solve"' in page and "TokenBudgetExceeded" in page and "fare_per_person" in page


# ---- the run report ----

def test_the_run_report_shows_the_decisions_only_when_an_llm_solved(tmp_path: Path) -> None:
    record = LLMSolveRecord(
        decisions=[DecisionRecord(n=1, action="feature", reason="a ratio defines the target", tokens=812,
                                  llm_seconds=0.4, seconds=2.1, score_before=0.89, score_after=0.95, score_change=0.06,
                                  outcome="kept: CV improved beyond noise",
                                  feature=FeatureRecord(code=RATIO_FEATURE.strip(), checks={"leakage": "passed"},
                                                        family="lightgbm", cv_before=0.89, cv_after=0.95, margin=0.03,
                                                        kept=True, verdict="kept: CV improved beyond noise")),
                   DecisionRecord(n=2, action="expert", source="expert", reason="TokenBudgetExceeded: spent")],
        ended="the expert decides: TokenBudgetExceeded: spent", expert_resumed=True,
        kept_features=[RATIO_FEATURE.strip()])
    pages = {}
    for name, extra in (("llm", {"llm_solve": record.to_json()}), ("expert", {})):
        root = tmp_path / name
        (root / "solve").mkdir(parents=True)
        (root / "state.json").write_text(json.dumps({"phase": "done"}))
        (root / "solve" / "solve_result.json").write_text(json.dumps({"validation_score": 0.95, "model": "blend", **extra}))
        pages[name] = render_run_report(root)
    assert "a ratio defines the target" in pages["llm"] and "0.89 → 0.95" in pages["llm"]
    assert "TokenBudgetExceeded: spent" in pages["llm"] and "812" in pages["llm"]
    assert 'id="llm-solve"' in pages["llm"] and 'id="llm-solve"' not in pages["expert"]


# ---- the experience memory: a kept block is offered to a later, similar task ----

def test_kept_feature_code_is_offered_to_a_later_similar_task(tmp_path: Path) -> None:
    from curriculum.experience import ExperienceStore

    store = ExperienceStore(tmp_path / "_memory" / "experience.lance").open()
    columns = {"id": "object", "a": "float64", "b": "float64", "noise": "float64"}
    request = _request().model_copy(update={"task": _request().task.model_copy(update={"columns": columns})})
    first_root, later_root = tmp_path / "first", tmp_path / "later"
    kept = DecisionRecord(n=1, action="feature", reason="ratio", tokens=10, outcome="kept: CV improved beyond noise",
                          feature=FeatureRecord(code=RATIO_FEATURE.strip(), family="lightgbm", cv_before=0.89,
                                                cv_after=0.95, margin=0.03, kept=True, verdict="kept"))
    (first_root / "solve").mkdir(parents=True)
    (first_root / "solve" / "solve_result.json").write_text(
        json.dumps({"llm_solve": LLMSolveRecord(decisions=[kept], kept_features=[kept.feature.code]).to_json()}))
    replies = [Reply(model_reply("stop", "enough")), Reply(model_reply("stop", "enough"))]
    with ScriptedLLMServer(replies) as server:
        first = _advisor(server, first_root)
        first.memory, first.competition_id = store, "ratio-task-a"
        _answer(first, first_root, request)
        first.close()
        assert first.remember_kept() == 1
        later = _advisor(server, later_root)
        later.memory, later.competition_id = store, "ratio-task-b"
        _answer(later, later_root, request)
        later.close()
        prompts = ["\n".join(m["content"] for m in r.body["messages"]) for r in server.chat_requests]
    assert "frame[\"a_over_b\"]" not in prompts[0]  # nothing stored yet for the first task
    assert "On ratio-task-a (lightgbm CV 0.89 -> 0.95)" in prompts[1] and "a_over_b" in prompts[1]
