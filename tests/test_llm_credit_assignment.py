"""Credit assignment (Agent K 3.1.3) on a failed meta check, with the real SetupMDP, LLMPolicy and
HTTP client against a scripted OpenAI-compatible server on 127.0.0.1, on titanic.

The test input map drops half of test.csv: a well-formed map, so its own stage check passes, but
meta_maps fails ("ids of the sample submission are not in the test maps"). With
`blame=partial(assign_blame, client)` the model thinks about the error, judges each covered stage,
and only the test map is rewritten; with `blame=None` every covered stage is rewritten (the contrast).
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest

from llm_server import Reply, ScriptedLLMServer
from test_llm_policy import (
    FAST,
    SHARED,
    attempts,
    client_for,
    prompt_of,
    script,
    workspace_for,
)

from agentk.core.records.events import EventLog
from agentk.core.records.workspace import Workspace
from setup_pipeline.llm_policy import LLMPolicy, assign_blame
from setup_pipeline.mdp import Blame, SetupMDP

pytestmark = pytest.mark.integration

CREDIT = Path(__file__).resolve().parent / "llm_scripts" / "titanic_credit"
COVERED = ["train_input_map_tab", "train_target_map", "target_transform", "test_input_map_tab"]
# Up to (and including) the faulty test map: meta_maps runs right after it.
UNTIL_META_MAPS = ("summarise", "modalities", "plan_repaired", "train_input_map_tab", "train_target_map_fixed", "target_transform")
AFTER_META_MAPS = ("submission_format", "metric")
META_ERROR = "ids of the sample submission gender_submission.csv are not in the test maps"
MISSING = "45 " + META_ERROR  # the agent's test.csv is titanic's 90 held-out train rows; the map kept 45


def credit(*names: str) -> list[Reply]:
    return [Reply((CREDIT / f"{name}.md").read_text(encoding="utf-8")) for name in names]


def run_setup(workspace: Workspace, server: ScriptedLLMServer, with_blame: bool) -> None:
    client = client_for(server, workspace)
    blame: Blame | None = functools.partial(assign_blame, client) if with_blame else None
    events = EventLog(workspace.logs / "events.jsonl", quiet=True)
    SetupMDP(workspace, LLMPolicy(client), events, FAST, blame=blame).run(workspace.load_state(), workspace.save_state)


def events_of(workspace: Workspace, name: str) -> list[dict]:
    lines = [json.loads(line) for line in (workspace.logs / "events.jsonl").read_text().splitlines()]
    return [e for e in lines if e["event"] == name]


def common_outcome(workspace: Workspace) -> list[dict]:
    """Both runs end fully set up after exactly one failed meta_maps round."""
    state = workspace.load_state()
    assert all(stage.passed for stage in state.stages.values()), {n: s.last_error for n, s in state.stages.items()}
    assert state.meta["meta_maps"].passed and state.meta["meta_light_solve"].passed
    log = attempts(workspace)
    maps = [a for a in log if a["kind"] == "meta" and a["stage"] == "meta_maps"]
    assert [m["passed"] for m in maps] == [False, True]
    assert any(META_ERROR in p for p in maps[0]["problems"]), maps[0]["problems"]
    n_test = len((workspace.raw / "data" / "test.csv").read_text().splitlines()) - 1
    assert maps[0]["problems"][0].startswith(f"{n_test - n_test // 2} ids of the sample submission")  # half dropped
    tests = [a for a in log if a["kind"] == "stage" and a["stage"] == "test_input_map_tab"]
    assert [t["passed"] for t in tests] == [True, True]  # the half map passed its own stage check
    assert "keep every row" in tests[1]["plan"]
    test_map = (workspace.setup / "test_tab_input_map.csv").read_text().splitlines()
    assert len(test_map) == 1 + n_test
    return log


def test_credit_assignment_rewrites_only_the_faulty_stage(tmp_path: Path) -> None:
    workspace = workspace_for(tmp_path, SHARED / "titanic")
    replies = [
        *script(*UNTIL_META_MAPS), *credit("test_input_map_tab_half"),
        # meta_maps fails: the META-ERROR-THOUGHT, then one verdict per covered stage, in sequence order
        *credit("meta_error_thought", "ca_train_input_map_tab", "ca_train_target_map", "ca_target_transform", "ca_test_input_map_tab"),
        *credit("test_input_map_tab_fixed"), *script(*AFTER_META_MAPS),
    ]
    with ScriptedLLMServer(replies) as server:
        run_setup(workspace, server, with_blame=True)
        requests = server.chat_requests
    assert len(requests) == len(replies)  # the script is used up exactly
    log = common_outcome(workspace)

    # Only the blamed stage was re-attempted; the stages judged correct kept their first attempt.
    state = workspace.load_state()
    assert {name: state.stages[name].attempts for name in COVERED} == {
        "train_input_map_tab": 1, "train_target_map": 1, "target_transform": 1, "test_input_map_tab": 2}
    stage_order = [a["stage"] for a in log if a["kind"] == "stage"]
    assert stage_order[stage_order.index("test_input_map_tab") + 1] == "test_input_map_tab"

    # The credit-assignment prompts: the error and every covered stage's code, then one stage at a time.
    thought_prompt = prompt_of(requests[7])
    assert META_ERROR in thought_prompt and "df.iloc[: len(df) // 2]" in thought_prompt
    assert all(f"## CODE-{n.upper().replace('_', '-')}" in thought_prompt for n in COVERED)
    for request, name in zip(requests[8:12], COVERED):
        judged = prompt_of(request)
        assert f"Consider only stage `{name}`" in judged and "## META-ERROR-THOUGHT" in judged
        assert "the test input map stage reading only part of data/test.csv" in judged  # the model's own thought
    calls = [json.loads(line) for line in (workspace.logs / "llm_calls.jsonl").read_text().splitlines()]
    assert [c["stage"] for c in calls].count("credit_assignment") == 5

    # The rewrite prompt carries the meta error and the faulty code.
    rewrite = prompt_of(requests[12])
    assert "## ERROR" in rewrite and f"meta_maps: {MISSING}" in rewrite
    assert "## PREVIOUS-CODE" in rewrite and "df.iloc[: len(df) // 2]" in rewrite
    # ... and the model's own diagnosis, so the rewrite starts from it (Agent K 3.1.3).
    assert "## META-ERROR-THOUGHT" in rewrite and "It should keep every row of test.csv" in rewrite

    (blamed,) = events_of(workspace, "meta_blame")
    assert blamed["blamed"] == ["test_input_map_tab"] and blamed["covered"] == COVERED
    (backtrack,) = events_of(workspace, "meta_backtrack")
    assert backtrack["check"] == "meta_maps" and backtrack["to"] == "test_input_map_tab"


def test_without_credit_assignment_every_covered_stage_is_rewritten(tmp_path: Path) -> None:
    workspace = workspace_for(tmp_path, SHARED / "titanic")
    replies = [
        *script(*UNTIL_META_MAPS), *credit("test_input_map_tab_half"),
        # meta_maps fails: no judgement, the run goes back to the first covered stage and redoes all four
        *script("train_input_map_tab", "train_target_map_fixed", "target_transform"), *credit("test_input_map_tab_fixed"),
        *script(*AFTER_META_MAPS),
    ]
    with ScriptedLLMServer(replies) as server:
        run_setup(workspace, server, with_blame=False)
        requests = server.chat_requests
    assert len(requests) == len(replies)
    common_outcome(workspace)

    state = workspace.load_state()
    assert {name: state.stages[name].attempts for name in COVERED} == dict.fromkeys(COVERED, 2)
    # Each redone stage was prompted with the meta error, though only the test map was wrong.
    for request in requests[7:11]:
        assert f"meta_maps: {MISSING}" in prompt_of(request)
    calls = [json.loads(line) for line in (workspace.logs / "llm_calls.jsonl").read_text().splitlines()]
    assert "credit_assignment" not in {c["stage"] for c in calls}
    assert events_of(workspace, "meta_blame") == []
    (backtrack,) = events_of(workspace, "meta_backtrack")
    assert backtrack["to"] == "train_input_map_tab"
