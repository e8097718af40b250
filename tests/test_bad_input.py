"""Bad input ends with one clear `error:` line and a non-zero exit, never a traceback, and nothing is
written outside the workspace root (or, when setup fails but the sample submission is still a valid
answer, with the sample handed in and one warning line that says why); a run killed mid-setup
resumes where it stopped."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from agentk.core.records.events import EventLog
from agentk.core.records.workspace import Workspace
from agentk.sources import load_competition
from setup_pipeline.expert.expert_policy import ExpertPolicy
from helpers import handed_in_after_failed_setup
from setup_pipeline.mdp import SetupBudget, SetupMDP

pytestmark = pytest.mark.integration

SHARED = Path(__file__).resolve().parents[2] / "shared" / "competitions"
AGENTK = [sys.executable, "-m", "agentk.cli"]
# These tests are about setup and messages: the solver only has to leave a valid submission, which
# the constant (written first) and the linear pace-setter do within seconds.
SOLVE = ["--time-budget", "5"]


def run_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*AGENTK, *args], cwd=cwd, capture_output=True, text=True, timeout=600)


def copy_competition(name: str, dest: Path) -> Path:
    shutil.copytree(SHARED / name, dest, copy_function=shutil.copy)
    for path in [dest, *dest.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    return dest


def assert_one_line_error(proc: subprocess.CompletedProcess[str], *fragments: str) -> None:
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr + proc.stdout
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("error:")]
    assert len(errors) == 1, proc.stderr
    for fragment in fragments:
        assert fragment in errors[0], errors[0]


def files_outside_workspace(root: Path) -> set[Path]:
    return {p for p in root.rglob("*") if "ws" not in p.relative_to(root).parts[:1]}


def test_missing_folder(tmp_path: Path) -> None:
    proc = run_cli("run", str(tmp_path / "nope"), "-w", str(tmp_path / "ws"), cwd=tmp_path)
    assert_one_line_error(proc, "not found")
    assert not (tmp_path / "ws").exists()


def test_no_train_file(tmp_path: Path) -> None:
    """Nothing to learn from, but a valid sample: setup fails (no training data), the run hands in
    the sample as it is and says so in one warning line, and result.json keeps the failure."""
    source = copy_competition("titanic", tmp_path / "src")
    (source / "data" / "train.csv").unlink()
    (source / "competition.toml").unlink()  # a user's own folder, no grading facts
    before = files_outside_workspace(tmp_path)
    proc = run_cli("run", str(source), "-w", str(tmp_path / "ws"), cwd=tmp_path)
    handed_in_after_failed_setup(proc, tmp_path / "ws" / "src", source / "data" / "gender_submission.csv",
                                 "no training data", stage="modalities")
    assert files_outside_workspace(tmp_path) == before


@pytest.mark.parametrize("content", ["", "\x00\x01\x02 not a csv \xff"])
def test_unreadable_or_empty_train_csv(tmp_path: Path, content: str) -> None:
    source = copy_competition("titanic", tmp_path / "src")
    (source / "data" / "train.csv").write_bytes(content.encode("latin-1"))
    proc = run_cli("run", str(source), "-w", str(tmp_path / "ws"), cwd=tmp_path)
    assert_one_line_error(proc, "train.csv")


def test_description_without_a_metric_assumes_one(tmp_path: Path) -> None:
    """No dead end: a page that names no metric still gets through setup, metric stage and light
    solve, with the metric it assumed recorded. Setup alone, in process (the run's last steps, and
    the assumption said on stdout, are test_sources_bare's zip run, whose metric is assumed too)."""
    source = copy_competition("playground-series-s3e5", tmp_path / "src")
    text = (source / "description.md").read_text()
    (source / "description.md").write_text(text.split("## Evaluation")[0])
    workspace = Workspace(tmp_path / "ws")
    workspace.create()
    load_competition(source).prepare(workspace.raw)
    state = workspace.load_state()
    SetupMDP(workspace, ExpertPolicy(), EventLog(workspace.logs / "events.jsonl", quiet=True),
             SetupBudget(stage_timeout_s=120, light_solve_timeout_s=240)).run(state, workspace.save_state)
    state = workspace.load_state()
    assert all(stage.passed for stage in state.stages.values()) and state.meta["meta_light_solve"].passed
    plan = json.loads((workspace.setup / "plan.json").read_text())
    assert any(line.startswith("metric: accuracy") for line in plan["assumptions"]), plan["assumptions"]


def test_test_ids_missing_from_the_sample(tmp_path: Path) -> None:
    source = copy_competition("titanic", tmp_path / "src")
    (source / "competition.toml").unlink()
    data = source / "data"
    sample = pd.read_csv(data / "gender_submission.csv")
    sample.iloc[:-25].to_csv(data / "gender_submission.csv", index=False)
    proc = run_cli("run", str(source), "-w", str(tmp_path / "ws"), "--time-budget", "20", cwd=tmp_path)
    assert_one_line_error(proc, "missing from the sample submission")


def test_grade_with_a_broken_submission_says_why(tmp_path: Path) -> None:
    submission = tmp_path / "sub.csv"
    submission.write_text("PassengerId,Survived\n1,0\n")
    proc = run_cli("grade", str(SHARED / "titanic"), str(submission), cwd=tmp_path)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr + proc.stdout
    assert "invalid submission" in proc.stdout


def test_a_run_killed_mid_setup_resumes(tmp_path: Path) -> None:
    workspace = tmp_path / "ws" / "titanic"
    attempts = workspace / "logs" / "attempts.jsonl"
    proc = subprocess.Popen([*AGENTK, "run", str(SHARED / "titanic"), "-w", str(tmp_path / "ws"), *SOLVE, "--folds", "3", "-q"], cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if attempts.exists() and len(attempts.read_text().splitlines()) >= 4:
            break
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    state = json.loads((workspace / "state.json").read_text())
    assert state["phase"] == "setup"
    done_before = [name for name, stage in state["stages"].items() if stage["passed"]]
    assert "summarise" in done_before and "plan" in done_before
    finished = run_cli("run", str(SHARED / "titanic"), "-w", str(tmp_path / "ws"), *SOLVE, "--folds", "3", "--json", cwd=tmp_path)
    assert finished.returncode == 0, finished.stderr[-2000:]
    result = json.loads(finished.stdout)
    assert result["valid_submission"] is True
    for name in done_before:  # stages that passed before the kill were not attempted again
        assert result["setup"][name]["attempts"] == 1
    records = [json.loads(line) for line in attempts.read_text().splitlines()]
    assert [r["stage"] for r in records].count("summarise") == 1


def test_unknown_fusion_choice(tmp_path: Path) -> None:
    proc = run_cli("run", str(SHARED / "titanic"), "-w", str(tmp_path / "ws"), "--fusion", "maybe", cwd=tmp_path)
    assert_one_line_error(proc, "--fusion", "maybe")
    assert not (tmp_path / "ws").exists()
