"""`agentk bench --campaign`: the axes of Agent K's Figure 14 (tasks set up and solved against wall
time and against LLM tokens, for the fixed, random, heuristic and curriculum orders), and the warm
vs cold solver starts of #14.

Each order runs a fresh campaign over the same pool in `<workspace_root>/campaign-bench/<order>/`;
with warm vs cold the curriculum order runs again without warm starts in `curriculum-cold/`, and the
curriculum run is the warm one. Campaigns run in this process through `run_campaign_command`: its
tasks are already `agentk run` subprocesses, and in-process the bench gets the `CampaignState` back
and the campaign's one-line errors as `AgentKError`, with no second CLI to parse.

Everything below the runner is a pure function of `CampaignState`s and the solve records in their
workspaces, so the tables can be recomputed from campaign folders and tested without running one.
The bench keeps its record (`CampaignBench`) in `campaign-bench/bench.json`, and its page
(agentk/report/bench_report.py) is drawn from it beside it.
"""

from __future__ import annotations

import math
import shutil
import statistics
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from rich.table import Table

from agentk.campaign.command import run_campaign_command
from agentk.campaign.state import CampaignState, TaskStatus
from agentk.core.records.campaign_record import BENCH_DIR, BENCH_JSON, COLD, CampaignBench, WarmCold, WarmColdPair, figure14
from agentk.core.errors import AgentKError
from agentk.core.records.results import SolveResult, time_to_reach
from agentk.core.records.workspace import atomic_write_json
from agentk.report.bench_report import write_bench_report
from curriculum.selection import Order

MAX_ATTEMPTS = 2
# The solver's timeline keeps milliseconds: a cold time below that is a tie at the resolution.
TIME_RESOLUTION_S = 0.001


def parse_orders(text: str | None) -> tuple[Order, ...]:
    """`fixed,random,heuristic,curriculum` (the default: all four), or a subset; any other name is
    a one-line error."""
    if text is None:
        return tuple(Order)
    names = [n.strip().lower() for n in text.split(",") if n.strip()]
    known = {o.value for o in Order}
    unknown = [n for n in names if n not in known]
    if unknown or not names:
        raise AgentKError(f"--orders takes a comma-separated list of {', '.join(known)}; not {text!r}")
    return tuple(o for o in Order if o.value in names)


# ---------------------------------------------------------------- warm vs cold


def warm_vs_cold(warm: CampaignState, cold: CampaignState) -> WarmCold:
    """Per task solved in both campaigns whose warm solve really started warm (its solve record
    names sources): the cold solve's final validation score, when each solve first reached it, and
    the ratio; then the medians. Each solve is the task's last, as its workspace holds it."""
    result = WarmCold()
    for key, warm_task in warm.tasks.items():
        cold_task = cold.tasks.get(key)
        why = _unpaired(warm_task.status, cold_task.status if cold_task else None)
        if why:
            result.skipped[key] = why
            continue
        assert cold_task is not None
        warm_solve, cold_solve = _solve(warm_task.workspace), _solve(cold_task.workspace)
        sources = list((warm_solve.warm_start or {}).get("sources") or [])
        if not sources:
            result.skipped[key] = "no warm start (no solved neighbour when it ran)"
            continue
        higher = cold_solve.higher_is_better
        if higher is None or not cold_solve.timeline:
            result.skipped[key] = "the cold solve recorded no timeline or direction"
            continue
        if warm_solve.higher_is_better != higher or warm_solve.metric != cold_solve.metric:
            result.skipped[key] = "the warm and cold solves ranked by different scores"
            continue
        target = cold_solve.timeline[-1][1]
        cold_time = time_to_reach(cold_solve.timeline, target, higher)
        assert cold_time is not None  # a best-so-far timeline reaches its own last point
        warm_time = time_to_reach(warm_solve.timeline, target, higher)
        ratio = None if warm_time is None else warm_time / max(cold_time, TIME_RESOLUTION_S)
        result.pairs.append(WarmColdPair(
            task=key, warm_sources=sources, higher_is_better=higher, cold_score=target,
            warm_score=warm_solve.timeline[-1][1] if warm_solve.timeline else None,
            cold_time_s=cold_time, warm_time_s=warm_time, ratio=ratio))
    pairs = result.pairs
    result.never_reached = sum(p.warm_time_s is None for p in pairs)
    result.median_cold_s = _median([p.cold_time_s for p in pairs])
    result.median_warm_s = _median([p.warm_time_s for p in pairs])
    result.median_ratio = _median([p.ratio for p in pairs])
    return result


def _unpaired(warm: TaskStatus, cold: TaskStatus | None) -> str | None:
    if cold is None:
        return "not in the cold campaign's pool"
    missing = [name for name, status in (("warm", warm), ("cold", cold)) if status != TaskStatus.SOLVED]
    return f"not solved in the {' and '.join(missing)} run" if missing else None


def _solve(workspace: str | None) -> SolveResult:
    return SolveResult.read(Path(workspace) / "solve") if workspace else SolveResult()


