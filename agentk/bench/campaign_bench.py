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
"""

from __future__ import annotations

import math
import shutil
import statistics
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from rich.table import Table

from agentk.campaign.command import run_campaign_command
from agentk.campaign.state import CampaignState, TaskStatus
from agentk.core.campaign_record import BENCH_DIR, success_curves
from agentk.core.artifacts import SolveResult, time_to_reach
from agentk.core.errors import AgentKError
from curriculum.selection import Order

COLD = "curriculum-cold"  # the cold curriculum run's folder and label
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


# ---------------------------------------------------------------- Figure 14


class OrderRow(BaseModel):
    """One order's row of the Figure 14 table, with both curves as points for plotting."""

    order: str
    pool: int
    solved: int
    runs: int
    to_last_success_s: float | None
    total_s: float
    tokens: int
    # (seconds since the campaign started, tasks solved so far), a point at the start and at every run's end
    successes_vs_time: list[tuple[float, int]]
    # (LLM tokens spent so far, tasks solved so far), likewise; the first point holds the driver's own tokens
    successes_vs_tokens: list[tuple[int, int]]
    # The area under successes-vs-time over the common horizon, divided by pool × horizon: 1 would
    # be every task solved at once, 0 none solved.
    area: float | None = None
    horizon_s: float | None = None


def success_area(curve: Sequence[tuple[float, int]], pool: int, horizon_s: float) -> float | None:
    """The area under the step curve successes(t) from 0 to `horizon_s`, each value holding until the
    next point and the last until the horizon, over pool × horizon. None when undefined (an empty
    pool or a zero horizon)."""
    if pool <= 0 or horizon_s <= 0:
        return None
    points = sorted(curve)
    area = 0.0
    for (t, solved), (t_next, _) in zip(points, [*points[1:], (horizon_s, 0)]):
        start, stop = min(t, horizon_s), min(max(t_next, t), horizon_s)
        area += solved * (stop - start)
    return area / (pool * horizon_s)


def figure14_row(order: str, state: CampaignState, horizon_s: float | None = None) -> OrderRow:
    """One order's row; the area over `horizon_s` (default: this campaign's own total time)."""
    by_time, by_tokens = success_curves(state)
    successes = [t for (t, after), (_, before) in zip(by_time[1:], by_time) if after > before]
    total = max(state.elapsed_s, by_time[-1][0])
    horizon = horizon_s if horizon_s is not None else total
    return OrderRow(
        order=order, pool=len(state.tasks), solved=len(state.by_status(TaskStatus.SOLVED)),
        runs=sum(len(t.attempts) for t in state.tasks.values()),
        to_last_success_s=successes[-1] if successes else None, total_s=round(total, 1), tokens=state.tokens,
        successes_vs_time=by_time, successes_vs_tokens=by_tokens,
        area=success_area(by_time, len(state.tasks), horizon), horizon_s=round(horizon, 1),
    )


def figure14(states: dict[str, CampaignState]) -> list[OrderRow]:
    """One row per order. The areas share one horizon, the longest campaign's total time (a
    campaign that ended earlier keeps its count after its end), so one number compares orders."""
    rows = [figure14_row(order, state) for order, state in states.items()]
    horizon = max((r.total_s for r in rows), default=0.0)
    return [figure14_row(order, state, horizon) for order, state in states.items()]


# ---------------------------------------------------------------- warm vs cold


class WarmColdPair(BaseModel):
    task: str
    warm_sources: list[str]
    higher_is_better: bool
    cold_score: float  # the cold solve's final validation score (its timeline's last point)
    warm_score: float | None
    cold_time_s: float  # when the cold solve first reached its final score
    warm_time_s: float | None  # when the warm solve first reached it; None: never
    ratio: float | None  # warm / cold time: < 1 means the warm start got there sooner; None: never


class WarmCold(BaseModel):
    pairs: list[WarmColdPair] = []
    skipped: dict[str, str] = {}  # task → why it is not compared
    # Medians over the pairs, a warm run that never got there counted as slower than any that did;
    # None when more than half never did (or there are no pairs).
    median_cold_s: float | None = None
    median_warm_s: float | None = None
    median_ratio: float | None = None
    never_reached: int = 0


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


class CampaignBench(BaseModel):
    """What `agentk bench --campaign` writes under the JSON's "campaign" key."""

    pool: list[str]
    folders: dict[str, str]  # label → campaign folder
    orders: list[OrderRow]
    warm_vs_cold: WarmCold | None = None
    notes: list[str] = []


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
    return CampaignBench(
        pool=list(first.tasks), folders={label: str(root / label) for label in states},
        orders=figure14({k: v for k, v in states.items() if k != COLD}),
        warm_vs_cold=warm_vs_cold(states[Order.CURRICULUM.value], states[COLD]) if warm_vs_cold_too else None,
        notes=notes)


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
