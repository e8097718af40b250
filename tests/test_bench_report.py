"""The page of an `agentk bench --campaign` (ROOT/campaign-bench/report.html), drawn from real
campaign folders (state.json written by CampaignFolder) and a real bench.json, with no run: Figure 14
for every order, the orders' table, warm vs cold, links to each order's campaign page, and what the
page says when bench.json is missing, unreadable or without warm vs cold."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest
from bs4 import BeautifulSoup
from test_campaign_bench import T0, attempt, saved, warm_and_cold

from agentk.bench.campaign_bench import warm_vs_cold
from agentk.core.records.campaign_record import COLD, CampaignBench, figure14
from agentk.campaign.state import CampaignState, TaskState, TaskStatus
from agentk.core.records.campaign_record import BENCH_DIR, BENCH_JSON
from agentk.core.errors import AgentKError
from agentk.core.records.workspace import atomic_write_json
from agentk.report import campaign_figures
from agentk.report.bench_report import bench_context, write_bench_report
from agentk.report.campaign_report import write_campaign_report
from agentk.report.page import REPORT_FILE

ORDERS = ("fixed", "random", "heuristic", "curriculum")
FIG14_TIME = "Figure 14: tasks solved against wall time"
FIG14_TOKENS = "Figure 14: tasks solved against LLM tokens"


def order_state(order: str, i: int, pool: list[str]) -> CampaignState:
    """The i-th order's campaign over `pool`, started i minutes after the first (the bench runs them
    one after another). It takes the tasks in its own order (the pool rotated by i), one run each,
    then runs the failed ones once more; a task's run takes longer the later the order, so each
    order has its own curve and numbers."""
    start = 60.0 * i  # on T0's clock; the campaign's own clock starts here
    taken = pool[i % len(pool):] + pool[: i % len(pool)]
    clock, runs, tokens = start + 2.0, 0, 0
    tasks: dict[str, TaskState] = {}
    retry = []
    for k, key in enumerate(taken):
        ok = (k + i) % 3 != 2
        runs += 1
        spent = 40 * (k + 1) * (i + 1)
        tasks[key] = TaskState(key=key, source=f"/{key}", kind="folder", status=TaskStatus.SOLVED if ok else TaskStatus.FAILED,
                               attempts=[attempt(runs, clock, 6 + 2 * k + i, ok, spent)])
        clock, tokens = clock + 6 + 2 * k + i, tokens + spent
        if not ok:
            retry.append(key)
    for key in retry:
        ok = len(key) % 2 == 0
        runs += 1
        tasks[key].attempts.append(attempt(runs, clock, 8 + i, ok, 30))
        tasks[key].status = TaskStatus.SOLVED if ok else TaskStatus.GAVE_UP
        clock, tokens = clock + 8 + i, tokens + 30
    return CampaignState(name=f"bench-{order}", created=T0 + timedelta(seconds=start), options={"order": order},
                         elapsed_s=clock - start + 1.0, round=runs, tokens=25 + tokens,
                         tasks={key: tasks[key] for key in pool})


def bench_folder(root: Path, *, warm: bool = True, orders: tuple[str, ...] = ORDERS,
                 reports: tuple[str, ...] = ("fixed", "curriculum")) -> tuple[Path, CampaignBench]:
    """ROOT/campaign-bench with a campaign folder per order (and the cold curriculum run's), the
    real campaign page of the orders in `reports`, and the bench.json the bench writes."""
    bench_dir = root / BENCH_DIR
    warm_state, cold_state = warm_and_cold(root / "warm-cold")  # the curriculum's warm and cold runs' solves
    pool = list(warm_state.tasks)
    states = {order: saved(order_state(order, i, pool), bench_dir / order) for i, order in enumerate(orders)}
    if warm:
        saved(cold_state.model_copy(update={"name": "bench-curriculum-cold"}), bench_dir / COLD)
    for order in reports:
        write_campaign_report(bench_dir / order)
    bench = CampaignBench(
        pool=pool, folders={label: str(bench_dir / label) for label in [*orders, *([COLD] if warm else [])]},
        orders=figure14(states), warm_vs_cold=warm_vs_cold(warm_state, cold_state) if warm else None,
        notes=["the curriculum order ran too: it is the warm run of warm vs cold"])
    atomic_write_json(bench_dir / BENCH_JSON, bench.model_dump(mode="json"))
    return bench_dir, bench


# ---------------------------------------------------------------- reading the page


def page_of(bench_dir: Path) -> BeautifulSoup:
    path = write_bench_report(bench_dir)
    assert path == bench_dir / REPORT_FILE
    return BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")


def figures_of(page: BeautifulSoup) -> dict[str, str]:
    """Each figure's caption → its content: the SVG markup, or its "not available" note."""
    found = {}
    for fig in page.find_all("figure"):
        svg, note = fig.find("svg"), fig.find(class_="na")
        found[fig.figcaption.get_text(strip=True)] = str(svg) if svg else note.get_text(" ", strip=True)
    return found


def table_after(page: BeautifulSoup, heading_id: str) -> list[list[str]]:
    """The cells of the first table after the heading, row by row (the header row first)."""
    table = page.find(id=heading_id).find_next("table")
    return [[cell.get_text(" ", strip=True) for cell in tr.find_all(["th", "td"])] for tr in table.find_all("tr")]


def notes(page: BeautifulSoup) -> list[str]:
    return [p.get_text(" ", strip=True) for p in page.find_all(class_="na")]


def drawn(svg: str, marks: int) -> bool:
    """An SVG with at least `marks` lines drawn in it (Vega draws each order's line as a path)."""
    return svg.startswith("<svg") and svg.count("<path") >= marks


# ---------------------------------------------------------------- the page


def test_the_page_shows_figure_14_every_order_and_warm_vs_cold(tmp_path: Path) -> None:
    bench_dir, bench = bench_folder(tmp_path)
    page = page_of(bench_dir)
    figs = figures_of(page)
    for caption in (FIG14_TIME, FIG14_TOKENS):
        [svg] = [content for title, content in figs.items() if title.startswith(caption)]
        assert drawn(svg, marks=len(ORDERS)), svg[:300]
        for order in ORDERS:  # every order on the one chart (its legend names it)
            assert f">{order}<" in svg, (caption, order)

    rows = {r[0]: r for r in table_after(page, "orders")[1:]}
    assert list(rows) == list(ORDERS)  # the bench's order, not the alphabet's
    for row in bench.orders:
        cells = rows[row.order]
        assert cells[1:7] == [f"{row.solved}/{row.pool}", str(row.runs), f"{row.to_last_success_s:g}",
                              f"{row.total_s:g}", f"{row.tokens:,}", f"{row.area:.3f}"], cells
    assert rows["fixed"][1:7] == ["5/7", "9", "86", "103", "1,205", "0.496"]  # worked out by hand in order_state

    warm = table_after(page, "warm-cold")
    by_task = {r[0]: r for r in warm[1:]}
    assert by_task["faster"][1:] == ["first", "0.9", "0.92", "5.00", "3.00", "0.600"]
    assert by_task["never"][5:] == ["never", "never"]
    assert by_task["median"][4:] == ["6.50", "3.50", "0.550"]
    skipped = {r[0]: r[1] for r in page.find(string="Tasks not compared").find_next("table").find_all("tr")[1:]
               for r in [[c.get_text(strip=True) for c in r.find_all("td")]]}
    assert skipped == bench.warm_vs_cold.skipped
    text = page.get_text(" ", strip=True)
    assert "note: the curriculum order ran too" in text and "largest area fixed (0.496)" in text.lower()
    assert notes(page) == []  # every piece drawn


def test_links_reach_each_orders_campaign_page_that_exists(tmp_path: Path) -> None:
    bench_dir, _ = bench_folder(tmp_path, reports=("fixed", "curriculum", COLD))
    page = page_of(bench_dir)
    hrefs = [a["href"] for a in page.find_all("a", href=True)]
    assert sorted(hrefs) == sorted(["fixed/report.html", "curriculum/report.html", "curriculum/report.html",
                                    f"{COLD}/report.html"])
    for href in hrefs:
        assert not Path(href).is_absolute() and (bench_dir / href).is_file(), href
    rows = {r[0]: r for r in table_after(page, "orders")[1:]}
    assert rows["random"][-1] == "—" and rows["heuristic"][-1] == "—"  # no campaign page there: no link


def test_a_moved_bench_folder_keeps_its_links(tmp_path: Path) -> None:
    bench_dir, _ = bench_folder(tmp_path / "before")
    moved = bench_dir.rename(tmp_path / BENCH_DIR)  # bench.json still names the old folders
    page = page_of(moved)
    assert {a["href"] for a in page.find_all("a", href=True)} == {"fixed/report.html", "curriculum/report.html"}


def test_without_warm_vs_cold_the_section_says_why(tmp_path: Path) -> None:
    bench_dir, _ = bench_folder(tmp_path, warm=False, orders=("fixed", "random"), reports=())
    page = page_of(bench_dir)
    assert notes(page) == ["not available: the bench ran without it (--no-warm-vs-cold)"]
    figs = figures_of(page)
    assert all(drawn(content, marks=2) for content in figs.values()), figs.keys()


def test_without_bench_json_figure_14_is_recomputed_from_the_campaign_folders(tmp_path: Path) -> None:
    bench_dir, bench = bench_folder(tmp_path, reports=("heuristic",))
    (bench_dir / BENCH_JSON).unlink()
    page = page_of(bench_dir)
    # The cold curriculum run is not an order; the orders keep the order they were run in.
    rows = {r[0]: r for r in table_after(page, "orders")[1:]}
    assert list(rows) == list(ORDERS)
    for row in bench.orders:
        assert rows[row.order][1:7] == [f"{row.solved}/{row.pool}", str(row.runs), f"{row.to_last_success_s:g}",
                                        f"{row.total_s:g}", f"{row.tokens:,}", f"{row.area:.3f}"]
    assert rows["heuristic"][-1] == "campaign report"
    figs = figures_of(page)
    assert all(drawn(content, marks=len(ORDERS)) for content in figs.values()), figs.keys()
    [why] = [n for n in notes(page) if "warm vs cold" in n]
    assert why.startswith(f"not available: there is no {BENCH_JSON} in {bench_dir}") and "kept only in its bench.json" in why
    assert f"Recomputed from the campaign folders' state.json: there is no {BENCH_JSON}" in page.get_text(" ", strip=True)


def test_an_unreadable_bench_json_is_recomputed_and_says_so(tmp_path: Path) -> None:
    bench_dir, _ = bench_folder(tmp_path, orders=("fixed", "curriculum"), reports=())
    (bench_dir / BENCH_JSON).write_text('{"pool": ["a"], "orders": [{"order": "fixed"}]}')
    page = page_of(bench_dir)
    assert [r[0] for r in table_after(page, "orders")[1:]] == ["fixed", "curriculum"]
    [why] = [n for n in notes(page) if "warm vs cold" in n]
    assert "bench.json could not be read: ValidationError" in why


def test_the_output_json_is_read_as_the_bench_wrote_it(tmp_path: Path) -> None:
    bench_dir, bench = bench_folder(tmp_path, orders=("fixed",), reports=())
    (bench_dir / BENCH_JSON).write_text(json.dumps({"campaign": bench.model_dump(mode="json")}))
    context = bench_context(bench_dir)
    assert context["recomputed"] is None and context["bench"] == bench


def test_a_failing_figure_costs_only_its_own_piece(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bench_dir, _ = bench_folder(tmp_path, orders=("fixed", "random"), reports=())

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("the plotting library broke")

    monkeypatch.setattr(campaign_figures, "successes_vs", broken)
    page = page_of(bench_dir)
    assert notes(page) == [f"not available: {caption}, per selection order could not be built: RuntimeError: the plotting library broke"
                           for caption in (FIG14_TIME, FIG14_TOKENS)]
    assert [r[0] for r in table_after(page, "orders")[1:]] == ["fixed", "random"]
    assert table_after(page, "warm-cold")[-1][0] == "median"


def test_a_folder_without_a_bench_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(AgentKError, match="no campaign bench"):
        write_bench_report(tmp_path)
    assert not (tmp_path / REPORT_FILE).exists()


def test_agentk_report_on_a_bench_folder_writes_the_bench_page(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # In-process: `agentk report` starts no run, and a fresh interpreter per call costs ~5 s.
    from typer.testing import CliRunner

    from agentk.cli import app

    bench_dir, _ = bench_folder(tmp_path, orders=("fixed", "random"), reports=())
    monkeypatch.chdir(tmp_path)
    for remove_json in (False, True):  # named campaign-bench and holding campaigns is enough
        if remove_json:
            (bench_dir / BENCH_JSON).unlink()
        (bench_dir / REPORT_FILE).unlink(missing_ok=True)
        proc = CliRunner().invoke(app, ["report", str(bench_dir)])
        assert proc.exit_code == 0, proc.output
        page = bench_dir / REPORT_FILE
        assert str(page) in proc.stdout.replace("\n", "") and "<h1>Campaign bench</h1>" in page.read_text()
        assert ("Recomputed from the campaign folders" in page.read_text()) == remove_json
