"""KaggleClient against a fake Kaggle on 127.0.0.1: the real `kaggle` package, real HTTP."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agentk.kaggle import (
    CompetitionNotFound,
    KaggleClient,
    KaggleCredentialsError,
    KaggleUnavailable,
    RetryPolicy,
    RulesNotAccepted,
)

pytest_plugins = ["kaggle_server"]  # fixtures: fake_kaggle, kaggle_client


def test_competition_metadata(kaggle_client: KaggleClient) -> None:
    info = kaggle_client.competition("titanic")
    assert info.title == "Titanic - Machine Learning from Disaster"
    assert info.metric == "Categorization Accuracy"
    assert info.team_count == 40 and info.max_daily_submissions == 5
    assert info.deadline is not None and info.deadline.year == 2030
    assert info.url == "https://www.kaggle.com/competitions/titanic"
    assert info.rules_url == "https://www.kaggle.com/competitions/titanic/rules"


def test_pages(kaggle_client: KaggleClient) -> None:
    pages = kaggle_client.pages("titanic")
    assert set(pages) == {"description", "evaluation", "data-description"}
    assert "accuracy" in pages["evaluation"]


def test_list_files(kaggle_client: KaggleClient, fake_kaggle) -> None:
    files = kaggle_client.list_files("titanic")
    assert {f.name: f.size for f in files} == fake_kaggle.competition.files


def test_download_extracts_and_verifies_sizes(kaggle_client: KaggleClient, fake_kaggle, tmp_path: Path) -> None:
    dest = tmp_path / "raw" / "data"
    paths = kaggle_client.download("titanic", dest)
    assert sorted(p.name for p in paths) == sorted(fake_kaggle.competition.files)
    for name, size in fake_kaggle.competition.files.items():
        assert (dest / name).stat().st_size == size
    assert not list(tmp_path.glob("raw/.extract-*")), "the temporary extraction folder is cleaned up"


def test_download_is_skipped_when_complete(kaggle_client: KaggleClient, fake_kaggle, tmp_path: Path) -> None:
    dest = tmp_path / "data"
    kaggle_client.download("titanic", dest)
    fake_kaggle.calls.clear()
    kaggle_client.download("titanic", dest)
    assert fake_kaggle.calls == ["ListDataFiles"], "only the listing is fetched, no archive"


def test_truncated_download_is_resumed(kaggle_client: KaggleClient, fake_kaggle, tmp_path: Path) -> None:
    # The official client writes 1 MiB chunks: the archive must be big enough for a partial to land on disk.
    fake_kaggle.add_file("images.bin", os.urandom(3 * 2**20))
    fake_kaggle.truncate_downloads = 1
    dest = tmp_path / "data"
    kaggle_client.download("titanic", dest)
    gets = [c for c in fake_kaggle.calls if c.startswith("GET")]
    assert len(gets) == 2 and gets[0].endswith("from 0") and not gets[1].endswith("from 0"), gets
    assert int(gets[1].rsplit(" ", 1)[-1]) >= 2**20
    for name, size in fake_kaggle.competition.files.items():
        assert (dest / name).stat().st_size == size


@pytest.mark.parametrize("status", [429, 500])
def test_transient_errors_are_retried(kaggle_client: KaggleClient, fake_kaggle, status: int) -> None:
    fake_kaggle.fail["GetCompetition"] = [status, status]
    assert kaggle_client.competition("titanic").title.startswith("Titanic")
    assert fake_kaggle.calls.count("GetCompetition") == 3


def test_persistent_server_errors_give_one_clear_line(kaggle_client: KaggleClient, fake_kaggle) -> None:
    fake_kaggle.fail["ListDataFiles"] = [503] * 10
    with pytest.raises(KaggleUnavailable, match=r"HTTP 503.*after 4 attempts") as err:
        kaggle_client.list_files("titanic")
    assert "\n" not in str(err.value)
    assert fake_kaggle.calls.count("ListDataFiles") == 4


def test_rules_not_accepted_names_the_rules_page(kaggle_client: KaggleClient, fake_kaggle, tmp_path: Path) -> None:
    fake_kaggle.forbidden.add("titanic")
    with pytest.raises(RulesNotAccepted) as err:
        kaggle_client.download("titanic", tmp_path / "data")
    assert "https://www.kaggle.com/competitions/titanic/rules" in str(err.value)
    assert "\n" not in str(err.value)


def test_unknown_competition(kaggle_client: KaggleClient) -> None:
    with pytest.raises(CompetitionNotFound, match="no-such-competition"):
        kaggle_client.competition("no-such-competition")


def test_wrong_key_is_a_credentials_error(fake_kaggle, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KAGGLE_KEY", "wrong-key-wrong-key")
    client = KaggleClient(retry=RetryPolicy(attempts=2, base_delay_s=0.01))
    with pytest.raises(KaggleCredentialsError, match="KAGGLE_USERNAME/KAGGLE_KEY.*401") as err:
        client.competition("titanic")
    assert "wrong-key-wrong-key" not in str(err.value)


def test_access_token_is_sent_as_bearer(fake_kaggle, monkeypatch: pytest.MonkeyPatch) -> None:
    from kaggle_server import TOKEN

    monkeypatch.delenv("KAGGLE_USERNAME")
    monkeypatch.delenv("KAGGLE_KEY")
    monkeypatch.setenv("KAGGLE_API_TOKEN", TOKEN)
    client = KaggleClient(retry=RetryPolicy(attempts=1))
    assert client.credentials.kind == "token"
    assert client.competition("titanic").title.startswith("Titanic")
