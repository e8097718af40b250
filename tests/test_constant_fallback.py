"""Past setup's deadline with no usable sample submission, the run hands in a constant one built
from what setup knows by then (the test's ids, the target's columns, the train target's prior, mean
or commonest value), checked and recorded as the sample is; with nothing known it fails in one
`error:` line. Tables are made here; the stages run in the real sandbox."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from rich.console import Console

from agentk.core.artifacts import SetupLayout
from agentk.core.records.events import EventLog
from agentk.core.records.workspace import Workspace
from setup_pipeline.hand_in import hand_in_at_deadline
from agentk.sources import load_competition
from setup_pipeline.constant_submission import constant_submission
from setup_pipeline.deadline import CONSTANT_MODEL, SAMPLE_MODEL, Deadline, SetupDeadline, hand_in_without_model
from setup_pipeline.expert.expert_policy import ExpertPolicy
from setup_pipeline.mdp import SetupMDP
from solve_pipeline.base.submission_record import read_record
from unit_tests_setup.submission_rules import validate_against_setup

AGENTK = [sys.executable, "-m", "agentk.cli"]


def _competition(root: Path, metric: str = "accuracy", sample: str | None = None) -> Path:
    """A binary task keyed by `row_id` (a skewed label), with or without a sample submission."""
    rng = np.random.default_rng(3)
    n_train, n_test = 80, 30
    x = rng.normal(size=n_train + n_test)
    ids = np.arange(1001, 1001 + n_train + n_test)
    (root / "data").mkdir(parents=True)
    (root / "description.md").write_text(f"# Task\n\n## Evaluation\n\nSubmissions are evaluated on {metric}.\n\n"
                                         "## Submission\n\nA file with columns row_id and label.\n")
    train = pd.DataFrame({"row_id": ids[:n_train], "f_a": x[:n_train].round(3),
                          "label": (x[:n_train] > -0.6).astype(int)})
    train.to_csv(root / "data" / "train.csv", index=False)
    pd.DataFrame({"row_id": ids[n_train:], "f_a": x[n_train:].round(3)}).to_csv(root / "data" / "test.csv", index=False)
    if sample is not None:
        (root / "data" / "sample_submission.csv").write_text(sample)
    return root


def _workspace(source: Path, tmp_path: Path) -> Workspace:
    workspace = Workspace(tmp_path / "ws")
    workspace.create()
    load_competition(source).prepare(workspace.raw)
    return workspace


def _setup_until_plan(workspace: Workspace) -> None:
    """Setup as the expert runs it, with its deadline spent once the plan is written: the test
    map and the target map are never written."""

    class LateAfterPlan(ExpertPolicy):
        def act(self, spec, ctx):  # type: ignore[no-untyped-def]
            action = super().act(spec, ctx)
            if spec.name == "plan":
                mdp.deadline = Deadline.starting(0.0, started=0)
            return action

    mdp = SetupMDP(workspace, LateAfterPlan(), EventLog(workspace.logs / "events.jsonl", quiet=True),
                   deadline=Deadline.starting(3600))
    with pytest.raises(SetupDeadline):
        mdp.run(workspace.load_state(), workspace.save_state)
    assert SetupLayout(workspace.setup).plan.exists() and not SetupLayout(workspace.setup).target_map.exists()


def test_without_a_sample_the_constant_is_the_train_mode_over_the_test_ids(tmp_path: Path) -> None:
    """The deadline passes after the plan: the ids are read from the test table the facts name,
    the label is train's commonest; the file passes the run's check and its record says constant.
    Under a probability metric the same column holds the positive class's prior."""
    source = _competition(tmp_path / "no-sample")
    workspace = _workspace(source, tmp_path)
    _setup_until_plan(workspace)
    console = Console(record=True, width=400)
    events = EventLog(workspace.logs / "events.jsonl", console=console)
    hand_in_at_deadline(workspace, events, SetupDeadline("setup's deadline (1 s) passed before 'train_input_map_tab'"))
    said = [line for line in console.export_text().splitlines() if line.strip()]
    assert len(said) == 1 and "handed in a constant one, label = " in said[0], said
    recorded = [json.loads(line) for line in (workspace.logs / "events.jsonl").read_text().splitlines()]
    assert [e["source"] for e in recorded if e["event"] == "setup_deadline_submission"] == [CONSTANT_MODEL]
    handed = hand_in_without_model(workspace)  # again, as a resumed run would: the same answer
    assert handed is not None and handed.source == CONSTANT_MODEL, handed
    train = pd.read_csv(source / "data" / "train.csv")
    test = pd.read_csv(source / "data" / "test.csv")
    submitted = pd.read_csv(workspace.submission_path)
    assert list(submitted.columns) == ["row_id", "label"]
    assert submitted["row_id"].tolist() == test["row_id"].tolist()
    assert set(submitted["label"]) == {train["label"].mode()[0]}
    assert read_record(workspace.submission_path).model == CONSTANT_MODEL  # type: ignore[union-attr]
    assert "label = " in handed.described
    assert not list(workspace.submission_path.parent.glob(".*.tmp"))

    plan_path = SetupLayout(workspace.setup).plan
    plan = json.loads(plan_path.read_text())
    constant = constant_submission(workspace, {**plan, "metric": "auc"})
    assert constant is not None
    assert constant.frame["label"].tolist() == pytest.approx([train["label"].eq(1).mean()] * len(test), abs=1e-6)


