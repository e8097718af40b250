"""The setup MDP on real competitions: stages pass with the expert policy, failed unit tests repeat a
stage with the error kept, failed meta tests go back to the earliest stage they cover, every attempt
is logged, and a run resumes from state.json."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from agentk.core.errors import SetupFailed
from agentk.core.records.events import EventLog
from agentk.sources import load_competition
from agentk.core.records.workspace import Workspace
from setup_pipeline.expert.expert_policy import ExpertPolicy
from setup_pipeline.mdp import SetupBudget, SetupMDP
from setup_pipeline.policy import Action, Fill, StageContext
from setup_pipeline.stages import StageSpec

pytestmark = pytest.mark.integration

SHARED = Path(__file__).resolve().parents[2] / "shared" / "competitions"
FAST = SetupBudget(attempts_per_stage=3, meta_rounds=2, stage_timeout_s=120, light_solve_timeout_s=240)


def _workspace(tmp_path: Path, competition: str) -> Workspace:
    workspace = Workspace(tmp_path / competition)
    workspace.create()
    load_competition(SHARED / competition).prepare(workspace.raw)
    return workspace


def _run(workspace: Workspace, policy) -> None:
    state = workspace.load_state()
    SetupMDP(workspace, policy, EventLog(workspace.logs / "events.jsonl", quiet=True), FAST).run(state, workspace.save_state)


def _attempts(workspace: Workspace) -> list[dict]:
    return [json.loads(line) for line in (workspace.logs / "attempts.jsonl").read_text().splitlines()]


class FaultyOnce:
    """Wraps the expert: at the named stage, the first attempt gets a broken hole."""

    def __init__(self, stage: str, breaker) -> None:
        self.inner, self.stage, self.breaker, self.broken = ExpertPolicy(), stage, breaker, False
        self.name = "faulty-once"
        self.seen_errors: list[str | None] = []

    def act(self, stage: StageSpec, ctx: StageContext) -> Action:
        action = self.inner.act(stage, ctx)
        if stage.name == self.stage:
            self.seen_errors.append(ctx.last_error or ctx.meta_error)
            if not self.broken:
                self.broken = True
                assert isinstance(action, Fill)
                return Fill(self.breaker(action.content))
        return action


def test_failed_unit_test_repeats_the_stage_with_the_error_and_a_resumed_setup_skips_what_passed(
        tmp_path: Path) -> None:
    """One s3e5 setup for both (each costs the suite a setup): a stage whose unit test failed
    repeats with the error kept; the setup it ends in, run again, re-runs nothing, and with one
    stage's output gone resumes from that stage."""
    workspace = _workspace(tmp_path, "playground-series-s3e5")
    # The first target map keeps a duplicated id: the stage check must catch it.
    policy = FaultyOnce("train_target_map", lambda code: code.replace("return out.reset_index(drop=True)", "return pd.concat([out, out.head(3)]).reset_index(drop=True)"))
    _run(workspace, policy)
    records = [r for r in _attempts(workspace) if r["stage"] == "train_target_map"]
    assert [r["passed"] for r in records] == [False, True]
    assert "duplicated" in records[0]["problems"][0]
    assert "wrote train_tab_target_map.csv" in records[1]["output"]  # the sandbox output is kept
    assert policy.seen_errors[1] is not None and "duplicated" in policy.seen_errors[1]

    before = len(_attempts(workspace))
    _run(workspace, ExpertPolicy())
    assert len(_attempts(workspace)) == before  # nothing re-ran: every stage's output still checks out
    (workspace.setup / "train_tab_target_map.csv").unlink()
    state = workspace.load_state()
    state.meta["meta_maps"].passed = False
    workspace.save_state(state)
    _run(workspace, ExpertPolicy())
    rerun = [r["stage"] for r in _attempts(workspace)[before:]]
    assert rerun[0] == "train_target_map" and "summarise" not in rerun


