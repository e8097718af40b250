"""`agentk run` end to end, as a user runs it: the real CLI in a subprocess on every shared
competition and on the digits competition in both layouts, local and MLE-bench; graded scores must
beat the best constant prediction by a clear margin."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from agentk.baselines import constant_score
from agentk.metrics import get_metric
from agentk.sources import load_competition
from helpers import make_mlebench_layout

SHARED = Path(__file__).resolve().parents[2] / "shared"
COMPETITIONS = sorted(p.name for p in (SHARED / "competitions").iterdir() if (p / "description.md").exists())
AGENTK = [sys.executable, "-m", "agentk.cli"]
# CI-sized budgets: small enough for two cores, large enough to beat a constant clearly.
RUN_ARGS = ["--time-budget", "30", "--folds", "3", "--json"]


def run_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*AGENTK, *args], cwd=cwd, capture_output=True, text=True, timeout=900)


def assert_solved(source: Path, tmp_path: Path) -> dict:
    proc = run_cli("run", str(source), "--workspace-root", str(tmp_path / "ws"), *RUN_ARGS, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    competition = load_competition(source)
    result = json.loads((tmp_path / "ws" / competition.id / "result.json").read_text())
    assert result["valid_submission"] is True
    assert all(stage["passed"] for stage in result["setup"].values()), result["setup"]
    assert all(meta["passed"] for meta in result["meta"].values()), result["meta"]
    assert isinstance(result["validation_score"], float)
    # The graded score beats the best constant prediction by a clear margin.
    metric = get_metric(result["test_metric"])
    constant = constant_score(competition)
    score = result["test_score"]
    assert score is not None and constant is not None
    if metric.higher_is_better:
        assert score >= constant + 0.1, (score, constant)
    else:
        assert score <= 0.8 * constant, (score, constant)
    # The agent's workspace never holds grading facts or answers.
    workspace = tmp_path / "ws" / competition.id
    assert not list(workspace.rglob("competition.toml")) and not list(workspace.rglob("answers.csv"))
    return result


@pytest.mark.slow
@pytest.mark.parametrize("name", COMPETITIONS)
def test_shared_competition_end_to_end(name: str, tmp_path: Path) -> None:
    assert_solved(SHARED / "competitions" / name, tmp_path)


def make_digits(out: Path, layout: str) -> Path:
    subprocess.run([sys.executable, str(SHARED / "tools" / "make_digits_competition.py"), str(out), "--layout", layout], check=True)
    return out


@pytest.mark.slow
def test_digits_class_folders_local_layout(tmp_path: Path) -> None:
    result = assert_solved(make_digits(tmp_path / "digits-folders", "folders"), tmp_path)
    assert result["test_score"] > 0.85


@pytest.mark.slow
def test_digits_csv_layout_as_mlebench_prepared(tmp_path: Path) -> None:
    local = make_digits(tmp_path / "digits-csv", "csv")
    prepared = make_mlebench_layout(local, tmp_path / "mlebench")
    result = assert_solved(prepared, tmp_path)
    assert result["source"] == "mlebench" and result["test_score"] > 0.85


@pytest.mark.slow
def test_mlebench_layout_without_sample_submission(tmp_path: Path) -> None:
    prepared = make_mlebench_layout(SHARED / "competitions" / "spooky-author-identification", tmp_path / "mlebench")
    result = assert_solved(prepared, tmp_path)
    assert result["test_metric"] == "multiclass_logloss"


def test_grade_command_scores_a_submission_and_places_it_on_a_leaderboard(tmp_path: Path) -> None:
    competition = load_competition(SHARED / "competitions" / "titanic")
    answers = competition.answers()
    submission = tmp_path / "submission.csv"
    answers.to_csv(submission, index=False)
    leaderboard = tmp_path / "leaderboard.csv"
    leaderboard.write_text("TeamId,TeamName,Score\n" + "".join(f"{i},team{i},{0.5 + i / 1000}\n" for i in range(300)))
    proc = run_cli("grade", str(SHARED / "competitions" / "titanic"), str(submission), "--leaderboard", str(leaderboard), "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["score"] == 1.0 and report["valid"] is True
    assert report["leaderboard"]["rank"] == 1 and report["leaderboard"]["medal"] == "gold"