def _median(values: Iterable[float | None]) -> float | None:
    """The median with None as +inf ("never"); None when that median is never."""
    numbers = [math.inf if v is None else v for v in values]
    if not numbers:
        return None
    median = statistics.median(numbers)
    return None if math.isinf(median) else median


# ---------------------------------------------------------------- running


def run_campaign_bench(specs: list[str], run_config: dict[str, Any], orders: Sequence[Order],
                       warm_vs_cold_too: bool, workspace_root: Path) -> CampaignBench:
    """A fresh campaign per order over the same pool (the previous bench's folder for that order is
    removed first: a resumed campaign's clock would span both), then the cold curriculum run."""
    labels: dict[str, tuple[Order, bool]] = {o.value: (o, True) for o in orders}
    notes = []
    if warm_vs_cold_too:
        if Order.CURRICULUM.value not in labels:
            labels[Order.CURRICULUM.value] = (Order.CURRICULUM, True)
            notes.append("the curriculum order ran too: it is the warm run of warm vs cold")
        labels[COLD] = (Order.CURRICULUM, False)
    root = Path(workspace_root).resolve() / BENCH_DIR
    states: dict[str, CampaignState] = {}
    for label, (order, warm) in labels.items():
        folder = root / label
        if folder.exists():
            shutil.rmtree(folder)
        states[label] = run_campaign_command(
            list(specs), name=f"bench-{label}", campaign_dir=folder, run_config=dict(run_config),
            given={"order": order.value, "max_attempts": MAX_ATTEMPTS, "warm_start": warm})
    if not any(state.tokens for state in states.values()):
        notes.append("LLM tokens are 0: no LLM was called (the expert policy)")
    first = next(iter(states.values()))
    bench = CampaignBench(
        pool=list(first.tasks), folders={label: str(root / label) for label in states},
        orders=figure14({k: v for k, v in states.items() if k != COLD}),
        warm_vs_cold=warm_vs_cold(states[Order.CURRICULUM.value], states[COLD]) if warm_vs_cold_too else None,
        notes=notes)
    atomic_write_json(root / BENCH_JSON, bench.model_dump(mode="json"))
    return bench


def write_bench_page(workspace_root: Path) -> tuple[Path | None, str | None]:
    """The bench's page beside bench.json: (its path, None), or (None, why) when it could not be
    written. A page is a view of the bench, so it never fails it."""
    try:
        return write_bench_report(Path(workspace_root).resolve() / BENCH_DIR), None
    except Exception as exc:  # noqa: BLE001 - reported as a warning, the bench's tables and JSON stand
        return None, f"the bench page could not be written: {type(exc).__name__}: {exc}"


# ---------------------------------------------------------------- tables


def render_figure14(bench: CampaignBench) -> Table:
    # The notes (bench.notes) are the caller's to print: as a caption they would wrap to the table's width.
    table = Table(title="agentk bench --campaign: tasks solved vs wall time and LLM tokens (Agent K, Figure 14)")
    for column in ("order", "solved / pool", "runs", "to last success (s)", "total (s)", "LLM tokens", "area (time)"):
        table.add_column(column, no_wrap=column == "order")
    for row in bench.orders:
        table.add_row(row.order, f"{row.solved}/{row.pool}", str(row.runs), _fmt(row.to_last_success_s, 1),
                      _fmt(row.total_s, 1), str(row.tokens), _fmt(row.area, 3))
    return table


def render_warm_cold(result: WarmCold) -> Table:
    never = f", {result.never_reached} warm never reached it" if result.never_reached else ""
    table = Table(title="agentk bench --campaign: warm vs cold solver starts (time to the cold run's final validation score)",
                  caption=f"{len(result.pairs)} task(s) compared{never}; medians count 'never' as slowest")
    for column in ("task", "warm from", "cold score", "warm score", "cold time (s)", "warm time (s)", "warm / cold"):
        table.add_column(column, no_wrap=column == "task")
    for pair in result.pairs:
        table.add_row(pair.task, ", ".join(pair.warm_sources), _fmt(pair.cold_score), _fmt(pair.warm_score),
                      _fmt(pair.cold_time_s, 2), _fmt(pair.warm_time_s, 2) if pair.warm_time_s is not None else "never",
                      _fmt(pair.ratio, 3) if pair.ratio is not None else "never")
    for task, why in result.skipped.items():
        table.add_row(f"[dim]{task}[/]", f"[dim]skipped: {why}[/]", "", "", "", "", "")
    table.add_section()
    table.add_row("median", "", "", "", _fmt(result.median_cold_s, 2), _median_cell(result.median_warm_s, result),
                  _median_cell(result.median_ratio, result, 3))
    return table


def _median_cell(value: float | None, result: WarmCold, digits: int = 2) -> str:
    if value is None:
        return "never" if result.pairs else "—"
    return _fmt(value, digits)


def _fmt(value: object, digits: int = 4) -> str:
    return f"{value:.{digits}f}" if isinstance(value, (int, float)) else "—"
