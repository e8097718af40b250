"""The HTML reports as a user sees them, in a real headless chromium: no console or script errors,
every figure drawn (its pixels are not one colour), "not available" pieces saying why, links to
files that exist, and a page that is not blank.

The first tests check the checks themselves on hand-made pages (a good one and one broken in every
way the checks look for), so that a report test passing means something.
"""

from __future__ import annotations

from pathlib import Path

import altair as alt
import pandas as pd
from browser import browser, broken_links, drawn_figures, is_blank, not_available_notes, open_page, screenshot

from agentk.report.page import NotAvailable, figure

__all__ = ["browser"]  # the fixture, imported for pytest


def _bar_chart_svg() -> str:
    data = pd.DataFrame({"family": ["linear", "lightgbm", "catboost"], "score": [0.91, 0.95, 0.94]})
    drawn = figure("scores", alt.Chart(data).mark_bar().encode(x="family", y="score"))
    assert drawn.svg.startswith("<svg"), drawn
    return drawn.svg


def _page(body: str, head: str = "") -> str:
    return f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>t</title>{head}</head><body>{body}</body></html>"


def test_a_good_page_passes_every_check(browser, tmp_path: Path) -> None:
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "attempts.jsonl").write_text("{}\n")
    (tmp_path / "submission.csv").write_text("id,y\n1,0\n")
    missing = figure("trials", NotAvailable("no tuning ran"))
    page_file = tmp_path / "report.html"
    page_file.write_text(
        _page(
            f"<h1 id='top'>Run</h1><figure>{_bar_chart_svg()}<figcaption>scores</figcaption></figure>"
            f"<figure><p class='na'>not available: {missing.missing.reason}</p></figure>"
            "<a href='logs/attempts.jsonl'>attempts</a> <a href='submission.csv'>submission</a>"
            "<a href='logs/'>logs</a> <a href='#top'>top</a>"
        )
    )
    loaded = open_page(browser, page_file)
    assert loaded.console_errors == [] and loaded.page_errors == [], loaded.console + loaded.page_errors
    figures = drawn_figures(loaded.page)
    assert len(figures) == 1 and not figures[0].blank and figures[0].width > 100 and figures[0].height > 50, figures
    assert not_available_notes(loaded.page) == ["not available: no tuning ran"]
    assert broken_links(loaded.page) == []
    assert not is_blank(screenshot(loaded.page, tmp_path / "shot.png"))
    assert (tmp_path / "shot.png").stat().st_size > 1000


def test_a_broken_page_fails_every_check(browser, tmp_path: Path) -> None:
    blank_svg = "<svg xmlns='http://www.w3.org/2000/svg' width='300' height='120'><rect width='300' height='120' fill='white'/></svg>"
    empty_svg = "<svg xmlns='http://www.w3.org/2000/svg' width='0' height='0'></svg>"
    page_file = tmp_path / "report.html"
    page_file.write_text(
        _page(
            f"<figure>{blank_svg}<figcaption>blank</figcaption></figure>"
            f"<figure>{empty_svg}<figcaption>empty</figcaption></figure>"
            "<a href='gone.csv'>gone</a> <a href='https://www.kaggle.com/'>kaggle</a> <a href='#nowhere'>x</a>",
            head="<script>console.error('a console error'); undefinedFunction();</script>",
        )
    )
    loaded = open_page(browser, page_file)
    assert any("a console error" in line for line in loaded.console_errors), loaded.console
    assert any("undefinedFunction" in line for line in loaded.page_errors), loaded.page_errors
    assert [(f.caption, f.blank) for f in drawn_figures(loaded.page)] == [("blank", True), ("empty", True)]
    problems = broken_links(loaded.page)
    assert len(problems) == 3, problems
    assert "does not exist" in problems[0] and "external" in problems[1] and "no element" in problems[2]
    assert not_available_notes(loaded.page) == []


def test_one_colour_is_blank_and_a_drawing_is_not(tmp_path: Path) -> None:
    from PIL import Image, ImageDraw

    white = Image.new("RGB", (200, 100), "white")
    white.save(tmp_path / "white.png")
    assert is_blank(tmp_path / "white.png")
    ImageDraw.Draw(white).rectangle((20, 20, 120, 80), fill="#2b6cb0")
    white.save(tmp_path / "drawn.png")
    assert not is_blank(tmp_path / "drawn.png")
