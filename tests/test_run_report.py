"""The run report (issue #15): what it reads from a real run's workspace, the page it writes, the
pieces that say "not available" and why, `agentk report`, and the runner's hook.

A task's workspace from the session's tiny real campaign (tests/tiny_campaign.py: the demo
competition, 5 s of solving, 2 folds) is the run; tests that break files work on copies of it. The browser checks live in test_reports_browser.py.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from click.testing import Result
from tiny_campaign import TinyCampaign
from typer.testing import CliRunner

from agentk.cli import app
from agentk.core.artifacts import SetupLayout
from agentk.core.errors import AgentKError
from agentk.core.metrics.direction import Direction
from agentk.core.records.results import RunResult, SolveResult
from agentk.report.page import REPORT_FILE, NotAvailable
from agentk.report import run_header
from agentk.report.run_data import read_run
from agentk.report.run_report import render_run_report, write_run_report

pytestmark = pytest.mark.integration
pytest_plugins = ["tiny_campaign"]

AGENTK = [sys.executable, "-m", "agentk.cli"]
RUN_ARGS = ["--time-budget", "5", "--folds", "2"]


def agentk(*args: str, cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*AGENTK, *args], cwd=cwd, capture_output=True, text=True, timeout=timeout)


def in_process(*args: str) -> Result:
    """The CLI in this process, for a one-line refusal: a fresh interpreter would cost ~5 s."""
    return CliRunner().invoke(app, list(args))


def events(workspace: Path) -> list[dict]:
    return [json.loads(line) for line in (workspace / "logs" / "events.jsonl").read_text().splitlines() if line.strip()]


def not_available(html: str) -> list[str]:
    return [re.sub(r"\s+", " ", note).strip() for note in re.findall(r'class="na"[^>]*>(not available:[^<]*)<', html)]


@pytest.fixture(scope="module")
def run(tiny_campaign: TinyCampaign) -> tuple[Path, Path]:
    """(a task's source, its finished workspace), from the session's tiny real campaign."""
    key = "tumours-a"
    return tiny_campaign.pool / key, tiny_campaign.workspace(key)


@pytest.fixture
def copy(run: tuple[Path, Path], tmp_path: Path) -> Path:
    copied = shutil.copytree(run[1], tmp_path / run[1].name)
    (copied / REPORT_FILE).unlink()
    return copied


def test_the_run_writes_its_report_and_links_its_submission(run: tuple[Path, Path]) -> None:
    _, workspace = run
    page = workspace / REPORT_FILE
    assert page.is_file()
    written = [e for e in events(workspace) if e["event"] in ("report_written", "report_failed")]
    assert [e["event"] for e in written] == ["report_written"] and written[0]["path"] == str(page)
    # Written after result.json, so the page shows the run's final record.
    result = RunResult.read(workspace / "result.json")
    assert result is not None and result.valid_submission
    html = page.read_text()
    links = re.findall(r'href="([^"#][^"]*)"', html)
    assert "submissions/submission.csv" in links
    # Every link is relative and reaches a file of the workspace: the page works wherever it is opened.
    for link in links:
        assert not link.startswith(("/", "http")) and (workspace / link).is_file(), link
    assert (workspace / "submissions/submission.csv").resolve() == Path(result.submission_path).resolve()


def test_the_sections_hold_what_the_run_recorded(run: tuple[Path, Path]) -> None:
    _, workspace = run
    data = read_run(workspace)
    result = RunResult.read(workspace / "result.json")
    solve = SolveResult.read(workspace / "solve")
    plan = json.loads(SetupLayout(workspace / "setup").plan.read_text())

    header = data.header
    assert header.competition == "tumours-a" and header.metric == result.metric == "accuracy"
    assert header.direction == "higher is better" and header.validation_score == result.validation_score
    assert header.test_score == result.test_score and isinstance(header.test_score, float)
    # Not sent to Kaggle, but the competition keeps a leaderboard.csv: the grader placed the test score.
    board = header.leaderboard
    assert not isinstance(board, NotAvailable) and board.basis == "test score" and board.n_teams == 120
    assert board.public_score == result.test_score and result.test_leaderboard is not None
    assert (board.rank, board.percentile, board.medal) == (result.test_leaderboard.rank, result.test_leaderboard.percentile, result.test_leaderboard.medal)
    unplaced = run_header._leaderboard(result.model_copy(update={"test_leaderboard": None}))
    assert isinstance(unplaced, NotAvailable) and "--submit" in unplaced.reason and "leaderboard.csv" in unplaced.reason
    assert isinstance(header.tokens, NotAvailable) and header.policy == "expert"

    stages = data.setup.stages
    assert {s.name for s in stages if s.kind == "stage"} == set(result.setup)
    assert {s.name for s in stages if s.kind == "meta"} == set(result.meta)
    for stage in stages:
        recorded = result.setup.get(stage.name) or result.meta[stage.name]
        assert stage.passed == recorded.passed and stage.attempts == getattr(recorded, "attempts", getattr(recorded, "rounds", None))
        assert stage.seconds >= 0 and (stage.failures == []) == stage.passed
    decisions = {d.what: d for d in data.setup.decisions}
    assert decisions["id column"].value == plan["id_column"] == "patient_id"
    assert decisions["target"].value == "diagnosis (binary)" and decisions["metric"].value.startswith("accuracy")
    assert decisions["training rows"].value == "data/train.csv" and decisions["training rows"].why
    assert decisions["metric"].why and "accuracy" in decisions["metric"].why[0]
    assert data.setup.assumptions == plan["assumptions"]

    solver = data.solver
    assert [r.family for r in solver.race] == [e["family"] for e in solve.race]
    for row in solver.race:
        if row.status == "finished":
            # Both folds' scores, read from the solver's fold events of the full solve (not the light check's).
            assert len(row.fold_scores) == solve.folds == 2 and row.cv_score == solve.cv[row.family]
            assert row.fold_scores[0] == pytest.approx(row.first_fold_score)
    points = solver.timeline.points
    assert points[0].model == "constant" and [p.seconds for p in points] == sorted(p.seconds for p in points)
    assert points[-1].score == pytest.approx(solve.validation_score)
    scores = [c.score for c in solver.candidates]
    assert Direction(True).ranked(scores, key=lambda s: s) == scores and all(c.link for c in solver.candidates)

    train_map = pd.read_csv(workspace / "setup" / "train_tab_input_map.csv")
    assert data.data.n_train == len(train_map) == solve.n_train and data.data.n_test == solve.n_test
    assert [f.column for f in data.data.features] == [c for c in train_map.columns if c != "id"]
    assert {f.kind for f in data.data.features} == {"numeric"}
    (target,) = data.data.targets
    assert target.column == "diagnosis" and sum(n for _, n in target.classes) == target.rows == len(train_map)
    assert {label for label, _ in target.classes} == {"benign", "malignant"}


def test_the_page_shows_every_section_with_figures_and_no_script(run: tuple[Path, Path]) -> None:
    _, workspace = run
    html = (workspace / REPORT_FILE).read_text()
    for anchor in ("header", "setup", "solver", "race", "tuning", "blend", "decoding", "candidates", "timeline", "data"):
        assert f'id="{anchor}"' in html, anchor
    assert "<script" not in html and "http://" not in html.replace("http://www.w3.org", "")
    # setup, race, timeline, feature kinds and the target's classes are drawn.
    assert html.count("<svg") >= 5
    assert "tumours-a" in html and "patient_id" in html
    # Only the pieces this tiny run did not produce say so, each with its reason.
    for note in not_available(html):
        assert len(note.removeprefix("not available:").strip()) > 3, note
    # Not sent to Kaggle, yet placed: the grader put the test score on the competition's leaderboard.
    assert not any("--submit" in note for note in not_available(html))
    assert re.search(r"rank [\d,]+ / 120", html) and "test score 0." in html


def test_missing_files_become_not_available_notes(copy: Path) -> None:
    (copy / "solve" / "solve_result.json").unlink()
    (copy / "logs" / "attempts.jsonl").unlink()
    page = write_run_report(copy)
    html = page.read_text()
    notes = not_available(html)
    assert "not available: solve/solve_result.json is missing: the solver has not finished" in notes
    assert any(note.startswith("not available: logs/attempts.jsonl is missing") for note in notes)
    # Everything else still shows: the header, the decisions, the data.
    assert "patient_id" in html and 'id="data"' in html and "<svg" in html
    assert 'href="logs/attempts.jsonl"' not in html

    # An unreadable record is a note too, not an error.
    (copy / "solve" / "solve_result.json").write_text("{not json")
    (copy / "result.json").unlink()
    (copy / "setup" / "train_tab_target_map.csv").unlink()
    html = render_run_report(copy)
    notes = not_available(html)
    assert any(note.startswith("not available: solve/solve_result.json could not be read") for note in notes), notes
    assert any("result.json is missing" in note for note in notes), notes
    assert any("train_tab_target_map.csv is missing" in note for note in notes), notes


def test_hebo_trials_and_a_blend_are_drawn_from_their_records(copy: Path) -> None:
    """The solver's own record shapes (tune_family's trials, blend_solutions' report), laid into
    this run's solve_result.json: the tiny run has no time for them."""
    path = copy / "solve" / "solve_result.json"
    record = json.loads(path.read_text())
    defaults = {"learning_rate": 0.05, "num_leaves": 31}
    record["tuning"] = {"family": "lightgbm", "base_score": 0.95, "planned_trials": 4, "improved": True, "trials": [
        {"params": defaults, "score": 0.95, "seconds": 0.5, "error": None},
        {"params": {"learning_rate": 0.1, "num_leaves": 15}, "score": 0.96, "seconds": 0.4, "error": None, "warm": True},
        {"params": {"learning_rate": 0.2, "num_leaves": 63}, "score": 0.94, "seconds": 0.4, "error": None},
        {"params": {"learning_rate": 0.3, "num_leaves": 7}, "score": None, "seconds": 0.0, "error": "TimeoutError: out of time"},
    ]}  # fmt: skip
    record["blend"] = {"diagnosis": {"method": "weighted", "score": 0.97, "weights": {"linear": 0.3, "lightgbm": 0.7},
                                     "single_scores": {"linear": 0.96, "lightgbm": 0.95}, "blend_scores": {"weighted": 0.97},
                                     "dropped": {"mlp": "projected 30 s, 0 s left"}}}
    path.write_text(json.dumps(record))

    solver = read_run(copy).solver
    trials = solver.tuning.trials
    assert [(t.number, t.kind) for t in trials] == [(0, "defaults"), (1, "warm"), (2, "hebo"), (3, "hebo")]
    assert [t.best_so_far for t in trials] == [0.95, 0.96, 0.96, 0.96]
    assert solver.tuning.best.number == 1 and solver.tuning.best.params == {"learning_rate": 0.1, "num_leaves": 15}
    (blend,) = solver.blend
    assert blend.best_single == "linear" and blend.best_single_score == 0.96 and blend.weights[0] == ("lightgbm", 0.7)

    html = write_run_report(copy).read_text()
    tuning = html[html.index('id="tuning"'):html.index('id="blend"')]
    assert "<svg" in tuning and "num_leaves" in tuning and "TimeoutError" in tuning and "not available" not in tuning
    # The defaults are not one of HEBO's trials: 3 searched of the 4 planned.
    assert "3 trials (planned 4) after the defaults, which scored 0.95;" in re.sub(r"\s+", " ", tuning)
    blend_part = html[html.index('id="blend"'):html.index('id="decoding"')]
    assert "<svg" in blend_part and "projected 30 s" in blend_part and "0.7" in blend_part
    assert "linear at 0.96; the weighted blend scored 0.97 in nested CV." in re.sub(r"\s+", " ", blend_part)


def test_the_page_says_where_torch_work_ran(copy: Path) -> None:
    """A GPU run's device record (solve_pipeline/networks/device.py's summary), laid into this run's record:
    the page names the device, each part's and every fallback."""
    path = copy / "solve" / "solve_result.json"
    record = json.loads(path.read_text())
    assert record["device"]["choice"] == "auto"  # every solve records it; this one ran no torch part
    record["device"] = {"choice": "auto", "used": "cuda (NVIDIA H100 80GB HBM3)",
                        "parts": {"text fine-tuning": "cuda", "image maps": "cpu"},
                        "notes": ["device: image maps ran out of GPU memory at 1/4 of the batch; on the CPU instead"]}
    path.write_text(json.dumps(record))
    html = re.sub(r"\s+", " ", write_run_report(copy).read_text())
    line = html[html.index('id="device"'):]
    assert line.startswith('id="device">Device: torch work ran on cuda (NVIDIA H100 80GB HBM3) (asked for auto): '
                           "image maps on cpu, text fine-tuning on cuda. device: image maps ran out of GPU memory"), line[:300]


def test_agentk_report_prints_the_page_and_refuses_a_folder_without_a_run(copy: Path, tmp_path: Path) -> None:
    proc = agentk("report", str(copy), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == str(copy / REPORT_FILE) and (copy / REPORT_FILE).is_file()
    empty = tmp_path / "empty"
    empty.mkdir()
    refused = in_process("report", str(empty))
    assert refused.exit_code == 2 and "is not a run workspace" in refused.stderr and len(refused.stderr.strip().splitlines()) == 1
    with pytest.raises(AgentKError, match="not a run workspace"):
        write_run_report(tmp_path / "missing")


def test_a_report_that_cannot_be_written_never_fails_the_run(run: tuple[Path, Path], tmp_path: Path) -> None:
    source, workspace = run
    root = shutil.copytree(workspace.parent, tmp_path / "ws")
    copied = root / workspace.name
    (copied / REPORT_FILE).unlink()
    (copied / REPORT_FILE).mkdir()  # the page cannot replace a folder
    (copied / REPORT_FILE / "keep").write_text("x")
    before = len(events(copied))
    proc = agentk("run", str(source), "-w", str(root), *RUN_ARGS, cwd=tmp_path)  # resumes a finished run
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    new = [e["event"] for e in events(copied)[before:]]
    assert "report_failed" in new and "report_written" not in new and new[-1] == "run_end"
    assert RunResult.read(copied / "result.json").valid_submission


def test_run_leaderboard_flag_places_the_test_score_on_another_board(run: tuple[Path, Path], tmp_path: Path) -> None:
    source, workspace = run
    root = shutil.copytree(workspace.parent, tmp_path / "ws")
    copied = root / workspace.name
    board = tmp_path / "kaggle-board.csv"
    board.write_text("TeamName,Score\n" + "".join(f"team {i},{1.0 - i / 1000:.3f}\n" for i in range(30)))
    missing = in_process("run", str(source), "-w", str(root), "--leaderboard", str(tmp_path / "nope.csv"))
    assert missing.exit_code == 2 and "error: leaderboard file not found" in missing.stderr
    proc = agentk("run", str(source), "-w", str(root), *RUN_ARGS, "--leaderboard", str(board), cwd=tmp_path)  # resumes the finished run
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    result = RunResult.read(copied / "result.json")
    assert result.test_leaderboard is not None and result.test_leaderboard.n_teams == 30  # not the competition's 120
    header = read_run(copied).header
    assert not isinstance(header.leaderboard, NotAvailable) and header.leaderboard.n_teams == 30
