"""The HTML reports as a user sees them, in a real headless chromium: no console or script errors,
every figure drawn (its pixels are not one colour), "not available" pieces saying why, links to
files that exist, and a page that is not blank.

The first tests check the checks themselves on hand-made pages (a good one and one broken in every
way the checks look for), so that a report test passing means something.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import altair as alt
import pandas as pd
import pytest
from tiny_campaign import TinyCampaign
from browser import (
    Loaded,
    browser,
    broken_links,
    drawn_figures,
    is_blank,
    not_available_notes,
    open_page,
    overflowing,
    screenshot,
)

from test_bench_report import bench_folder
from typer.testing import CliRunner

from agentk.cli import app
from agentk.core.records.campaign_record import BENCH_JSON, COLD
from agentk.report.bench_report import write_bench_report
from agentk.report.page import REPORT_FILE, NotAvailable, figure

pytest_plugins = ["tiny_campaign"]
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
    assert overflowing(loaded.page) == []
    assert not is_blank(screenshot(loaded.page, tmp_path / "shot.png"))
    assert (tmp_path / "shot.png").stat().st_size > 1000


def test_a_broken_page_fails_every_check(browser, tmp_path: Path) -> None:
    blank_svg = "<svg xmlns='http://www.w3.org/2000/svg' width='300' height='120'><rect width='300' height='120' fill='white'/></svg>"
    empty_svg = "<svg xmlns='http://www.w3.org/2000/svg' width='0' height='0'></svg>"
    wide = "a task name too long for its column " * 10
    page_file = tmp_path / "report.html"
    page_file.write_text(
        _page(
            f"<figure>{blank_svg}<figcaption>blank</figcaption></figure>"
            f"<figure>{empty_svg}<figcaption>empty</figcaption></figure>"
            f"<div style='overflow-x: auto; width: 300px'><table><tr><td style='white-space: nowrap'>{wide}</td></tr></table></div>"
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
    assert [line.split(" holds")[0] for line in overflowing(loaded.page)] == ["<div>"], overflowing(loaded.page)


def test_one_colour_is_blank_and_a_drawing_is_not(tmp_path: Path) -> None:
    from PIL import Image, ImageDraw

    white = Image.new("RGB", (200, 100), "white")
    white.save(tmp_path / "white.png")
    assert is_blank(tmp_path / "white.png")
    ImageDraw.Draw(white).rectangle((20, 20, 120, 80), fill="#2b6cb0")
    white.save(tmp_path / "drawn.png")
    assert not is_blank(tmp_path / "drawn.png")


# --- the real reports: one tiny campaign of two tasks gives a campaign report and, for each task's
# workspace, a run report.



@pytest.fixture(scope="module")
def campaign(tiny_campaign: TinyCampaign) -> Path:
    """The session's tiny real campaign (tests/tiny_campaign.py): two tasks solved, one failed."""
    return tiny_campaign.folder


def report_of(folder: Path) -> Path:
    """`agentk report FOLDER`: the page it writes, and the path it prints."""
    # In-process: it starts no run, and a fresh interpreter per page would cost ~5 s.
    proc = CliRunner().invoke(app, ["report", str(folder)])
    assert proc.exit_code == 0, proc.output[-4000:]
    page = folder / REPORT_FILE
    assert page.is_file() and str(page) in proc.stdout.replace("\n", ""), proc.stdout
    return page


def check_report(browser, page_file: Path, shot: Path) -> Loaded:
    loaded = open_page(browser, page_file)
    assert loaded.console_errors == [] and loaded.page_errors == [], loaded.console + loaded.page_errors
    assert loaded.failed_requests == [], loaded.failed_requests
    # No script and no network: a report opens offline and prints.
    assert loaded.page.locator("script").count() == 0
    figures = drawn_figures(loaded.page)
    assert figures, "no figure was drawn"
    for drawn in figures:
        assert drawn.width > 50 and drawn.height > 30 and not drawn.blank, drawn
    for note in not_available_notes(loaded.page):
        reason = note.removeprefix("not available:").strip()
        assert note.startswith("not available:") and len(reason) > 3, f"a missing piece without its reason: {note!r}"
    assert broken_links(loaded.page) == []
    # At a laptop's width nothing scrolls sideways: no column of a table is hidden.
    assert overflowing(loaded.page) == []
    assert not is_blank(screenshot(loaded.page, shot))
    return loaded


