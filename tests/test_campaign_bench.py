"""`agentk bench --campaign`: the Figure 14 aggregation and warm vs cold on real campaign states and
real solve records written into workspaces (no runs), and one tiny real campaign bench through the CLI."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from rich.console import Console

from agentk.bench.campaign_bench import parse_orders, render_figure14, render_warm_cold, warm_vs_cold
from agentk.core.records.campaign_record import BENCH_JSON, CampaignBench, figure14, figure14_row, success_area, success_curves
from agentk.campaign.state import CampaignFolder, CampaignState, TaskAttempt, TaskState, TaskStatus
from agentk.core.errors import AgentKError
from agentk.core.records.results import SolveResult
from agentk.core.records.workspace import atomic_write_json
from agentk.sources.demo import make_demo_competition
from curriculum.selection import Order

T0 = datetime(2025, 1, 1, tzinfo=UTC)


def attempt(round: int, start_s: float, elapsed_s: float, ok: bool, tokens: int = 0,
            warm_from: tuple[str, ...] = ()) -> TaskAttempt:
    return TaskAttempt(round=round, started=T0 + timedelta(seconds=start_s), ok=ok, elapsed_s=elapsed_s,
                   tokens=tokens, warm_start_from=list(warm_from))


def saved(state: CampaignState, root: Path) -> CampaignState:
    """The state as a campaign folder holds it: written to state.json and read back."""
    folder = CampaignFolder(root)
    folder.create()
    folder.save(state)
    loaded = folder.load()
    assert loaded is not None
    return loaded


def three_task_state(root: Path) -> CampaignState:
    """a solved at 15 s; b failed at 20 s then solved at 30 s; c gave up at 38 s; the driver ran 40 s."""
    tasks = {
        "a": TaskState(key="a", source="/a", kind="folder", status=TaskStatus.SOLVED, attempts=[attempt(1, 5, 10, True, 100)]),
        "b": TaskState(key="b", source="/b", kind="folder", status=TaskStatus.SOLVED,
                       attempts=[attempt(2, 16, 4, False, 50), attempt(3, 21, 9, True, 70)]),
        "c": TaskState(key="c", source="/c", kind="folder", status=TaskStatus.GAVE_UP,
                       attempts=[attempt(4, 31, 3, False), attempt(5, 35, 3, False)]),
    }
    return saved(CampaignState(name="x", created=T0, elapsed_s=40.0, round=5, tokens=20 + 220, tasks=tasks), root)


# ---------------------------------------------------------------- Figure 14


def test_area_of_a_known_step_curve() -> None:
    curve = [(0.0, 0), (10.0, 1), (30.0, 2)]
    assert success_area(curve, pool=2, horizon_s=40) == pytest.approx((1 * 20 + 2 * 10) / (2 * 40))
    # A horizon before the last point cuts the curve there.
    assert success_area(curve, pool=2, horizon_s=20) == pytest.approx(1 * 10 / (2 * 20))
    assert success_area([(0.0, 0)], pool=3, horizon_s=10) == 0.0
    assert success_area([(0.0, 1)], pool=1, horizon_s=10) == 1.0
    assert success_area(curve, pool=0, horizon_s=40) is None
    assert success_area(curve, pool=2, horizon_s=0) is None


def test_an_orders_row_counts_solved_runs_times_and_tokens(tmp_path: Path) -> None:
    row = figure14_row("fixed", three_task_state(tmp_path))
    assert (row.order, row.solved, row.pool, row.runs) == ("fixed", 2, 3, 5)
    assert row.to_last_success_s == 30.0
    assert row.total_s == 40.0
    assert row.tokens == 240
    # A task counts once, at its first success; failures add points that keep the count.
    assert row.successes_vs_time == [(0.0, 0), (15.0, 1), (20.0, 1), (30.0, 2), (34.0, 2), (38.0, 2)]
    # The driver's own 20 tokens (the LLM's first pick) come before any run.
    assert row.successes_vs_tokens == [(20, 0), (120, 1), (170, 1), (240, 2), (240, 2), (240, 2)]
    assert row.area == pytest.approx((1 * 15 + 2 * 10) / (3 * 40))


def test_orders_share_the_longest_campaigns_horizon(tmp_path: Path) -> None:
    slow = three_task_state(tmp_path / "slow").model_copy(update={"elapsed_s": 80.0})
    fast = three_task_state(tmp_path / "fast")
    rows = {r.order: r for r in figure14({"random": slow, "fixed": fast})}
    assert rows["fixed"].horizon_s == rows["random"].horizon_s == 80.0
    # The same curve: the faster campaign keeps its two successes after it ended.
    assert rows["fixed"].area == rows["random"].area == pytest.approx((1 * 15 + 2 * 50) / (3 * 80))
    assert rows["fixed"].total_s == 40.0


def test_running_attempts_and_an_empty_campaign_have_no_points(tmp_path: Path) -> None:
    running = TaskState(key="r", source="/r", kind="folder", status=TaskStatus.RUNNING,
                        attempts=[TaskAttempt(round=1, started=T0)])
    state = saved(CampaignState(name="x", created=T0, elapsed_s=12.0, tasks={"r": running}), tmp_path)
    by_time, by_tokens = success_curves(state)
    assert (by_time, by_tokens) == ([(0.0, 0)], [(0, 0)])
    row = figure14_row("heuristic", state)
    assert (row.solved, row.runs, row.to_last_success_s, row.area) == (0, 1, None, 0.0)


def test_orders_parse_to_a_subset_in_the_papers_order() -> None:
    assert parse_orders(None) == tuple(Order)
    assert parse_orders("curriculum, fixed") == (Order.FIXED, Order.CURRICULUM)
    with pytest.raises(AgentKError, match="--orders"):
        parse_orders("fixed,alphabetical")
    with pytest.raises(AgentKError):
        parse_orders(" , ")


# ---------------------------------------------------------------- warm vs cold


def solved_task(root: Path, key: str, timeline: list[tuple[float, float]], higher: bool = True,
                sources: list[str] | None = None, status: TaskStatus = TaskStatus.SOLVED) -> TaskState:
    """A task whose workspace holds a real solve_result.json with this timeline."""
    workspace = root / key
    (workspace / "solve").mkdir(parents=True)
    warm = {"sources": sources, "used": {}, "ignored": {}, "race_order": [], "tuning": None} if sources is not None else None
    record = SolveResult(validation_score=timeline[-1][1] if timeline else None, higher_is_better=higher,
                         metric="setup", timeline=timeline, warm_start=warm)
    atomic_write_json(SolveResult.path_in(workspace / "solve"), json.loads(json.dumps(record.to_json())))
    return TaskState(key=key, source=f"/{key}", kind="folder", workspace=str(workspace), status=status,
                     attempts=[attempt(1, 0, 10, status == TaskStatus.SOLVED, warm_from=tuple(sources or ()))])


def warm_and_cold(tmp_path: Path) -> tuple[CampaignState, CampaignState]:
    warm_root, cold_root = tmp_path / "warm", tmp_path / "cold"
    warm = [
        solved_task(warm_root, "faster", [(1.0, 0.85), (3.0, 0.92)], sources=["first"]),  # 0.9 at 3 s vs 5 s
        solved_task(warm_root, "never", [(2.0, 0.9), (6.0, 0.93)], sources=["first"]),  # never 0.95
        solved_task(warm_root, "much-faster", [(2.0, 0.7)], sources=["first", "faster"]),  # 2 s vs 10 s
        solved_task(warm_root, "loss", [(4.0, 0.3)], higher=False, sources=["first"]),  # 4 s vs 8 s
        solved_task(warm_root, "first", [(1.0, 0.5)], sources=[]),  # nothing solved before it
        solved_task(warm_root, "cold-failed", [(1.0, 0.5)], sources=["first"]),
        solved_task(warm_root, "surrogate", [(1.0, 0.5)], higher=False, sources=["first"]),
    ]
    cold = [
        solved_task(cold_root, "faster", [(2.0, 0.8), (5.0, 0.9)]),
        solved_task(cold_root, "never", [(4.0, 0.95)]),
        solved_task(cold_root, "much-faster", [(10.0, 0.7)]),
        solved_task(cold_root, "loss", [(3.0, 0.5), (8.0, 0.3)], higher=False),
        solved_task(cold_root, "first", [(1.0, 0.5)]),
        solved_task(cold_root, "cold-failed", [], status=TaskStatus.GAVE_UP),
        solved_task(cold_root, "surrogate", [(1.0, 0.5)], higher=True),
    ]
    return (saved(CampaignState(name="w", tasks={t.key: t for t in warm}), warm_root),
            saved(CampaignState(name="c", tasks={t.key: t for t in cold}), cold_root))


def test_warm_vs_cold_times_to_the_cold_final_score_and_their_median_ratio(tmp_path: Path) -> None:
    result = warm_vs_cold(*warm_and_cold(tmp_path))
    pairs = {p.task: p for p in result.pairs}
    assert list(pairs) == ["faster", "never", "much-faster", "loss"]
    assert (pairs["faster"].cold_score, pairs["faster"].cold_time_s, pairs["faster"].warm_time_s) == (0.9, 5.0, 3.0)
    assert pairs["faster"].ratio == pytest.approx(0.6)
    assert pairs["faster"].warm_sources == ["first"]
    assert (pairs["never"].warm_time_s, pairs["never"].ratio, pairs["never"].warm_score) == (None, None, 0.93)
    assert pairs["much-faster"].ratio == pytest.approx(0.2)
    assert (pairs["loss"].cold_time_s, pairs["loss"].warm_time_s, pairs["loss"].ratio) == (8.0, 4.0, 0.5)
    assert result.skipped == {
        "first": "no warm start (no solved neighbour when it ran)",
        "cold-failed": "not solved in the cold run",
        "surrogate": "the warm and cold solves ranked by different scores",
    }
    # Never counts as slowest: ratios 0.2, 0.5, 0.6, never → median (0.5 + 0.6) / 2.
    assert result.never_reached == 1
    assert result.median_ratio == pytest.approx(0.55)
    assert result.median_cold_s == pytest.approx(6.5)  # 4, 5, 8, 10
    assert result.median_warm_s == pytest.approx(3.5)  # 2, 3, 4, never


def test_the_median_is_never_when_most_warm_runs_never_get_there(tmp_path: Path) -> None:
    warm = [solved_task(tmp_path / "w", k, [(1.0, 0.1)], sources=["s"]) for k in ("a", "b", "c")]
    cold = [solved_task(tmp_path / "c", k, [(1.0, 0.9)]) for k in ("a", "b")] + [solved_task(tmp_path / "c", "c", [(5.0, 0.1)])]
    result = warm_vs_cold(CampaignState(name="w", tasks={t.key: t for t in warm}),
                          CampaignState(name="c", tasks={t.key: t for t in cold}))
    assert [p.ratio for p in result.pairs] == [None, None, pytest.approx(0.2)]
    assert (result.median_ratio, result.median_warm_s, result.never_reached) == (None, None, 2)
    assert result.median_cold_s == 1.0
    empty = warm_vs_cold(CampaignState(name="w"), CampaignState(name="c"))
    assert (empty.pairs, empty.median_ratio, empty.median_cold_s) == ([], None, None)


def test_the_tables_show_the_numbers(tmp_path: Path) -> None:
    warm, cold = warm_and_cold(tmp_path)
    bench = CampaignBench(pool=list(warm.tasks), folders={}, orders=figure14({"fixed": three_task_state(tmp_path / "f")}),
                          warm_vs_cold=warm_vs_cold(warm, cold), notes=["LLM tokens are 0: no LLM was called"])
    out = Console(file=io.StringIO(), width=220)
    out.print(render_figure14(bench))
    out.print(render_warm_cold(bench.warm_vs_cold))
    text = out.file.getvalue()
    assert "fixed" in text and "2/3" in text and "0.292" in text
    assert "0.550" in text and "never" in text and "skipped: not solved in the cold run" in text


# ---------------------------------------------------------------- the command


@pytest.mark.integration
def test_bench_campaign_runs_a_fresh_campaign_and_writes_the_tables(tmp_path: Path) -> None:
    source = make_demo_competition(tmp_path / "demo")
    workspaces = tmp_path / "ws"
    # A previous bench's campaign in the same folder: the bench starts afresh, it does not resume it.
    stale = CampaignState(name="bench-fixed", tasks={"old": TaskState(key="old", source="/gone", kind="folder")})
    saved(stale, workspaces / "campaign-bench" / "fixed")
    out_json = tmp_path / "bench.json"
    proc = subprocess.run(
        [sys.executable, "-m", "agentk.cli", "bench", "--campaign", "--orders", "fixed", "--no-warm-vs-cold", str(source),
         "-w", str(workspaces), "--time-budget", "3", "--folds", "2", "-o", str(out_json)],
        capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "Figure 14" in proc.stdout and "warm vs cold" not in proc.stdout
    assert "note: LLM tokens are 0: no LLM was called (the expert policy)" in proc.stdout
    [line] = [line for line in proc.stdout.splitlines() if "│ fixed" in line]
    assert "1/1" in line
    data = json.loads(out_json.read_text())["campaign"]
    assert data["warm_vs_cold"] is None
    assert list(data["folders"]) == ["fixed"] and data["pool"] != ["old"] and len(data["pool"]) == 1
    [row] = data["orders"]
    assert (row["order"], row["solved"], row["pool"], row["runs"], row["tokens"]) == ("fixed", 1, 1, 1, 0)
    assert row["successes_vs_time"][0] == [0.0, 0] and row["successes_vs_time"][-1][1] == 1
    assert row["successes_vs_tokens"] == [[0, 0], [0, 1]]
    assert 0 < row["area"] < 1 and row["to_last_success_s"] <= row["total_s"]
    state = CampaignFolder(Path(data["folders"]["fixed"])).load()
    assert state is not None and list(state.tasks) == data["pool"]
    # The bench keeps its record beside the campaigns, and draws its page from it.
    bench_dir = workspaces / "campaign-bench"
    assert CampaignBench.model_validate_json((bench_dir / BENCH_JSON).read_text()) == CampaignBench.model_validate(data)
    page = bench_dir / "report.html"
    assert f"report: {page.resolve()}" in proc.stdout.replace("\n", "")
    html = page.read_text()
    assert "<h1>Campaign bench</h1>" in html and html.count("<svg") == 1  # Figure 14 against time; no tokens spent
    assert "not available: the bench ran without it (--no-warm-vs-cold)" in html


def test_campaign_bench_refuses_rivals_seeds_and_unknown_orders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # In-process: a refusal starts no run, and a fresh interpreter per line would cost ~5 s each.
    from typer.testing import CliRunner

    from agentk.cli import app

    monkeypatch.chdir(tmp_path)
    for extra in (["--rivals", "lightgbm"], ["--seeds", "2"], ["--orders", "alphabetical"]):
        result = CliRunner().invoke(app, ["bench", "--campaign", *extra, "-w", str(tmp_path / "ws")])
        assert result.exit_code == 2, result.output
        assert len(result.stderr.strip().splitlines()) == 1 and "error:" in result.stderr
    assert not (tmp_path / "ws" / "campaign-bench").exists()
