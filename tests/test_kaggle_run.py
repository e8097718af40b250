"""`agentk run <kaggle url> --submit` end to end against the loopback fake Kaggle: download, setup,
solve, submit, poll to a score, rank on the leaderboard; then `agentk submit` and `leaderboard`;
a code competition submitted through a kernel."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentk.cli import app

pytestmark = pytest.mark.integration

pytest_plugins = ["kaggle_server"]  # fixtures: fake_kaggle


def invoke(*args: str):
    return CliRunner().invoke(app, list(args))


def test_run_url_with_submit_reports_score_and_rank(fake_kaggle, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    # One submission only: the linear model, which the race never skips, already scores ~0.8.
    ws = tmp_path / "ws"
    run = invoke("run", "https://www.kaggle.com/competitions/titanic/overview", "--submit", "-w", str(ws), "--time-budget", "3", "--folds", "2", "--submit-poll", "0.05", "--json")
    assert run.exit_code == 0, run.output[-2000:]
    result = json.loads((ws / "titanic" / "result.json").read_text())
    assert result["valid_submission"] and result["metric"] == "accuracy"
    kaggle = result["kaggle"]
    assert len(kaggle["submissions"]) == 1 and not kaggle["daily_limit_reached"]
    sent = kaggle["submissions"][0]
    assert sent["status"] == "complete" and sent["public_score"] > 0.7
    assert sent["model"] == result["model"]  # top-1 is the final submission's model
    # The message names the model and its validation score.
    assert "accuracy" in sent["message"] and sent["model"] in sent["message"]
    assert kaggle["best_public"] == sent["public_score"] and kaggle["leaderboard"] == sent["leaderboard"]
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


# The top-k test needs three distinct candidate files: at 8 s (3 folds, load 3) titanic's solve
# offered ten, from fourteen candidates; the code competition's checks do not depend on the budget.
SOLVE = ("--time-budget", "8", "--folds", "3")


def run_top_k(ws: Path, k: int, *extra: str):
    return invoke("run", "titanic", "--submit", "--top-k", str(k), "-w", str(ws), *SOLVE, "--submit-poll", "0.05", *extra)


@pytest.fixture(scope="module")
def _solved_once(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return {"ws": tmp_path_factory.mktemp("solved-titanic") / "ws"}


@pytest.fixture
def solved_titanic(fake_kaggle, _solved_once: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A workspace root where `agentk run titanic` (no --submit) downloaded, set up and solved
    titanic: made once per module, each test gets its own copy. The tests using it are about what
    `--submit` sends, and a run resumes at its finished phase; the whole way in one command,
    download to rank, is test_run_url_with_submit_reports_score_and_rank's."""
    template = _solved_once["ws"]
    if not (template / "titanic" / "result.json").is_file():
        monkeypatch.chdir(template.parent)
        run = invoke("run", "titanic", "-w", str(template), *SOLVE)
        assert run.exit_code == 0, run.output[-2000:]
        assert not fake_kaggle.submissions
    ws = tmp_path / "ws"
    shutil.copytree(template, ws, symlinks=True)
    return ws


