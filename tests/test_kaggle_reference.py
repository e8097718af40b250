"""Competition references: URLs, site paths and bare slugs."""

from __future__ import annotations

import pytest

from agentk.kaggle import competition_url, parse_competition_reference


@pytest.mark.parametrize(
    "text, slug",
    [
        ("https://www.kaggle.com/competitions/spaceship-titanic", "spaceship-titanic"),
        ("https://www.kaggle.com/competitions/spaceship-titanic/", "spaceship-titanic"),
        ("https://www.kaggle.com/competitions/spaceship-titanic/data?select=train.csv", "spaceship-titanic"),
        ("https://www.kaggle.com/c/titanic", "titanic"),
        ("http://kaggle.com/c/titanic/leaderboard", "titanic"),
        ("www.kaggle.com/competitions/titanic", "titanic"),
        ("kaggle.com/competitions/titanic#overview", "titanic"),
        ("/c/titanic", "titanic"),
        ("/competitions/playground-series-s4e1/overview", "playground-series-s4e1"),
        ("titanic", "titanic"),
        ("Spaceship-Titanic", "spaceship-titanic"),
        ("  titanic  ", "titanic"),
    ],
)
def test_references(text: str, slug: str) -> None:
    assert parse_competition_reference(text) == slug


@pytest.mark.parametrize(
    "text",
    [
        "",
        "https://www.kaggle.com/datasets/someone/titanic",
        "https://www.kaggle.com/competitions",
        "https://example.com/competitions/titanic",
        "https://www.kaggle.com.evil.example/competitions/titanic",
        "ftp://www.kaggle.com/competitions/titanic",
        "./competitions/titanic",
        "/home/me/competitions-titanic",
        "titanic_2",
        "my competition",
        "https://www.kaggle.com/competitions/bad_slug!",
    ],
)
def test_not_references(text: str) -> None:
    assert parse_competition_reference(text) is None


def test_competition_url() -> None:
    assert competition_url("titanic") == "https://www.kaggle.com/competitions/titanic"
