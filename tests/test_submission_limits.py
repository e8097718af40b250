"""Daily submission limits across a campaign: several runs (several ledgers) of the same slug on one
UTC day, against the fake Kaggle serving two competitions at once (real client, real HTTP)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from agentk.kaggle import DailyLimitReached, KaggleClient, KaggleSubmission, RetryPolicy
from agentk.kaggle.submit import SubmissionLedger, file_digest, submit_and_score
from agentk.publish import remaining_today

pytest_plugins = ["kaggle_server"]  # fixtures: fake_kaggle_many

TITANIC, PLAYGROUND = "titanic", "playground-series-s3e5"
# The fake Kaggle dates its submissions on 2026-01-01 (UTC, from 12:00): that is "today" here.
TODAY = datetime(2026, 1, 1, 18, 0)


@pytest.fixture
def client(fake_kaggle_many) -> KaggleClient:
    return KaggleClient(retry=RetryPolicy(attempts=2, base_delay_s=0.01, max_delay_s=0.05))


def _answers_file(fake, slug: str, path: Path, variant: int = 0) -> Path:
    """A valid submission for `slug` (its held-out answers); `variant` changes the bytes, not the rows."""
    fake.competitions[slug].answers.to_csv(path, index=False)
    path.write_text(path.read_text() + "\n" * variant)
    return path


def _send(client: KaggleClient, fake, slug: str, ledger: SubmissionLedger, file: Path) -> KaggleSubmission:
    return submit_and_score(client, slug, file, "m", ledger, timeout_s=5, interval_s=0.01)


def test_two_competitions_are_listed_downloaded_and_submitted_to_separately(
        fake_kaggle_many, client: KaggleClient, tmp_path: Path) -> None:
    assert client.search(None, "", 10) == [TITANIC, PLAYGROUND]
    for slug in (TITANIC, PLAYGROUND):
        files = client.download(slug, tmp_path / slug / "data")
        assert sorted(p.name for p in files) == sorted(fake_kaggle_many.competitions[slug].files)
        ledger = SubmissionLedger(tmp_path / slug / "ledger.jsonl")
        record = _send(client, fake_kaggle_many, slug, ledger, _answers_file(fake_kaggle_many, slug, tmp_path / f"{slug}.csv"))
        assert record.status == "complete" and record.public_score is not None
    assert [s.slug for s in fake_kaggle_many.submissions] == [TITANIC, PLAYGROUND]
    assert [s.ref for s in client.submissions(PLAYGROUND)] == [fake_kaggle_many.submissions[1].ref]


def test_remaining_today_counts_every_run_of_the_campaign(fake_kaggle_many, client: KaggleClient, tmp_path: Path) -> None:
    fake_kaggle_many.daily_limits = {TITANIC: 3, PLAYGROUND: 2}
    first, retry = (SubmissionLedger(tmp_path / name / "kaggle_submissions.jsonl") for name in ("run1", "run2"))
    assert remaining_today(client, TITANIC, now=TODAY) == 3
    assert remaining_today(client, PLAYGROUND, now=TODAY) == 2

    _send(client, fake_kaggle_many, TITANIC, first, _answers_file(fake_kaggle_many, TITANIC, tmp_path / "a.csv"))
    _send(client, fake_kaggle_many, TITANIC, retry, _answers_file(fake_kaggle_many, TITANIC, tmp_path / "b.csv", 1))
    entries = first.entries() + retry.entries() + first.entries()  # a workspace read twice counts once
    assert remaining_today(client, TITANIC, entries, now=TODAY) == 1
    assert remaining_today(client, PLAYGROUND, entries, now=TODAY) == 2, "each competition has its own limit"

    # Sent but not yet counted by Kaggle (cut off after the upload): the ledger still holds it back.
    in_flight = KaggleSubmission(99_999, "c.csv", "m", "pending", None, None, datetime(2026, 1, 2, 0, 30,
                                 tzinfo=timezone(timedelta(hours=1))))  # 23:30 UTC on the same day
    retry.add(TITANIC, "f" * 64, in_flight)
    assert remaining_today(client, TITANIC, first.entries() + retry.entries(), now=TODAY) == 0
    # The same ledgers tomorrow: only Kaggle's count (its own day) holds them back.
    assert remaining_today(client, TITANIC, first.entries() + retry.entries(), now=TODAY + timedelta(days=1)) == 1


def test_yesterday_and_other_competitions_do_not_count(fake_kaggle_many, client: KaggleClient, tmp_path: Path) -> None:
    fake_kaggle_many.daily_limits = {TITANIC: 2}
    ledger = SubmissionLedger(tmp_path / "kaggle_submissions.jsonl")
    ledger.add(TITANIC, "a" * 64, KaggleSubmission(1, "a.csv", "m", "complete", 0.7, 0.7, datetime(2025, 12, 31, 23, 59)))
    ledger.add(PLAYGROUND, "b" * 64, KaggleSubmission(2, "b.csv", "m", "complete", 0.5, 0.5, TODAY))
    ledger.add(TITANIC, "c" * 64, KaggleSubmission(3, "c.csv", "m", "pending", None, None, None))  # no date: unknown day
    assert remaining_today(client, TITANIC, ledger.entries(), now=TODAY) == 2
    ledger.add(TITANIC, "d" * 64, KaggleSubmission(4, "d.csv", "m", "complete", 0.7, 0.7, TODAY))
    assert remaining_today(client, TITANIC, ledger.entries(), now=TODAY) == 1


def test_a_used_up_allowance_is_zero_and_kaggle_refuses_more(fake_kaggle_many, client: KaggleClient, tmp_path: Path) -> None:
    fake_kaggle_many.daily_limits = {PLAYGROUND: 1}
    ledger = SubmissionLedger(tmp_path / "kaggle_submissions.jsonl")
    _send(client, fake_kaggle_many, PLAYGROUND, ledger, _answers_file(fake_kaggle_many, PLAYGROUND, tmp_path / "a.csv"))
    assert remaining_today(client, PLAYGROUND, ledger.entries(), now=TODAY) == 0
    with pytest.raises(DailyLimitReached):
        _send(client, fake_kaggle_many, PLAYGROUND, ledger,
              _answers_file(fake_kaggle_many, PLAYGROUND, tmp_path / "b.csv", 1))
    assert file_digest(tmp_path / "b.csv") not in {e.sha256 for e in ledger.entries()}
