"""The LLM and hybrid setup policies driving the real SetupMDP on titanic, with the real HTTP client
against a local OpenAI-compatible server replaying what a competent model would answer."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from llm_server import Reply, ScriptedLLMServer

from agentk.core.records.events import EventLog
from agentk.llm import LLMConfig, make_client
from agentk.sources import load_competition
from agentk.core.records.workspace import Workspace
from setup_pipeline.expert.expert_policy import ExpertPolicy
from setup_pipeline.llm_policy.policy import HybridPolicy, LLMPolicy
from setup_pipeline.mdp import SetupBudget, SetupMDP
from setup_pipeline.policy import Policy

pytestmark = pytest.mark.integration

SHARED = Path(__file__).resolve().parents[2] / "shared" / "competitions"
SCRIPTS = Path(__file__).resolve().parent / "llm_scripts" / "titanic"
MODEL = "qwen2.5-coder-7b"
FAST = SetupBudget(attempts_per_stage=3, meta_rounds=1, stage_timeout_s=60, light_solve_timeout_s=120)
CODE_STAGES = ["train_input_map_tab", "train_target_map", "target_transform", "test_input_map_tab", "submission_format", "metric"]


def script(*names: str) -> list[Reply]:
    return [Reply((SCRIPTS / f"{name}.md").read_text(encoding="utf-8")) for name in names]


def workspace_for(tmp_path: Path, competition: Path) -> Workspace:
    workspace = Workspace(tmp_path / "ws")
    workspace.create()
    load_competition(competition).prepare(workspace.raw)
    return workspace


def run_setup(workspace: Workspace, policy: Policy) -> None:
    state = workspace.load_state()
    SetupMDP(workspace, policy, EventLog(workspace.logs / "events.jsonl", quiet=True), FAST).run(state, workspace.save_state)


def attempts(workspace: Workspace) -> list[dict]:
    return [json.loads(line) for line in (workspace.logs / "attempts.jsonl").read_text().splitlines()]


def client_for(server: ScriptedLLMServer, workspace: Workspace):
    config = LLMConfig(base_url=server.base_url, model=MODEL, timeout_s=10, max_retries=0)
    return make_client(config, workspace.root)


def prompt_of(request) -> str:
    return "\n".join(m["content"] for m in request.body["messages"])


def test_llm_policy_sets_up_titanic_through_every_stage(tmp_path: Path) -> None:
    workspace = workspace_for(tmp_path, SHARED / "titanic")
    replies = script(
        "summarise", "modalities", "plan_malformed", "plan_repaired", "train_input_map_tab",
        "train_target_map_wrong", "train_target_map_fixed", "target_transform", "test_input_map_tab",
        "submission_format", "metric",
    )
    with ScriptedLLMServer(replies) as server:
        run_setup(workspace, LLMPolicy(client_for(server, workspace)))
        requests = server.chat_requests
    state = workspace.load_state()
    assert all(stage.passed for stage in state.stages.values()), {n: s.last_error for n, s in state.stages.items()}
    assert state.meta["meta_maps"].passed and state.meta["meta_light_solve"].passed
    assert len(requests) == 11  # the script is used up: one repair round, one retried stage

    # The plan's malformed JSON was shown back to the model with the parse error, then repaired.
    repair = prompt_of(requests[3])
    assert "could not be used" in repair and "no valid JSON" in repair
    plan = json.loads((workspace.setup / "plan.json").read_text())
    assert plan["metric"] == "accuracy" and plan["id_column"] == "PassengerId"

    # The wrong target map failed its stage check; the error reached the next prompt (no chat history).
    log = attempts(workspace)
    target = [a for a in log if a.get("stage") == "train_target_map"]
    assert [a["passed"] for a in target] == [False, True]
    error = target[0]["problems"][0]
    assert "first column must be named 'id'" in error
    retry = prompt_of(requests[6])
    assert "## ERROR" in retry and error in retry and "## PREVIOUS-CODE" in retry
    assert 'df[["PassengerId", "Survived"]]' in retry  # the code that failed
    first_prompt = prompt_of(requests[5])
    assert "## ERROR" not in first_prompt and "## PLAN" in first_prompt and "## DATA-VIEW" in first_prompt
    assert "# >>>>>> YOUR CODE GOES HERE <<<<<<" in first_prompt and "build_map" in first_prompt

    # Plans come from the model's reply; the code went into the template's hole.
    assert target[1]["plan"].startswith("1. The error says the first column must be named `id`")
    assert all(a["policy"] == "llm" for a in log)
    module = (workspace.setup / "code_metric.py").read_text()
    assert "def score(y_true" in module and "_prediction_frame" in module
    assert json.loads((workspace.setup / "metric_check.json").read_text())["perfect"] == 1.0
    # Every query was a real request (no cache replay), each logged with its stage.
    calls = [json.loads(line) for line in (workspace.logs / "llm_calls.jsonl").read_text().splitlines()]
    assert len(calls) == 11 and all("error" not in c and not c["cached"] for c in calls)
    assert [c["stage"] for c in calls].count("train_target_map") == 2


def _without_evaluation(tmp_path: Path) -> Path:
    """A copy of titanic whose description has no Evaluation section (so no metric is named)."""
    source = SHARED / "titanic"
    copy = tmp_path / "titanic-noeval"
    copy.mkdir()
    (copy / "data").symlink_to(source / "data", target_is_directory=True)
    (copy / "competition.toml").write_text((source / "competition.toml").read_text())
    text = (source / "description.md").read_text()
    stripped = re.sub(r"^## Evaluation\n.*?(?=^## )", "", text, flags=re.MULTILINE | re.DOTALL)
    assert "accuracy" not in stripped.lower() and "## Data" in stripped
    (copy / "description.md").write_text(stripped)
    return copy


def test_hybrid_asks_the_llm_where_the_expert_assumed(tmp_path: Path) -> None:
    """The page names no metric: the expert sets everything up on an assumed metric and says so;
    the hybrid policy hands the metric stage, and only it, to the LLM with the expert's draft."""
    workspace = workspace_for(tmp_path, _without_evaluation(tmp_path))
    with ScriptedLLMServer(script("metric")) as server:
        run_setup(workspace, HybridPolicy(ExpertPolicy(), LLMPolicy(client_for(server, workspace))))
        requests = server.chat_requests
    state = workspace.load_state()
    assert all(stage.passed for stage in state.stages.values()), {n: s.last_error for n, s in state.stages.items()}
    assert state.meta["meta_light_solve"].passed
    by_stage = {a["stage"]: a for a in attempts(workspace) if a["kind"] == "stage"}
    assert by_stage["metric"]["plan"].startswith("[llm] (expert unsure: metric: accuracy")
    assert all(a["plan"].startswith("[expert] ") for name, a in by_stage.items() if name != "metric")
    plan = json.loads((workspace.setup / "plan.json").read_text())
    assert plan["metric"] == "accuracy" and plan["assumptions"][0].startswith("metric: accuracy")
    assert len(requests) == 1
    prompt = prompt_of(requests[0])
    assert "could not verify" in prompt and "score_prediction_frame" in prompt  # the expert's draft is shown
    assert "HIGHER_IS_BETTER = True" in (workspace.setup / "code_metric.py").read_text()


def test_hybrid_on_titanic_is_the_expert_alone(tmp_path: Path) -> None:
    workspace = workspace_for(tmp_path, SHARED / "titanic")
    with ScriptedLLMServer([]) as server:
        run_setup(workspace, HybridPolicy(ExpertPolicy(), LLMPolicy(client_for(server, workspace))))
        assert server.chat_requests == []
    assert all(a["plan"].startswith("[expert] ") for a in attempts(workspace) if a["kind"] == "stage")
    assert workspace.load_state().meta["meta_light_solve"].passed
