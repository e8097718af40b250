"""`agentk run <kaggle url> --submit` end to end against the loopback fake Kaggle: download, setup,
solve, submit, poll to a score, rank on the leaderboard; then `agentk submit` and `leaderboard`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentk.cli import app

pytest_plugins = ["kaggle_server"]  # fixtures: fake_kaggle


def invoke(*args: str):
    return CliRunner().invoke(app, list(args))


def test_run_url_with_submit_reports_score_and_rank(fake_kaggle, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    ws = tmp_path / "ws"
    run = invoke("run", "https://www.kaggle.com/competitions/titanic/overview", "--submit", "-w", str(ws), "--time-budget", "20", "--folds", "3", "--submit-poll", "0.05", "--json")
    assert run.exit_code == 0, run.output[-2000:]
    result = json.loads((ws / "titanic" / "result.json").read_text())
    assert result["valid_submission"] and result["metric"] == "accuracy"
    kaggle = result["kaggle"]
    assert kaggle["status"] == "complete" and kaggle["public_score"] > 0.7
    assert "accuracy" in kaggle["message"]  # the message names the model and its validation score
    assert 1 <= kaggle["leaderboard"]["rank"] <= kaggle["leaderboard"]["n_teams"] + 1
    assert len(fake_kaggle.submissions) == 1
    # The agent's view came from Kaggle's files, cleaned; raw HTML is cached beside it.
    assert (ws / "_kaggle" / "titanic" / ".kaggle" / "pages").is_dir()
    assert "<img" not in (ws / "titanic" / "raw" / "description.md").read_text()

    again = invoke("submit", "titanic", "-w", str(ws))
    assert again.exit_code != 0 and "already submitted" in again.output
    assert len(fake_kaggle.submissions) == 1

    board = invoke("leaderboard", "kaggle.com/c/titanic", "-w", str(ws))
    assert board.exit_code == 0, board.output
    assert "teams on the public leaderboard" in board.output and "rank" in board.output

    # Keys never reach the workspace (logs, generated code, sandbox output, state).
    from kaggle_server import KEY

    for path in ws.rglob("*"):
        if path.is_file():
            assert KEY not in path.read_bytes().decode("utf-8", errors="ignore"), path


def test_submit_needs_a_kaggle_source(tmp_path: Path) -> None:
    shared = Path(__file__).resolve().parents[2] / "shared" / "competitions" / "titanic"
    result = invoke("run", str(shared), "--submit", "-w", str(tmp_path / "ws"))
    assert result.exit_code != 0 and "--submit needs a Kaggle competition" in result.output
    assert not (tmp_path / "ws").exists()


def test_rules_not_accepted_is_one_line(fake_kaggle, tmp_path: Path) -> None:
    fake_kaggle.forbidden.add("titanic")
    result = invoke("run", "titanic", "-w", str(tmp_path / "ws"))
    assert result.exit_code != 0
    assert "https://www.kaggle.com/competitions/titanic/rules" in result.output
    assert "Traceback" not in result.output
