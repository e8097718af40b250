"""A setup that fails after its retries still ends with a valid submission when the run can make
one without a model: the sample as it is (the same hand-in as at setup's deadline), said in one
warning line, the failure kept in result.json (a campaign counts it as a failed setup), and a
resumed run tries setup again without losing the file. With nothing to hand in, the run fails in
one `error:` line as before. Competitions are made here; the stages run in the real sandbox."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import agentk.runner as runner
from agentk.campaign.driver import run_verdict
from agentk.core.records.config import RunConfig
from agentk.core.records.results import RunResult
from agentk.runner import run_competition
from setup_pipeline.expert.expert_policy import ExpertPolicy
from setup_pipeline.hand_in import failure_summary
from setup_pipeline.policy import Decline

pytestmark = pytest.mark.integration

AGENTK = [sys.executable, "-m", "agentk.cli"]
TARGET_STAGE = "train_target_map"


def _competition(root: Path, *, sample: bool = True, one_label: bool = False) -> Path:
    """A binary task keyed by `row_id`; with a sample submission listing the test's ids, or none.
    `one_label`: train's answers hold a single value, which the expert declines to model."""
    rng = np.random.default_rng(5)
    n_train, n_test = 60, 20
    x = rng.normal(size=n_train + n_test)
    ids = np.arange(501, 501 + n_train + n_test)
    (root / "data").mkdir(parents=True)
    (root / "description.md").write_text("# Task\n\n## Evaluation\n\nSubmissions are evaluated on accuracy.\n\n"
                                         "## Submission\n\nA file with columns row_id and label.\n")
    label = np.ones(n_train, dtype=int) if one_label else (x[:n_train] > 0).astype(int)
    pd.DataFrame({"row_id": ids[:n_train], "f_a": x[:n_train].round(3), "label": label}).to_csv(root / "data" / "train.csv", index=False)
    pd.DataFrame({"row_id": ids[n_train:], "f_a": x[n_train:].round(3)}).to_csv(root / "data" / "test.csv", index=False)
    if sample:
        (root / "data" / "sample_submission.csv").write_text("row_id,label\n" + "".join(f"{i},0\n" for i in ids[n_train:]))
    return root


class TargetUnmappable(ExpertPolicy):
    """The expert, except that it finds no way to map the target: each attempt at the train target
    map fails (a retryable decline is a failed attempt), after the plan and the input maps passed."""

    def act(self, spec, ctx):  # type: ignore[no-untyped-def]
        if spec.name == TARGET_STAGE:
            return Decline("the target's values cannot be mapped", retryable=True)
        return super().act(spec, ctx)


def test_a_setup_failing_after_the_plan_hands_in_the_sample_and_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    source = _competition(tmp_path / "unmappable")
    monkeypatch.setattr(runner, "_policy", lambda *args, **kwargs: (TargetUnmappable(), None))
    config = RunConfig(workspace_root=tmp_path / "ws", folds=2, time_budget_s=3, tune=False)
    outcome = run_competition(source, config)  # returns: the CLI exits 0

    said = [line for line in capsys.readouterr().err.splitlines() if "handed in" in line]
    assert len(said) == 1, said
    assert said[0].strip() == (f"warning: setup failed at stage '{TARGET_STAGE}' (expert policy declined: the target's "
                               "values cannot be mapped); handed in the sample submission data/sample_submission.csv "
                               "as it is (no model trained)")
    workspace = outcome.workspace
    result = RunResult.read(workspace.result_path)
    assert result is not None and result.valid_submission and result.phase == "done" and result.error is None
    assert result.model == "sample_submission" and result.validation_score is None
    assert result.setup_failure == (f"setup stage '{TARGET_STAGE}' failed after 3 attempts: "
                                    "expert policy declined: the target's values cannot be mapped")
    # The records say where setup stopped: the plan passed, the target map did not.
    assert result.setup["plan"].passed and not result.setup[TARGET_STAGE].passed and not result.setup_passed
    assert result.setup[TARGET_STAGE].attempts == 3
    sample = (source / "data" / "sample_submission.csv").read_bytes()
    assert workspace.submission_path.read_bytes() == sample
    events = [json.loads(line) for line in (workspace.logs / "events.jsonl").read_text().splitlines()]
    [handed] = [e for e in events if e["event"] == "setup_failed_submission"]
    assert handed["source"] == "sample_submission" and handed["file"] == "data/sample_submission.csv"
    assert handed["reason"] == result.setup_failure
    # A campaign reads it as a failed setup, to remember and retry, not as a solved task.
    ok, why = run_verdict(json.loads(workspace.result_path.read_text()), None, 0)
    assert not ok and why is not None and result.setup_failure in why and "without a model" in why

    # Run again: setup is tried again (fresh attempts at the failed stage, the passed ones kept),
    # fails again, and the same file is handed in: no loop, nothing lost.
    capsys.readouterr()
    again = RunResult.read(run_competition(source, config).workspace.result_path)
    assert again is not None and again.valid_submission and again.setup_failure == result.setup_failure
    assert again.setup[TARGET_STAGE].attempts == 6 and again.setup["plan"].attempts == 1
    assert workspace.submission_path.read_bytes() == sample
    assert len([line for line in capsys.readouterr().err.splitlines() if "handed in" in line]) == 1

    # With the expert as it is, the next run's setup passes and the solve replaces the sample.
    monkeypatch.setattr(runner, "_policy", lambda *args, **kwargs: (ExpertPolicy(), None))
    solved = RunResult.read(run_competition(source, config).workspace.result_path)
    assert solved is not None and solved.valid_submission and solved.setup_failure is None and solved.setup_passed
    assert solved.model != "sample_submission" and solved.validation_score is not None
    assert run_verdict(json.loads(workspace.result_path.read_text()), None, 0) == (True, None)


def test_with_no_sample_and_no_plan_the_failure_stays_one_error_line(tmp_path: Path) -> None:
    """Setup declines at its first stages (train's answers hold one value) and there is no sample:
    nothing to hand in, so one `error:` line, a non-zero exit, and no valid submission."""
    source = _competition(tmp_path / "one-label", sample=False, one_label=True)
    proc = subprocess.run([*AGENTK, "run", str(source), "-w", str(tmp_path / "ws"), "--time-budget", "3"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr + proc.stdout
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "single value" in errors[0], proc.stderr
    assert "handed in" not in proc.stderr
    result = json.loads((tmp_path / "ws" / source.name / "result.json").read_text())
    assert not result["valid_submission"] and "single value" in result["error"] and result["setup_failure"] is None
    assert not (tmp_path / "ws" / source.name / "submissions" / "submission.csv").exists()


def test_the_warning_names_the_step_that_failed() -> None:
    assert failure_summary("meta check 'meta_maps' failed after 2 rounds: ids differ\nmore") == \
        "setup failed at meta check 'meta_maps' (ids differ more)"
    assert failure_summary("setup stage 'plan': llm policy declined: no reply") == \
        "setup failed at stage 'plan' (llm policy declined: no reply)"
    assert failure_summary("something else") == "setup failed (something else)"