def test_run_submits_top_k_best_first(fake_kaggle, solved_titanic: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    ws = solved_titanic
    run = run_top_k(ws, 2)
    assert run.exit_code == 0, run.output[-2000:]
    solve = json.loads((ws / "titanic" / "solve" / "solve_result.json").read_text())
    ranked = solve["candidates"]
    assert [c["validation_score"] for c in ranked] == sorted((c["validation_score"] for c in ranked), reverse=True)
    # The solve's own pick (the best CV, or a candidate within noise of it that the choice rule
    # prefers) is the final submission, byte for byte (one formatter path), and is sent first.
    [pick] = [c for c in ranked if c["model"] == solve["model"]]
    assert (ws / "titanic" / pick["path"]).read_bytes() == (ws / "titanic" / "submissions" / "submission.csv").read_bytes()

    # Top-k counts distinct files: a model whose file repeats a better one's (a bag predicting its
    # model's labels) gives its slot to the next file.
    distinct: dict[bytes, dict] = {}
    for c in [pick, *(c for c in ranked if c is not pick)]:
        distinct.setdefault((ws / "titanic" / c["path"]).read_bytes(), c)
    assert len(distinct) >= 3, "titanic's solve should offer at least three different files"
    firsts = list(distinct.values())
    kaggle = json.loads((ws / "titanic" / "result.json").read_text())["kaggle"]
    assert [s["model"] for s in kaggle["submissions"]] == [c["model"] for c in firsts[:2]]
    assert len(fake_kaggle.submissions) == 2 and all(s.public is not None for s in fake_kaggle.submissions)
    assert [s.description for s in fake_kaggle.submissions] == [s["message"] for s in kaggle["submissions"]]
    publics = [s["public_score"] for s in kaggle["submissions"]]
    # Kaggle reports scores rounded to five places.
    assert sorted(publics) == pytest.approx(sorted(s.public for s in fake_kaggle.submissions), abs=1e-5)
    best = max(kaggle["submissions"], key=lambda s: s["public_score"])  # accuracy: higher is better
    assert kaggle["best_public"] == max(publics) and kaggle["best_model"] == best["model"]
    assert kaggle["leaderboard"] == best["leaderboard"] and kaggle["leaderboard"]["rank"] >= 1

    # Again, with one more candidate: a copy of the third file under another model's name. The two
    # already sent are refused by the ledger, the copy is the same file as the third: one new send.
    # The third distinct file is the best one Kaggle does not have yet.
    third = firsts[2]
    copy = ws / "titanic" / "submissions" / "candidates" / "copycat.csv"
    copy.write_bytes((ws / "titanic" / third["path"]).read_bytes())
    solve["candidates"] = firsts[:2] + [third, {**third, "model": "copycat", "path": "submissions/candidates/copycat.csv"}]
    (ws / "titanic" / "solve" / "solve_result.json").write_text(json.dumps(solve))
    again = run_top_k(ws, 4)
    assert again.exit_code == 0, again.output[-2000:]
    kaggle = json.loads((ws / "titanic" / "result.json").read_text())["kaggle"]
    assert [s["model"] for s in kaggle["submissions"]] == [third["model"]]
    assert len(fake_kaggle.submissions) == 3
    skipped = [json.loads(line) for line in (ws / "titanic" / "logs" / "events.jsonl").read_text().splitlines()]
    skipped = [e for e in skipped if e.get("event") == "kaggle_candidate_skipped"]
    assert {e["model"] for e in skipped} >= {firsts[0]["model"], firsts[1]["model"], "copycat"}


def test_run_stops_cleanly_at_the_daily_limit(fake_kaggle, solved_titanic: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    fake_kaggle.daily_limit = 1
    ws = solved_titanic
    run = run_top_k(ws, 2)
    assert run.exit_code == 0, run.output[-2000:]  # the run succeeded; only Kaggle's allowance ran out
    result = json.loads((ws / "titanic" / "result.json").read_text())
    assert result["valid_submission"] and result["error"] is None
    kaggle = result["kaggle"]
    assert len(kaggle["submissions"]) == 1 and len(fake_kaggle.submissions) == 1
    assert kaggle["daily_limit_reached"] and "no submissions left" in kaggle["stop_reason"]
    assert kaggle["best_public"] == kaggle["submissions"][0]["public_score"] is not None


def test_submit_waits_for_no_one_while_a_run_holds_the_workspace(fake_kaggle, solved_titanic: Path, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """`agentk submit` takes the workspace's lock: while a run holds it, one line and nothing sent."""
    from agentk.core.records.workspace_lock import workspace_lock

    monkeypatch.chdir(tmp_path)
    with workspace_lock(solved_titanic / "titanic"):
        busy = invoke("submit", "titanic", "-w", str(solved_titanic))
    assert busy.exit_code != 0 and "workspace in use" in busy.output and not fake_kaggle.submissions
    sent = invoke("submit", "titanic", "-w", str(solved_titanic), "--submit-poll", "0.05")
    assert sent.exit_code == 0, sent.output
    assert len(fake_kaggle.submissions) == 1


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


def test_a_code_competition_is_submitted_through_a_kernel(fake_kaggle, solved_titanic: Path, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Titanic made a code competition (Kaggle's metadata says kernels only), the solved run
    resumed with --submit: the predictor is exported, uploaded as a private dataset, run by a
    private offline kernel (a Python that cannot import agentk) on test rows in an order the run
    never saw, and that kernel is submitted and scored. A rerun whose kernel fails ends cleanly,
    in one error line, with the local submission kept."""
    import dataclasses
    import io

    import pandas as pd

    from test_export import bare_python

    monkeypatch.chdir(tmp_path)
    fake_kaggle.competition = dataclasses.replace(fake_kaggle.competition, kernels_only=True)
    fake_kaggle.kernels.python = str(bare_python(tmp_path / "image"))
    ws, wheels = solved_titanic, tmp_path / "wheels"
    wheels.mkdir()  # no wheel: the image's versions (the ones the run used) serve
    args = ["run", "titanic", "--submit", "-w", str(ws), *SOLVE, "--submit-poll", "0.05", "--kernel-wheels", str(wheels)]
    run = invoke(*args)
    assert run.exit_code == 0, run.output[-3000:]
    workspace = ws / "titanic"
    result = json.loads((workspace / "result.json").read_text())
    assert result["code_competition"] and json.loads((workspace / "kaggle.json").read_text())["code_competition"]
    kaggle = result["kaggle"]
    assert kaggle["code_competition"] and kaggle["stop_reason"] is None, kaggle
    sent = kaggle["submissions"][0]
    assert sent["status"] == "complete" and sent["public_score"] > 0.7 and sent["model"] == result["model"]
    assert sent["kernel"]["ref"] == "agentk-test-user/agentk-titanic" and kaggle["leaderboard"]["rank"] >= 1
    assert sent["wheels_missing"] and sent["kernel_agreement"]["differing_rows"] == 0
    meta = fake_kaggle.kernels.runs[0].meta
    assert meta["isPrivate"] and not meta["enableInternet"] and meta["competitionDataSources"] == ["titanic"]
    # Kaggle scored the kernel's file, in its own row order: each id has the run's prediction.
    scored = pd.read_csv(io.BytesIO(fake_kaggle.submissions[0].content), dtype=str)
    local = pd.read_csv(workspace / "submissions" / "submission.csv", dtype=str)
    assert scored["PassengerId"].tolist() != local["PassengerId"].tolist()
    assert scored.set_index("PassengerId").sort_index().equals(local.set_index("PassengerId").sort_index())
    assert "code competition" in (workspace / "report.html").read_text()

    again = invoke(*args)
    assert again.exit_code == 0 and "already sent" in again.output and len(fake_kaggle.submissions) == 1
    as_file = invoke("submit", "titanic", "-w", str(ws))
    assert as_file.exit_code != 0 and "code competition" in as_file.output and len(fake_kaggle.submissions) == 1

    before = (workspace / "submissions" / "submission.csv").read_bytes()
    fake_kaggle.kernels.hidden_files = {"test.csv"}  # the rerun's test file is named otherwise
    failed = invoke(*args, "--force-submit")
    assert failed.exit_code == 0, failed.output[-3000:]
    result = json.loads((workspace / "result.json").read_text())
    assert result["valid_submission"] and result["error"] is None
    reason = result["kaggle"]["stop_reason"]
    assert "failed" in reason and "test.csv" in reason and "\n" not in reason
    assert (workspace / "submissions" / "submission.csv").read_bytes() == before
    assert len(fake_kaggle.submissions) == 1 and len(fake_kaggle.kernels.runs) == 2
    assert any("kaggle: error:" in line for line in failed.output.splitlines())