@pytest.mark.integration
def test_a_run_report_renders_in_a_browser(browser, campaign: Path, tmp_path: Path) -> None:
    workspace = campaign / "workspaces" / "tumours-a"
    loaded = check_report(browser, report_of(workspace), tmp_path / "run.png")
    text = loaded.page.inner_text("body")
    assert "tumours-a" in text
    # A tiny run has no leaderboard: that piece says so, with its reason.
    assert not_available_notes(loaded.page), "a run without a leaderboard shows no 'not available' piece"
    # Links reach the run's own files (the submission at least).
    hrefs = loaded.page.eval_on_selector_all("a[href]", "links => links.map(a => a.getAttribute('href'))")
    assert any("submission" in href for href in hrefs), hrefs


@pytest.mark.integration
def test_a_run_report_with_missing_files_still_renders_and_says_why(browser, campaign: Path, tmp_path: Path) -> None:
    workspace = shutil.copytree(campaign / "workspaces" / "tumours-b", tmp_path / "tumours-b")
    (workspace / REPORT_FILE).unlink(missing_ok=True)
    for gone in ("solve", "logs"):
        shutil.rmtree(workspace / gone)
    loaded = open_page(browser, report_of(workspace))
    assert loaded.console_errors == [] and loaded.page_errors == [], loaded.console + loaded.page_errors
    notes = not_available_notes(loaded.page)
    assert all(len(note.removeprefix("not available:").strip()) > 3 for note in notes), notes
    # The reasons name what is missing, so a user knows where to look.
    assert any("attempts.jsonl" in note for note in notes) and any("solve_result.json" in note for note in notes), notes
    assert broken_links(loaded.page) == []
    assert not is_blank(screenshot(loaded.page))


@pytest.mark.integration
def test_a_campaign_report_renders_in_a_browser(browser, campaign: Path, tmp_path: Path) -> None:
    loaded = check_report(browser, report_of(campaign), tmp_path / "campaign.png")
    text = loaded.page.inner_text("body")
    assert "tumours-a" in text and "tumours-b" in text
    # One seed, no leaderboards, no bench: Table 4, Figure 9 or Figure 14 say why they are missing.
    assert not_available_notes(loaded.page)


@pytest.mark.integration
def test_both_reports_fit_a_printed_page(browser, campaign: Path) -> None:
    # A4 at 96 dpi is about 794 px wide: printed, nothing may run off the paper's edge.
    for page_file in (report_of(campaign), report_of(campaign / "workspaces" / "tumours-a")):
        loaded = open_page(browser, page_file, width=794)
        loaded.page.emulate_media(media="print")
        assert overflowing(loaded.page) == [], page_file
        assert loaded.page.pdf(format="A4")[:5] == b"%PDF-"
        loaded.page.close()


# --- the bench page, from real campaign folders and a bench.json written without running a bench
# (tests/test_bench_report.py's fixture; `agentk report` on it is tested there): fast, so not an
# integration test.


def test_a_bench_report_renders_in_a_browser_and_fits_a_printed_page(browser, tmp_path: Path) -> None:
    bench_dir, bench = bench_folder(tmp_path, reports=("fixed", "curriculum", COLD))
    page_file = write_bench_report(bench_dir)
    loaded = check_report(browser, page_file, tmp_path / "bench.png")
    captions = [drawn.caption for drawn in drawn_figures(loaded.page)]
    assert len(captions) == 2 and all(c.startswith("Figure 14") for c in captions), captions
    assert not_available_notes(loaded.page) == []
    text = loaded.page.inner_text("body")
    assert all(row.order in text for row in bench.orders) and "0.550" in text
    hrefs = loaded.page.eval_on_selector_all("a[href]", "links => links.map(a => a.getAttribute('href'))")
    assert {"fixed/report.html", "curriculum/report.html", f"{COLD}/report.html"} == set(hrefs), hrefs
    loaded.page.close()

    printed = open_page(browser, page_file, width=794)
    printed.page.emulate_media(media="print")
    assert overflowing(printed.page) == []
    assert printed.page.pdf(format="A4")[:5] == b"%PDF-"
    printed.page.close()


def test_a_bench_report_without_its_json_says_why_in_a_browser(browser, tmp_path: Path) -> None:
    bench_dir, _ = bench_folder(tmp_path, orders=("fixed", "random"), reports=())
    (bench_dir / BENCH_JSON).unlink()
    loaded = check_report(browser, write_bench_report(bench_dir), tmp_path / "bench.png")
    assert len(drawn_figures(loaded.page)) == 2  # Figure 14, recomputed from the campaigns
    [note] = not_available_notes(loaded.page)
    assert note.startswith(f"not available: there is no {BENCH_JSON}") and "warm vs cold" in note
    assert "Recomputed from the campaign folders" in loaded.page.inner_text("body")