def test_failed_meta_test_returns_to_the_earliest_stage_it_covers_and_setup_passes_every_stage(tmp_path: Path) -> None:
    """One titanic setup for both (each costs the suite a setup): the maps meta test sends setup
    back to the first stage it covers, and the setup then passes every stage, maps and facts as
    the expert writes them (the expert alone on titanic is test_end_to_end's titanic run)."""
    workspace = _workspace(tmp_path, "titanic")
    # A well-formed test map that silently drops rows passes its unit test; only the maps meta
    # test (sample ids vs test ids) can see the fault.
    policy = FaultyOnce("test_input_map_tab", lambda code: code.replace("return out.reset_index(drop=True)", "return out.iloc[: len(out) // 2].reset_index(drop=True)"))
    _run(workspace, policy)
    records = _attempts(workspace)
    meta = [r for r in records if r["stage"] == "meta_maps"]
    assert [r["passed"] for r in meta] == [False, True]
    assert "not in the test maps" in meta[0]["problems"][0]
    order = [r["stage"] for r in records]
    first_meta = order.index("meta_maps")
    # After the failure the MDP went back to the first stage the meta test covers.
    assert order[first_meta + 1] == "train_input_map_tab"
    assert workspace.load_state().stage("test_input_map_tab").attempts == 2
    state = workspace.load_state()
    assert all(stage.passed for stage in state.stages.values())
    assert {"summarise", "modalities", "plan", "train_input_map_tab", "train_target_map", "target_transform", "test_input_map_tab", "submission_format", "metric"} <= set(state.stages)
    assert state.meta["meta_maps"].passed and state.meta["meta_light_solve"].passed
    tab = pd.read_csv(workspace.setup / "train_tab_input_map.csv")
    assert tab.columns[0] == "id" and "Survived" not in tab.columns and len(tab) == 801
    info = json.loads((workspace.setup / "target_info.json").read_text())
    assert info["targets"] == [{"column": "Survived", "task": "binary", "classes": [0, 1]}]
    assert json.loads((workspace.setup / "metric_check.json").read_text())["higher_is_better"] is True


def test_a_declining_policy_fails_setup_with_its_reason(tmp_path: Path) -> None:
    workspace = _workspace(tmp_path, "titanic")
    (workspace.raw / "data" / "train.csv").unlink()  # nothing to learn from: the expert must decline
    with pytest.raises(SetupFailed, match="no training data"):
        _run(workspace, ExpertPolicy())
    record = _attempts(workspace)[-1]
    assert record["declined"] and record["stage"] == "modalities"


def test_an_unexpected_failure_of_the_expert_is_a_one_line_decline(tmp_path: Path) -> None:
    """Data its rules never met must not become a traceback wall: one line, the trace in the logs."""
    from setup_pipeline.policy import Decline
    from setup_pipeline.stages import TARGET_MAP

    workspace = _workspace(tmp_path, "titanic")
    (workspace.setup / "plan.json").write_text(json.dumps({"facts": {"train_file": 3}}))  # not DataFacts
    action = ExpertPolicy().act(TARGET_MAP, StageContext(workspace, attempt=1))
    assert isinstance(action, Decline) and "rules failed on this data" in action.reason
    assert "\n" not in action.reason
    assert "Traceback" in (workspace.logs / "expert_errors.log").read_text()


def test_labels_spelled_otherwise_after_a_csv_round_trip(tmp_path: Path) -> None:
    """Train in JSON says "TRUE"/"FALSE"; the maps read them back as booleans; the submission's
    probability of TRUE still finds its prediction column, first time."""
    workspace = _workspace(tmp_path, "titanic")
    data = workspace.raw / "data"
    train = pd.read_csv(data / "train.csv")
    train["Survived"] = train["Survived"].map({1: "TRUE", 0: "FALSE"})
    (data / "train.json").write_text(train.to_json(orient="records"))
    (data / "train.csv").unlink()
    sample = pd.read_csv(data / "gender_submission.csv").assign(Survived=0.5)
    sample.to_csv(data / "gender_submission.csv", index=False)
    (workspace.raw / "description.md").write_text("# Titanic\n\n## Evaluation\n\nSubmissions are scored on the area under the ROC curve.\n")
    _run(workspace, ExpertPolicy())
    state = workspace.load_state()
    assert state.stage("submission_format").passed and state.stage("submission_format").attempts == 1
    assert state.meta["meta_light_solve"].passed
