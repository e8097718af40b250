"""Submitting, polling to a score, the daily limit and the leaderboard, against the fake Kaggle."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from agentk.grading import leaderboard_position
from agentk.kaggle import DailyLimitReached, KaggleClient

pytest_plugins = ["kaggle_server"]  # fixtures: fake_kaggle, kaggle_client


def _submission(fake_kaggle, tmp_path: Path, correct: bool = True) -> Path:
    answers = fake_kaggle.competition.answers.copy()
    if not correct:
        answers["Survived"] = 1 - answers["Survived"].astype(int)
    path = tmp_path / "submission.csv"
    answers.to_csv(path, index=False)
    return path


def test_submit_then_poll_to_a_score(kaggle_client: KaggleClient, fake_kaggle, tmp_path: Path) -> None:
    fake_kaggle.polls_until_scored = 2
    record = kaggle_client.submit("titanic", _submission(fake_kaggle, tmp_path), "lightgbm, cv accuracy 0.83")
    assert record.status == "pending" and record.ref > 0
    assert fake_kaggle.submissions[0].content == (tmp_path / "submission.csv").read_bytes()
    scored = kaggle_client.poll("titanic", record.ref, timeout_s=5, interval_s=0.01)
    assert scored.status == "complete" and scored.message == "lightgbm, cv accuracy 0.83"
    assert scored.public_score == pytest.approx(1.0) and scored.private_score == pytest.approx(1.0)


def test_poll_returns_pending_record_on_timeout(kaggle_client: KaggleClient, fake_kaggle, tmp_path: Path) -> None:
    fake_kaggle.polls_until_scored = 1000
    record = kaggle_client.submit("titanic", _submission(fake_kaggle, tmp_path), "m")
    late = kaggle_client.poll("titanic", record.ref, timeout_s=0.05, interval_s=0.01)
    assert late.status == "pending" and not late.done


def test_wrong_predictions_score_zero(kaggle_client: KaggleClient, fake_kaggle, tmp_path: Path) -> None:
    record = kaggle_client.submit("titanic", _submission(fake_kaggle, tmp_path, correct=False), "inverted")
    scored = kaggle_client.poll("titanic", record.ref, timeout_s=5, interval_s=0.01)
    assert scored.public_score == pytest.approx(0.0)


def test_daily_limit(kaggle_client: KaggleClient, fake_kaggle, tmp_path: Path) -> None:
    fake_kaggle.daily_limit = 1
    file = _submission(fake_kaggle, tmp_path)
    kaggle_client.submit("titanic", file, "first")
    assert kaggle_client.limits("titanic").allowed_now == 0
    with pytest.raises(DailyLimitReached, match="daily Submission allowance"):
        kaggle_client.submit("titanic", file, "second")
    assert len(fake_kaggle.submissions) == 1


def test_submit_retried_after_server_error_is_not_sent_twice(
    kaggle_client: KaggleClient, fake_kaggle, tmp_path: Path
) -> None:
    fake_kaggle.fail["StartSubmissionUpload"] = [500]
    record = kaggle_client.submit("titanic", _submission(fake_kaggle, tmp_path), "m")
    assert len(fake_kaggle.submissions) == 1 and record.ref == fake_kaggle.submissions[0].ref


def test_leaderboard_download_and_position(kaggle_client: KaggleClient, tmp_path: Path) -> None:
    board = kaggle_client.leaderboard("titanic", keep_dir=tmp_path)
    assert isinstance(board, pd.DataFrame) and len(board) == 40 and "Score" in board.columns
    assert (tmp_path / "titanic.zip").is_file()
    position = leaderboard_position(0.80, board, higher_is_better=True)
    assert position.rank == 7 and position.medal == "silver"


def test_a_stalled_upload_fails_with_one_line_instead_of_hanging(fake_kaggle, tmp_path: Path) -> None:
    """The server takes longer to answer the upload than the stall allowance: the attempt is
    abandoned with a line naming the timeout (a timeout is not retried)."""
    from agentk.kaggle import KaggleClient, KaggleError, RetryPolicy

    client = KaggleClient(retry=RetryPolicy(attempts=2, base_delay_s=0.01, max_delay_s=0.05), upload_stall_s=0.5)
    path = _submission(fake_kaggle, tmp_path)
    assert client.upload_deadline_s(path) < 1.0
    fake_kaggle.delay["StartSubmissionUpload"] = 5.0
    with pytest.raises(KaggleError, match="submitting to titanic"):
        client.submit("titanic", path, "stalled")
