"""LLM policy pieces without the MDP: the data view, declining on unusable replies, the hybrid's
hand-over, and credit assignment over a failed meta check (real HTTP client, scripted server)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from llm_server import Reply, ScriptedLLMServer

from agentk.llm import LLMConfig, make_client
from agentk.sources import load_competition
from agentk.core.records.workspace import Workspace
from setup_pipeline.llm_policy.credit_assignment import assign_blame, judge_stages
from setup_pipeline.llm_policy.data_view import build_data_view
from setup_pipeline.llm_policy.policy import HybridPolicy, LLMPolicy
from setup_pipeline.policy import Decline, Fill, StageContext
from setup_pipeline.stages import MODALITIES, PLAN, SUMMARISE, TARGET_MAP, StageSpec

SHARED = Path(__file__).resolve().parents[2] / "shared" / "competitions"
MODEL = "qwen2.5-coder-7b"


@pytest.fixture()
def titanic(tmp_path: Path) -> Workspace:
    workspace = Workspace(tmp_path / "ws")
    workspace.create()
    load_competition(SHARED / "titanic").prepare(workspace.raw)
    return workspace


def client_for(server: ScriptedLLMServer, root: Path | None = None):
    return make_client(LLMConfig(base_url=server.base_url, model=MODEL, timeout_s=10, max_retries=0), root)


# ---- data view ---------------------------------------------------------------------------------


def test_data_view_elides_long_listings_and_keeps_the_budget(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    (raw / "data" / "images").mkdir(parents=True)
    for i in range(40):
        (raw / "data" / "images" / f"img_{i:03d}.png").write_bytes(b"\x89PNG")
    pd.DataFrame({"id": range(50), "label": ["cat", "dog"] * 25, "w": [0.5] * 50}).to_csv(raw / "data" / "train.csv", index=False)
    pd.DataFrame({"id": range(50, 60)}).to_csv(raw / "data" / "test.csv", index=False)
    view = build_data_view(raw, max_chars=3000, max_entries=5)
    assert "images/  (40 files)" in view and "... <35 additional files>" in view and "img_039.png" not in view
    assert "### data/train.csv\nformat: csv (read it with agentk.core.readers.read_table), rows: 50, columns: 3" in view
    assert "label: " in view and "w: float64" in view  # dtypes
    assert view.count("dog") + view.count("cat") == 5  # the head: five rows
    assert len(build_data_view(raw, max_chars=700)) <= 700


def test_data_view_of_titanic_shows_every_table(titanic: Workspace) -> None:
    view = build_data_view(titanic.raw)
    for table in ("data/train.csv", "data/test.csv", "data/gender_submission.csv"):
        assert f"### {table}" in view
    assert "PassengerId: int64" in view and "description.md" in view and ".prepared" not in view


# ---- declining --------------------------------------------------------------------------------


def test_reply_without_code_declines_with_a_clear_reason(titanic: Workspace) -> None:
    prose = "I would read train.csv, keep PassengerId as the id and Survived as the target."
    with ScriptedLLMServer([Reply(prose), Reply("Sure! The map has the id and the target column.")]) as server:
        action = LLMPolicy(client_for(server, titanic.root)).act(TARGET_MAP, StageContext(titanic, attempt=1))
        requests = server.chat_requests
    assert isinstance(action, Decline)
    assert "the model wrote no code for stage train_target_map" in action.reason and "```python" in action.reason
    assert len(requests) == 2  # one repair round asking for code only
    assert "Reply again with only the corrected Python code" in requests[1].body["messages"][-1]["content"]


def test_json_stage_declines_after_the_repair_round_fails(titanic: Workspace) -> None:
    bad = '```json\n{"input_modalities": ["tabular", "video"], "target_modality": "tabular"}\n```'
    with ScriptedLLMServer([Reply(bad), Reply(bad)]) as server:
        action = LLMPolicy(client_for(server)).act(MODALITIES, StageContext(titanic, attempt=1))
        repair = server.chat_requests[1].body["messages"][-1]["content"]
    assert isinstance(action, Decline) and "no valid JSON for stage modalities" in action.reason
    assert "input_modalities.1" in repair  # the pydantic error, one line, shown to the model


def test_token_budget_becomes_a_decline(titanic: Workspace) -> None:
    with ScriptedLLMServer([Reply("# Titanic\n\nPredict survival; accuracy.", completion_tokens=5000)]) as server:
        config = LLMConfig(base_url=server.base_url, model=MODEL, timeout_s=10, max_retries=0, token_budget=1000)
        policy = LLMPolicy(make_client(config, titanic.root))
        assert isinstance(policy.act(SUMMARISE, StageContext(titanic, attempt=1)), Fill)
        action = policy.act(MODALITIES, StageContext(titanic, attempt=1))
    assert isinstance(action, Decline) and "token budget is spent" in action.reason


def test_plan_prompt_shows_schema_and_memory(titanic: Workspace) -> None:
    (titanic.setup / "task_summary.md").write_text("# Titanic\nPredict Survived; accuracy.\n")
    ctx = StageContext(titanic, attempt=2, last_error="column 'Passenger' appears in no data file header nor in the description")
    text = "\n".join(m.content for m in LLMPolicy(client=None).messages(PLAN, ctx))  # type: ignore[arg-type]
    for needle in ("## TASK-SUMMARY", "## DATA-VIEW", "## ERROR", "column 'Passenger'", '"submission_columns"', '"sample_submission"', "```json"):
        assert needle in text


# ---- hybrid -----------------------------------------------------------------------------------


class Scripted:
    def __init__(self, name: str, action) -> None:
        self.name, self.action, self.calls = name, action, 0

    def act(self, stage: StageSpec, ctx: StageContext):
        self.calls += 1
        return self.action


def test_hybrid_hands_retries_to_the_llm(titanic: Workspace) -> None:
    expert, llm = Scripted("expert", Fill("x = 1", "expert way")), Scripted("llm", Fill("x = 2", "llm way"))
    hybrid = HybridPolicy(expert, llm)
    assert hybrid.act(TARGET_MAP, StageContext(titanic, attempt=1)) == Fill("x = 1", "[expert] expert way")
    assert hybrid.act(TARGET_MAP, StageContext(titanic, attempt=2, last_error="boom")) == Fill("x = 2", "[llm] llm way")
    # after a meta check sent the run back, the stage's last_error is the meta error: the LLM acts
    assert hybrid.act(TARGET_MAP, StageContext(titanic, attempt=1, last_error="meta_maps: ids differ")).plan == "[llm] llm way"
    assert expert.calls == 1 and llm.calls == 2
    both = HybridPolicy(Scripted("expert", Decline("no metric")), Scripted("llm", Decline("no code")))
    action = both.act(TARGET_MAP, StageContext(titanic, attempt=1))
    assert action == Decline("expert declined (no metric); llm declined: no code")


# ---- credit assignment ------------------------------------------------------------------------

META_ERROR = ("meta_maps: train_tab_input_map.csv and train_tab_target_map.csv disagree on ids: "
              "0 missing (e.g. []), 3 extra (e.g. ['1', '2'])")
INPUT_CODE = "def build_map():\n    df = pd.read_csv(RAW / 'data/train.csv', dtype=str)\n    return df.rename(columns={'PassengerId': 'id'})\n"
TARGET_CODE = "def build_map():\n    df = pd.read_csv(RAW / 'data/train.csv', dtype=str).head(798)\n    return df[['PassengerId', 'Survived']].rename(columns={'PassengerId': 'id'})\n"
TRANSFORM_CODE = "def forward(df):\n    return df\n\ndef inverse(df):\n    return df\n\ndef target_info(df):\n    return {}\n"
THOUGHT = ("The input map has 3 ids the target map lacks, so one of the two maps dropped or added rows. "
           "The target map keeps only the first 798 rows, which would explain 3 extra ids in the input map.")


def test_assign_blame_returns_the_faulty_stage() -> None:
    stages = [("train_input_map_tab", INPUT_CODE), ("train_target_map", TARGET_CODE), ("target_transform", TRANSFORM_CODE)]
    replies = [
        Reply(THOUGHT),
        Reply('The input map reads every row.\n```json\n{"at_fault": false, "reason": "reads all rows of train.csv"}\n```'),
        Reply('```json\n{"at_fault": true, "reason": "head(798) drops rows",}\n```'),  # malformed, then repaired
        Reply('```json\n{"at_fault": true, "reason": "head(798) drops the last rows of train.csv"}\n```'),
        Reply('{"at_fault": false, "reason": "the transform does not change ids"}'),
    ]
    with ScriptedLLMServer(replies) as server:
        assert assign_blame(client_for(server), META_ERROR, stages).stages == ["train_target_map"]
        requests = server.chat_requests
    first = requests[0].body["messages"][-1]["content"]
    assert META_ERROR in first and "## CODE-TRAIN-TARGET-MAP" in first and "head(798)" in first
    ca = requests[2].body["messages"][-1]["content"]
    assert "## META-ERROR-THOUGHT" in ca and THOUGHT in ca and "`train_target_map`" in ca and "head(798)" in ca
    assert "`train_input_map_tab`" in requests[1].body["messages"][-1]["content"]


def test_assign_blame_is_conservative() -> None:
    stages = [("train_target_map", TARGET_CODE), ("target_transform", TRANSFORM_CODE)]
    replies = [Reply(THOUGHT), Reply('{"at_fault": false, "reason": "fine"}'), Reply('{"at_fault": false, "reason": "fine"}')]
    with ScriptedLLMServer(replies) as server:
        assert assign_blame(client_for(server), META_ERROR, stages).stages == ["train_target_map", "target_transform"]
    with ScriptedLLMServer([]) as server:  # the server fails: every stage is rewritten
        assert assign_blame(client_for(server), META_ERROR, stages).stages == ["train_target_map", "target_transform"]
    with ScriptedLLMServer([Reply(THOUGHT), Reply("not json"), Reply("still not"), Reply('{"at_fault": false, "reason": "ok"}')]) as server:
        thought, verdicts = judge_stages(client_for(server), META_ERROR, stages)
    assert thought == THOUGHT and [(v.stage, v.at_fault) for v in verdicts] == [("train_target_map", True), ("target_transform", False)]
    assert verdicts[0].reason.startswith("could not judge")


def test_covered_code_reads_each_stage_hole(titanic: Workspace) -> None:
    from setup_pipeline.llm_policy.credit_assignment import covered_code
    from setup_pipeline.stages import TARGET_TRANSFORM

    (titanic.setup / TARGET_MAP.output).write_text(TARGET_MAP.render(TARGET_CODE))
    (titanic.setup / "modalities.json").write_text('{"input_modalities": ["tabular"]}')
    got = covered_code(titanic, [MODALITIES, TARGET_MAP, TARGET_TRANSFORM])  # transform not written yet
    assert got == [("modalities", '{"input_modalities": ["tabular"]}'), ("train_target_map", TARGET_CODE.strip("\n"))]


def test_data_view_shows_tables_in_any_format_as_written(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    (raw / "data").mkdir(parents=True)
    frame = pd.DataFrame({"id": ["007", "010"], "x": [1.5, 2.5]})
    (raw / "data" / "train.jsonl").write_text(frame.to_json(orient="records", lines=True))
    frame.to_parquet(raw / "data" / "test.parquet", index=False)
    view = build_data_view(raw)
    assert "### data/train.jsonl\nformat: jsonl" in view and "### data/test.parquet\nformat: parquet" in view
    assert "007" in view  # the head shows cells as written, leading zeros kept
