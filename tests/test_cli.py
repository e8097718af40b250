"""The CLI as a user meets it: --help everywhere, `agentk demo` end to end, `agentk bench`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from agentk.bench.baselines import constant_score
from agentk.sources import load_competition

pytestmark = pytest.mark.integration

AGENTK = [sys.executable, "-m", "agentk.cli"]
# The demo's linear model (the race's pace-setter, never skipped) reaches ~0.95 accuracy within a
# few seconds; a larger budget would only buy tuning these tests do not look at.
DEMO_BUDGET_S = "3"


def test_the_module_entry_point_shows_help() -> None:
    proc = subprocess.run([*AGENTK, "--help"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "Usage" in proc.stdout and "--help" in proc.stdout


# In-process: the entry point is checked above, and a fresh interpreter per command costs ~5 s.
@pytest.mark.parametrize("command", [["run"], ["grade"], ["bench"], ["demo"], ["submit"], ["leaderboard"], ["export"], ["predict"]])
def test_every_command_has_help(command: list[str]) -> None:
    from typer.testing import CliRunner

    from agentk.cli import app

    result = CliRunner().invoke(app, [*command, "--help"])
    assert result.exit_code == 0, result.output
    assert "Usage" in result.stdout and "--help" in result.stdout


def test_demo_solves_the_embedded_competition_offline(tmp_path: Path) -> None:
    proc = subprocess.run([*AGENTK, "demo", "-w", str(tmp_path / "ws"), "--time-budget", DEMO_BUDGET_S], capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "validation score" in proc.stdout
    [workspace] = [p for p in (tmp_path / "ws").iterdir() if not p.name.startswith("_")]
    result = json.loads((workspace / "result.json").read_text())
    assert result["valid_submission"] is True
    competition = load_competition(tmp_path / "ws" / "_sources" / "demo")
    assert result["test_score"] >= constant_score(competition) + 0.2  # accuracy ~0.95 against ~0.63


def test_pass_at_k_is_the_unbiased_estimator() -> None:
    from agentk.core.pass_at import pass_at_k

    assert pass_at_k(10, 0, 1) == 0.0 and pass_at_k(10, 10, 3) == 1.0
    assert pass_at_k(10, 3, 1) == pytest.approx(0.3)
    assert pass_at_k(10, 3, 3) == pytest.approx(1 - (7 * 6 * 5) / (10 * 9 * 8))
    assert pass_at_k(3, 1, 10) is None  # more draws than samples: undefined


def test_bench_over_seeds_reports_stage_success_and_pass_at_k(tmp_path: Path) -> None:
    from agentk.sources.demo import make_demo_competition

    source = make_demo_competition(tmp_path / "demo")
    rows_path = tmp_path / "rows.json"
    proc = subprocess.run([*AGENTK, "bench", str(source), "-w", str(tmp_path / "ws"), "--seeds", "2", "--time-budget", DEMO_BUDGET_S, "--folds", "2", "-o", str(rows_path)], capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "agentk bench" in proc.stdout and "time to valid" in proc.stdout and "Pass@1" in proc.stdout
    data = json.loads(rows_path.read_text())
    assert [r["seed"] for r in data["runs"]] == [0, 1]
    for row in data["runs"]:  # each seed's row, as a one-seed bench writes it
        assert row["valid_submission"] and row["test_score"] > row["constant_score"]
        assert row["setup_attempts"]["plan"] == 1 and row["time_to_valid_submission_s"] > 0
    [summary] = data["summaries"]
    assert summary["runs"] == 2 and summary["setups_passed"] == 2
    assert summary["pass_at"]["1"] == 1.0 and summary["pass_at"]["10"] is None
    assert set(summary["stage_success"]) >= {"plan", "metric"} and all(v == 1.0 for v in summary["stage_success"].values())


def test_an_internal_error_is_one_line_and_its_trace_lands_in_the_workspace_logs(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """agentk's own bug (here a planted one) is the only thing called an internal error; its
    traceback goes under the workspace root, not into the folder the user ran from."""
    import agentk.runner
    from typer.testing import CliRunner

    from agentk.cli import app

    def broken(source, config):
        raise ZeroDivisionError("planted")

    monkeypatch.setattr(agentk.runner, "run_competition", broken)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["run", "anything", "-w", str(tmp_path / "ws")])
    assert result.exit_code == 1
    assert "internal error: ZeroDivisionError: planted" in result.output
    [log] = (tmp_path / "ws" / "_logs").glob("crash-*.log")
    assert "ZeroDivisionError: planted" in log.read_text() and str(log) in result.output.replace("\n", "")
    assert not list(tmp_path.glob("agentk-crash*"))
