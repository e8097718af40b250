"""The CLI as a user meets it: --help everywhere, `agentk demo` end to end, `agentk bench`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from agentk.baselines import constant_score
from agentk.sources import load_competition

AGENTK = [sys.executable, "-m", "agentk.cli"]


@pytest.mark.parametrize("command", [[], ["run"], ["grade"], ["bench"], ["demo"], ["submit"], ["leaderboard"]])
def test_every_command_has_help(command: list[str]) -> None:
    proc = subprocess.run([*AGENTK, *command, "--help"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "Usage" in proc.stdout and "--help" in proc.stdout


def test_demo_solves_the_embedded_competition_offline(tmp_path: Path) -> None:
    proc = subprocess.run([*AGENTK, "demo", "-w", str(tmp_path / "ws"), "--time-budget", "30"], capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "validation score" in proc.stdout
    [workspace] = [p for p in (tmp_path / "ws").iterdir() if not p.name.startswith("_")]
    result = json.loads((workspace / "result.json").read_text())
    assert result["valid_submission"] is True
    competition = load_competition(tmp_path / "ws" / "_sources" / "demo")
    assert result["test_score"] >= constant_score(competition) + 0.2  # accuracy ~0.95 against ~0.63


def test_bench_prints_a_table_and_writes_rows(tmp_path: Path) -> None:
    from agentk.demo import make_demo_competition

    source = make_demo_competition(tmp_path / "demo")
    rows_path = tmp_path / "rows.json"
    proc = subprocess.run([*AGENTK, "bench", str(source), "-w", str(tmp_path / "ws"), "--time-budget", "20", "--folds", "3", "-o", str(rows_path)], capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "agentk bench" in proc.stdout and "time to valid" in proc.stdout
    [row] = json.loads(rows_path.read_text())
    assert row["valid_submission"] and row["test_score"] > row["constant_score"]
    assert row["setup_attempts"]["plan"] == 1 and row["time_to_valid_submission_s"] > 0
