"""Issue #11, item 12 end to end: `agentk run` killed with SIGKILL (its whole process tree) right
after it adopted a real model, resumed, killed again as the resumed solve offers its constant
model, and resumed to the end. The short version of tests/security/kill_schedule.py (which runs
the seeded 20-run schedule by hand)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kill_schedule import once_a_real_model_is_adopted, once_the_solver_restarted, render, run_schedule
from test_grading_blame import _held_answers, _local_competition

pytestmark = pytest.mark.integration


def test_kills_and_resumes_never_lose_or_worsen_the_submission(tmp_path: Path) -> None:
    # Answers with blank rows: the finished run must also say what its test score left out.
    competition = _local_competition(tmp_path / "c", _held_answers(blank_every=10))
    steps, result = run_schedule(competition, tmp_path / "ws", run=1, time_budget=12,
                                 triggers=[once_a_real_model_is_adopted(), once_the_solver_restarted()])
    table = render(steps)
    assert [s.problems for s in steps] == [[], [], []], table
    first, second, last = steps
    assert first.killed_at_s is not None and first.phase.startswith("solve"), table
    assert second.killed_at_s is not None and second.score_after is not None, table
    # The kill came after a real model was on disk; nothing after it was worse.
    assert first.score_after is not None and second.score_after >= first.score_after, table
    assert last.exit_code == 0 and last.score_after >= second.score_after, table
    assert result["valid_submission"] is True and result["validation_score"] == last.score_after
    assert result["test_score"] is not None
    assert result["test_score_note"] == "10 answer row(s) have no value and were not scored"