def test_a_sample_without_rows_is_refused_and_the_constant_takes_the_test_ids(tmp_path: Path) -> None:
    """A sample holding its header alone is no submission, and shows no shape to follow: the
    constant takes the plan's columns over the test table's ids, and the run's check accepts it."""
    source = _competition(tmp_path / "empty-sample", sample="row_id,label\n")
    workspace = _workspace(source, tmp_path)
    _setup_until_plan(workspace)
    plan = json.loads(SetupLayout(workspace.setup).plan.read_text())
    assert validate_against_setup(workspace, source / "data" / "sample_submission.csv", plan)  # refused
    handed = hand_in_without_model(workspace)
    assert handed is not None and handed.source == CONSTANT_MODEL
    submitted = pd.read_csv(workspace.submission_path)
    test = pd.read_csv(source / "data" / "test.csv")
    assert submitted["row_id"].tolist() == test["row_id"].tolist() and submitted["label"].notna().all()
    assert not validate_against_setup(workspace, workspace.submission_path, plan, ids=test["row_id"].astype(str).tolist())


def test_a_valid_sample_is_still_handed_in_as_it_is(tmp_path: Path) -> None:
    sample = "row_id,label\n" + "".join(f"{i},0\n" for i in range(1081, 1111))
    workspace = _workspace(_competition(tmp_path / "sample", sample=sample), tmp_path)
    _setup_until_plan(workspace)
    handed = hand_in_without_model(workspace)
    assert handed is not None and (handed.source, handed.described) == (SAMPLE_MODEL, "data/sample_submission.csv")
    assert workspace.submission_path.read_text() == sample


def test_numbers_are_given_their_mean_and_class_columns_their_shares(tmp_path: Path) -> None:
    """From setup's own maps (the test map's ids, the target map's values): a regression target
    takes the train mean; a submission of one probability per class takes each class's share."""
    workspace = Workspace(tmp_path / "ws")
    workspace.create()
    layout = SetupLayout(workspace.setup)
    pd.DataFrame({"id": ["a", "b", "c"], "x": [1, 2, 3]}).to_csv(layout.input_map("test", "tab"), index=False)
    pd.DataFrame({"id": ["p", "q", "r", "s"], "price": [1.0, 2.0, 4.5, 0.5]}).to_csv(layout.target_map, index=False)
    regression = {"id_column": "key", "target_columns": ["price"], "task_type": "regression", "metric": "rmse",
                  "submission_columns": ["key", "price"]}
    frame = constant_submission(workspace, regression).frame  # type: ignore[union-attr]
    assert frame["key"].tolist() == ["a", "b", "c"] and set(frame["price"]) == {2.0}

    pd.DataFrame({"id": ["p", "q", "r", "s"], "kind": ["cat", "dog", "cat", "cat"]}).to_csv(layout.target_map, index=False)
    shares = {"id_column": "key", "target_columns": ["kind"], "task_type": "multiclass", "metric": "logloss",
              "submission_columns": ["key", "cat", "dog", "eel"], "facts": {"submission_format": "per_class_proba"}}
    frame = constant_submission(workspace, shares).frame  # type: ignore[union-attr]
    assert frame.iloc[0].tolist() == ["a", 0.75, 0.25, 0.0]
    assert constant_submission(workspace, {**shares, "submission_columns": ["key", "echo", "more"], "facts": {}}) is None
    # One answer column for the one target, named otherwise: the target's commonest value.
    renamed = constant_submission(workspace, {**shares, "metric": "accuracy", "submission_columns": ["key", "Kind"], "facts": {}})
    assert renamed is not None and set(renamed.frame["Kind"]) == {"cat"}


def test_with_nothing_known_there_is_no_constant(tmp_path: Path) -> None:
    workspace = Workspace(tmp_path / "ws")
    workspace.create()
    assert hand_in_without_model(workspace) is None


@pytest.mark.integration
def test_a_run_past_its_deadline_knowing_nothing_fails_in_one_line(tmp_path: Path) -> None:
    """No sample and a deadline spent before the first stage: one `error:` line, a non-zero exit,
    the reason recorded in result.json."""
    source = _competition(tmp_path / "nothing-known")
    proc = subprocess.run([*AGENTK, "run", str(source), "-w", str(tmp_path / "ws"), "--time-budget", "5",
                           "--setup-deadline", "0.001"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr + proc.stdout
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "setup's deadline" in errors[0] and "too little" in errors[0], proc.stderr
    result = json.loads((tmp_path / "ws" / source.name / "result.json").read_text())
    assert not result["valid_submission"] and "too little" in result["error"]
