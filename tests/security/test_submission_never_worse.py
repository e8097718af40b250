"""Issue #11, item 12: the adopted submission only improves, across kills and resumes too.

The score travels with the file (`submission.csv.record.json`); a worse candidate never replaces
a better file, a file whose record does not match it counts as unknown, and a resumed solve that
does not beat the killed one's file keeps it and reports it honestly.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pandas as pd
import pytest
from solver_workspaces import REPO, run_solver, titanic_workspace

from solve_pipeline.base.submission_record import (
    SubmissionRecord, adopt_submission, file_sha256, read_record, record_path,
)

pytestmark = pytest.mark.integration


def _candidate(score: float | None, model: str = "m", *, metric: str = "accuracy", higher: bool = True,
               fingerprint: str = "setup-a") -> SubmissionRecord:
    return SubmissionRecord(model=model, validation_score=score, metric=metric, higher_is_better=higher,
                            setup_fingerprint=fingerprint)


def _adopt(path: Path, values: list[int], candidate: SubmissionRecord):
    frame = pd.DataFrame({"id": range(len(values)), "y": values})
    return adopt_submission(path, lambda tmp: frame.to_csv(tmp, index=False), candidate)


def test_a_worse_candidate_never_replaces_a_better_one(tmp_path: Path) -> None:
    path = tmp_path / "submission.csv"
    assert _adopt(path, [1, 1, 0], _candidate(0.8, "good")).written
    good = path.read_bytes()
    for worse in (_candidate(0.5, "constant"), _candidate(0.8, "tie"), _candidate(None, "unscored")):
        adoption = _adopt(path, [0, 0, 0], worse)
        assert not adoption.written and path.read_bytes() == good
        assert adoption.record is not None and adoption.record.model == "good"
    assert _adopt(path, [1, 0, 0], _candidate(0.9, "better")).written
    assert read_record(path).model == "better" and path.read_bytes() != good
    # Lower is better for a loss: 0.3 beats 0.4, 0.5 does not.
    loss = tmp_path / "loss.csv"
    assert _adopt(loss, [1], _candidate(0.4, "a", metric="logloss", higher=False)).written
    assert not _adopt(loss, [2], _candidate(0.5, "b", metric="logloss", higher=False)).written
    assert _adopt(loss, [3], _candidate(0.3, "c", metric="logloss", higher=False)).written
    assert read_record(loss).model == "c"
    assert not [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_unknown_or_incomparable_files_may_be_replaced(tmp_path: Path) -> None:
    path = tmp_path / "submission.csv"
    # A file without a record: unknown.
    path.write_text("id,y\n0,1\n")
    assert _adopt(path, [0], _candidate(0.1, "constant")).written
    # A file edited after its record was written: the record no longer describes it.
    assert _adopt(path, [1], _candidate(0.9, "good")).written
    path.write_text(path.read_text() + "1,1\n")
    assert read_record(path) is None
    assert _adopt(path, [0], _candidate(0.2, "constant")).written
    # Made under another metric or another setup: the old score means something else.
    assert _adopt(path, [1], _candidate(0.9, "good")).written
    assert _adopt(path, [0], _candidate(0.3, "other-metric", metric="f1")).written
    assert _adopt(path, [1], _candidate(0.9, "good", metric="f1")).written
    assert _adopt(path, [0], _candidate(0.4, "redone-setup", metric="f1", fingerprint="setup-b")).written
    assert read_record(path).model == "redone-setup"


def test_the_record_travels_with_the_file(tmp_path: Path) -> None:
    path = tmp_path / "a" / "submission.csv"
    _adopt(path, [1, 0], _candidate(0.75, "lightgbm"))
    moved = tmp_path / "b" / "submission.csv"
    moved.parent.mkdir()
    shutil.copy(path, moved)
    shutil.copy(record_path(path), record_path(moved))
    record = read_record(moved)
    assert record is not None and record.validation_score == 0.75 and record.sha256 == file_sha256(moved)
    assert not _adopt(moved, [0, 0], _candidate(0.5)).written


def test_a_kill_between_the_record_and_the_file_keeps_the_score_known(tmp_path: Path) -> None:
    """SIGKILL at the worst moment: the new record is in place, the file is still the old one."""
    path = tmp_path / "submission.csv"
    _adopt(path, [1, 1], _candidate(0.8, "good"))
    good = path.read_bytes()
    script = textwrap.dedent(f"""
        import os, signal
        from pathlib import Path
        import pandas as pd
        from solve_pipeline.base.submission_record import SubmissionRecord, adopt_submission
        real_replace = os.replace
        def replace(src, dst):
            if Path(dst).name == "submission.csv":
                os.kill(os.getpid(), signal.SIGKILL)
            real_replace(src, dst)
        os.replace = replace
        frame = pd.DataFrame({{"id": [0, 1], "y": [0, 1]}})
        adopt_submission(Path({str(path)!r}), lambda tmp: frame.to_csv(tmp, index=False),
                         SubmissionRecord(model="better", validation_score=0.9, metric="accuracy",
                                          higher_is_better=True, setup_fingerprint="setup-a"))
    """)
    done = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, timeout=60)
    assert done.returncode == -signal.SIGKILL, done.stderr.decode()[-2000:]
    assert path.read_bytes() == good
    assert json.loads(record_path(path).read_text())["current"]["model"] == "better"  # the kill came after it
    record = read_record(path)
    assert record is not None and record.model == "good" and record.validation_score == 0.8
    assert not _adopt(path, [0, 0], _candidate(0.5, "constant")).written
    assert path.read_bytes() == good


@pytest.fixture(scope="module")
def titanic(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return titanic_workspace(tmp_path_factory.mktemp("never_worse"))


def _killed_solve(workspace: Path) -> float:
    """Start a real solve and SIGKILL it right after it adopted a real model over the constant."""
    process = subprocess.Popen(
        [sys.executable, "-m", "solve_pipeline.solver", str(workspace), "--folds", "2", "--time-budget", "60"],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert process.stdout is not None
        for line in process.stdout:
            event = json.loads(line) if line.startswith("{") else {}
            if event.get("event") == "submission" and event.get("model") != "constant":
                process.send_signal(signal.SIGKILL)
                return float(event["validation_score"])
        raise AssertionError("the solver ended without adopting a real model")
    finally:
        process.kill()
        process.wait(timeout=30)


def test_a_resumed_solve_keeps_the_killed_solves_better_file(titanic: Path) -> None:
    killed_score = _killed_solve(titanic)
    submission = titanic / "submissions" / "submission.csv"
    before = submission.read_bytes()
    assert read_record(submission).validation_score == killed_score

    result, events = run_solver(titanic, "--folds", "2", "--time-budget", "1", "--no-tune")
    record = read_record(submission)
    constant = result["cv"]["constant"]
    assert constant < killed_score
    # The re-run's constant was not written over the better file ...
    assert any(e["event"] == "submission_kept" and e["model"] == "constant" for e in events)
    assert not any(e["event"] == "submission" and e["model"] == "constant" for e in events)
    # ... the file on disk is never worse than the killed run's, and the result says what it is.
    assert record is not None and record.validation_score >= killed_score
    assert result["validation_score"] == record.validation_score and result["model"] == record.model
    if result["submission_from"] == "earlier_solve":
        assert submission.read_bytes() == before
        assert result["this_solve"]["validation_score"] <= killed_score
        assert result["candidates"][0]["path"] == "submissions/submission.csv"
