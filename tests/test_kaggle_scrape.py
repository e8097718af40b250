"""Scraping kaggle.com's competition pages (saved pages of both shapes Kaggle serves, and the loopback
fake serving them), the API fallback in `fetch_competition`, and the wall-clock bound on API calls."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import pytest

from agentk.kaggle import KaggleClient, KaggleUnavailable, RetryPolicy
from agentk.kaggle.fetch import fetch_competition
from agentk.kaggle.official import call_with_deadline
from agentk.kaggle.scrape import USER_AGENT, fetch_pages, scrape_pages

pytest_plugins = ["kaggle_server"]  # fixtures: fake_kaggle, kaggle_client

PAGES = Path(__file__).parent / "kaggle_pages"
NOISE = ("cookies", "OK, Got it", "Sign In", "Datasets", "© 2026", "Download All", "https://", "storage.googleapis",
         "<img", "<a ", "🍪", "🏠", "🎉", "🚀", "📊", "🧪", "JavaScript", "pageRequestStartTime", "gtag")


def page(name: str) -> str:
    return (PAGES / name).read_text()


def assert_clean(sections: dict[str, str]) -> None:
    for name, text in sections.items():
        for bit in NOISE:
            assert bit not in text, f"{bit!r} left in section {name}"


# ------------------------------------------------------------------ saved pages


def test_server_rendered_overview_keeps_sections_headings_and_code() -> None:
    sections = scrape_pages(page("server_rendered_overview.html"))
    assert sections is not None
    assert list(sections) == ["overview", "evaluation", "timeline", "citation"]
    assert "79 explanatory variables" in sections["overview"] and "Competition Description" in sections["overview"]
    assert "- Creative feature engineering" in sections["overview"]
    assert "The Ames Housing dataset was compiled" in sections["overview"], "link text stays, its URL goes"
    assert "Root-Mean-Squared-Error (RMSE)" in sections["evaluation"]
    assert "```\nId,SalePrice\n1461,169000.1\n" in sections["evaluation"]
    assert "Entrants" not in " ".join(sections.values()), "the sidebar is not a section"
    assert_clean({k: v for k, v in sections.items() if k != "citation"})  # a citation carries its URL as text


def test_server_rendered_data_page() -> None:
    sections = scrape_pages(page("server_rendered_data.html"))
    assert sections is not None and list(sections) == ["data"]
    assert "- train.csv - the training set" in sections["data"] and "LotArea: Lot size" in sections["data"]
    assert "kaggle competitions download" not in sections["data"], "the file panel is not the description"
    assert_clean(sections)


def test_app_shell_with_state_json() -> None:
    sections = scrape_pages(page("app_shell_state.html"))
    assert sections is not None and set(sections) == {"overview", "evaluation", "rules"}
    assert "Spaceship Titanic" in sections["overview"] and "Getting Started notebook if you are new" in sections["overview"]
    assert "classification accuracy" in sections["evaluation"]
    assert "```\nPassengerId,Transported\n0013_01,False" in sections["evaluation"]
    assert "largest data science community" not in " ".join(sections.values()), "site-wide state is not content"
    assert_clean(sections)


def test_app_shell_with_next_data_json() -> None:
    sections = scrape_pages(page("app_shell_next_data.html"))
    assert sections is not None and list(sections) == ["overview", "evaluation", "data"]
    assert "Mean Absolute Percentage Error (MAPE)" in sections["evaluation"]
    assert "```\nid,num_sold\n230130,100" in sections["evaluation"]
    assert "See the discussion for details." in sections["data"]
    assert_clean(sections)


@pytest.mark.parametrize("html", [page("app_shell_empty.html"), "", "<html><body><h1>404</h1></body></html>",
                                  "<script>Kaggle.State.push({not json</script>"])
def test_pages_without_content_give_none(html: str) -> None:
    assert scrape_pages(html) is None


# ------------------------------------------------------------------ over HTTP (loopback fake)


def serve_house_prices(fake_kaggle, slug: str = "titanic") -> None:
    fake_kaggle.web_pages[f"/competitions/{slug}/overview"] = page("server_rendered_overview.html")
    fake_kaggle.web_pages[f"/competitions/{slug}/data"] = page("server_rendered_data.html")


def test_fetch_pages_caches_raw_html_and_identifies_itself(fake_kaggle, tmp_path: Path) -> None:
    serve_house_prices(fake_kaggle)
    sections = fetch_pages("titanic", base_url=fake_kaggle.base_url, cache_dir=tmp_path / "raw")
    assert sections is not None and {"overview", "evaluation", "data"} <= set(sections)
    assert (tmp_path / "raw" / "web-overview.html").read_text() == page("server_rendered_overview.html")
    assert (tmp_path / "raw" / "web-data.html").is_file()
    assert fake_kaggle.user_agents == [USER_AGENT, USER_AGENT]


def test_fetch_pages_gives_none_on_http_and_network_errors(fake_kaggle, tmp_path: Path) -> None:
    assert fetch_pages("titanic", base_url=fake_kaggle.base_url) is None  # 404: no pages served
    with socket.socket() as s:  # a port nobody listens on: connection refused
        s.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{s.getsockname()[1]}"
    assert fetch_pages("titanic", base_url=closed) is None
    serve_house_prices(fake_kaggle)
    fake_kaggle.delay["/competitions/titanic/overview"] = 2.0
    started = time.monotonic()
    assert fetch_pages("titanic", base_url=fake_kaggle.base_url, timeout_s=0.3) is None
    assert time.monotonic() - started < 1.5


def test_fetch_competition_prefers_the_scraped_pages(kaggle_client: KaggleClient, fake_kaggle, tmp_path: Path) -> None:
    serve_house_prices(fake_kaggle)
    root = tmp_path / "comp"
    fetch_competition(kaggle_client, "titanic", root)  # the web URL follows KAGGLE_API_ENVIRONMENT to the fake
    text = (root / "description.md").read_text()
    assert text.startswith("# Titanic - Machine Learning from Disaster\n\n## Overview\n")
    assert "79 explanatory variables" in text and "## Evaluation\n" in text and "## Data\n" in text
    assert "Timeline" not in text and "Citation" not in text
    assert "ListCompetitionPages" not in fake_kaggle.calls, "complete scrape: the API pages are not needed"
    assert (root / ".kaggle" / "pages" / "web-overview.html").is_file()


def test_fetch_competition_falls_back_to_the_api_for_an_empty_shell(kaggle_client: KaggleClient, fake_kaggle,
                                                                    tmp_path: Path) -> None:
    for name in ("overview", "data"):
        fake_kaggle.web_pages[f"/competitions/titanic/{name}"] = page("app_shell_empty.html")
    root = tmp_path / "comp"
    fetch_competition(kaggle_client, "titanic", root)
    text = (root / "description.md").read_text()
    assert "## Overview" in text and "## Evaluation" in text and "## Data" in text and "accuracy" in text
    assert "ListCompetitionPages" in fake_kaggle.calls
    assert "<img" in (root / ".kaggle" / "pages" / "description.html").read_text()
    assert (root / ".kaggle" / "pages" / "web-overview.html").is_file(), "the shell is kept too, for diagnosis"


def test_fetch_competition_fills_missing_sections_from_the_api(kaggle_client: KaggleClient, fake_kaggle,
                                                               tmp_path: Path) -> None:
    fake_kaggle.web_pages["/competitions/titanic/overview"] = page("app_shell_state.html")
    fake_kaggle.web_pages["/competitions/titanic/data"] = page("app_shell_empty.html")
    root = tmp_path / "comp"
    fetch_competition(kaggle_client, "titanic", root)
    text = (root / "description.md").read_text()
    headings = [line for line in text.splitlines() if line.startswith("## ")]
    assert headings == ["## Overview", "## Evaluation", "## Data"]
    overview = text.split("## Overview", 1)[1].split("## Evaluation", 1)[0]
    assert "Spaceship Titanic" in overview, "the scraped overview wins over the API's"
    data = text.split("## Data\n", 1)[1]
    assert data.strip() and fake_kaggle.competition.pages["data-description"][5:40] in data


# ------------------------------------------------------------------ API call timeouts


def test_a_hung_api_call_gives_up_after_the_timeout(fake_kaggle) -> None:
    fake_kaggle.delay["GetCompetition"] = 2.0
    client = KaggleClient(retry=RetryPolicy(attempts=3, base_delay_s=0.01), timeout_s=0.5)
    started = time.monotonic()
    with pytest.raises(KaggleUnavailable, match=r"reading competition titanic: Kaggle did not answer within 0.5 s"):
        client.competition("titanic")
    assert time.monotonic() - started < 1.5
    assert fake_kaggle.calls.count("GetCompetition") == 1, "a timeout is not retried"


def test_calls_within_the_timeout_are_untouched(fake_kaggle) -> None:
    fake_kaggle.delay["GetCompetition"] = 0.1
    client = KaggleClient(retry=RetryPolicy(attempts=1), timeout_s=5)
    assert client.competition("titanic").title.startswith("Titanic")
    with pytest.raises(ZeroDivisionError):
        call_with_deadline("dividing", lambda: 1 / 0, 1.0)  # errors reach the caller's thread as they were
    assert call_with_deadline("adding", lambda: 1 + 1, None) == 2
