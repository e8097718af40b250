"""Fetching a competition into the local layout, description cleaning, and careful submitting."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentk.kaggle import DailyLimitReached, DuplicateSubmission, KaggleClient
from agentk.kaggle.description import clean_page, description_markdown
from agentk.kaggle.fetch import fetch_competition
from agentk.kaggle.submit import SubmissionLedger, submission_message, submit_and_score
from agentk.sources import load_competition

pytest_plugins = ["kaggle_server"]  # fixtures: fake_kaggle, kaggle_client


def test_fetch_writes_a_loadable_local_competition(kaggle_client: KaggleClient, fake_kaggle, tmp_path: Path) -> None:
    root = tmp_path / "titanic"
    fetched = fetch_competition(kaggle_client, "titanic", root)
    assert sorted(p.name for p in fetched.files) == sorted(fake_kaggle.competition.files)
    text = (root / "description.md").read_text()
    assert text.startswith("# Titanic - Machine Learning from Disaster\n")
    assert "## Overview" in text and "## Evaluation" in text and "## Data" in text
    assert "<img" not in text and "https://" not in text and "🚢" not in text and "Learn" in text
    assert "<img" in (root / ".kaggle" / "pages" / "description.html").read_text(), "raw HTML is kept"
    meta = json.loads((root / ".kaggle" / "competition.json").read_text())
    assert meta["metric"] == "Categorization Accuracy" and meta["max_daily_submissions"] == 5

    comp = load_competition(root)
    assert comp.title == "Titanic - Machine Learning from Disaster" and comp.grading is None
    prepared = tmp_path / "raw"
    comp.prepare(prepared)
    assert (prepared / "data" / "train.csv").is_file() and (prepared / "description.md").is_file()


def test_clean_page_keeps_text_and_code() -> None:
    html = (
        '<h2>Metric</h2><p>Score is <a href="https://x.example/metric">accuracy</a> ✅'
        '<img src="a.png"></p><pre>id,y\n1,0</pre><ul><li>one</li><li>two</li></ul><script>x()</script>'
    )
    text = clean_page(html)
    assert "Score is accuracy" in text and "x.example" not in text and "✅" not in text
    assert "```\nid,y\n1,0\n```" in text and "- one\n- two" in text and "x()" not in text


def test_description_skips_rules_and_prizes() -> None:
    text = description_markdown("T", {"rules": "secret rules", "prizes": "$$$", "evaluation": "RMSE"})
    assert text == "# T\n\n## Evaluation\nRMSE\n"


def _submission(fake_kaggle, tmp_path: Path) -> Path:
    path = tmp_path / "submission.csv"
    fake_kaggle.competition.answers.to_csv(path, index=False)
    return path


def test_submit_and_score_records_and_refuses_duplicates(kaggle_client: KaggleClient, fake_kaggle, tmp_path: Path) -> None:
    ledger = SubmissionLedger(tmp_path / "submissions" / "kaggle.jsonl")
    file = _submission(fake_kaggle, tmp_path)
    message = submission_message("lightgbm", "accuracy", 0.8312)
    assert message == "agentk: lightgbm, validation accuracy 0.8312"
    scored = submit_and_score(kaggle_client, "titanic", file, message, ledger, timeout_s=5, interval_s=0.01)
    assert scored.public_score == pytest.approx(1.0)
    assert [e.record.status for e in ledger.entries()] == ["complete"]
    with pytest.raises(DuplicateSubmission, match="already submitted to titanic .*public score 1.0; use --force"):
        submit_and_score(kaggle_client, "titanic", file, message, ledger)
    assert len(fake_kaggle.submissions) == 1
    submit_and_score(kaggle_client, "titanic", file, message, ledger, force=True, timeout_s=5, interval_s=0.01)
    assert len(fake_kaggle.submissions) == 2


def test_submit_and_score_checks_the_daily_limit_first(kaggle_client: KaggleClient, fake_kaggle, tmp_path: Path) -> None:
    fake_kaggle.daily_limit = 0
    ledger = SubmissionLedger(tmp_path / "ledger.jsonl")
    with pytest.raises(DailyLimitReached, match="no submissions left for titanic .*after 00:00 UTC"):
        submit_and_score(kaggle_client, "titanic", _submission(fake_kaggle, tmp_path), "m", ledger)
    assert "StartSubmissionUpload" not in fake_kaggle.calls and ledger.entries() == []
