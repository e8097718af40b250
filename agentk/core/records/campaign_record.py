"""A campaign's state.json: what is in the pool, what ran, and how each attempt ended; and the
record `agentk bench --campaign` keeps of its campaigns (bench.json: Figure 14 and warm vs cold).

Written by the campaign driver (agentk/campaign/) and the bench (agentk/bench/), read by the
campaign and bench reports (agentk/report/), so the schemas live on the ground floor, once, with
the pure functions both sides compute Figure 14 with.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from agentk.core.records.workspace import read_json_object

STATE_FILE = "state.json"  # in the campaign folder
WORKSPACES_DIR = "workspaces"  # a campaign's task workspaces: <campaign>/workspaces/<task>/
BENCH_DIR = "campaign-bench"  # `agentk bench --campaign` runs each order in <root>/campaign-bench/<order>/
BENCH_JSON = "bench.json"  # the bench's record (CampaignBench) in <root>/campaign-bench/
COLD = "curriculum-cold"  # the bench's cold curriculum run: its folder and label


def seeded_key(family: str, seed: int) -> str:
    """The key of a pool task's run under one seed of `--seeds N`."""
    return f"{family}-seed{seed}"


def seed_workspaces(workspaces: Path, seed: int | None) -> Path:
    """Where a task's workspace lives: seeds of one competition must not share one (a second run
    would resume the first), so each seed has its own root beside `_memory/`."""
    return workspaces if seed is None else workspaces / f"_seed{seed}"


class TaskStatus(StrEnum):
    PENDING = "pending"
    RUNNING = "running"
    SOLVED = "solved"  # set up, solved, a valid submission written
    FAILED = "failed"  # the last attempt failed; still in the pool while attempts remain
    GAVE_UP = "gave_up"  # failed on every attempt the campaign allows
    VANISHED = "vanished"  # its source folder disappeared mid-campaign


# How a pool task was given: a competition folder, or a Kaggle competition.
TaskKind = Literal["folder", "kaggle"]


class TaskAttempt(BaseModel):
    round: int
    started: datetime
    ok: bool | None = None  # None while running
    setup_ok: bool | None = None  # every setup stage and meta check passed (Pass@k counts this)
    error: str | None = None
    validation_score: float | None = None
    test_score: float | None = None
    elapsed_s: float | None = None
    tokens: int = 0
    warm_start_from: list[str] = []


class TaskState(BaseModel):
    key: str
    source: str
    kind: TaskKind
    slug: str | None = None
    workspace: str | None = None  # the run's workspace folder, once known
    complexity: float | None = None
    status: TaskStatus = TaskStatus.PENDING
    attempts: list[TaskAttempt] = []
    note: str | None = None  # why a task left the pool (vanished, unusable)
    # With `--seeds N` each pool task is N tasks, one per seed: `<family>-seed<k>`, k = 1..N, each
    # with its own workspace (Table 4's Pass@k draws on them).
    family: str | None = None
    seed: int | None = None

    @property
    def pool_key(self) -> str:
        """The pool task this one runs: itself, or the task a seed belongs to."""
        return self.family or self.key

    @property
    def last(self) -> TaskAttempt | None:
        return self.attempts[-1] if self.attempts else None


class CampaignState(BaseModel):
    name: str
    created: datetime = Field(default_factory=lambda: datetime.now(UTC))
    specs: list[str] = []  # what the user pointed the campaign at
    options: dict[str, Any] = {}  # CampaignOptions as last run, so a resume and `status` use them
    round: int = 0  # how many tasks were dispatched so far
    elapsed_s: float = 0.0  # wall time spent by drivers, summed over resumes
    tokens: int = 0  # LLM tokens: the runs' and the driver's own (first pick)
    tasks: dict[str, TaskState] = {}  # pool order

    def by_status(self, *statuses: TaskStatus) -> list[TaskState]:
        return [t for t in self.tasks.values() if t.status in statuses]

    @classmethod
    def read(cls, folder: Path) -> CampaignState | None:
        """The state in a campaign folder; None when there is none (yet)."""
        data = read_json_object(Path(folder) / STATE_FILE)
        return cls.model_validate(data) if data else None

    @property
    def order(self) -> str:
        """The selection order the campaign last ran with."""
        return str(self.options.get("order") or "—")


# ---- derived: the campaign's progress on its own clock ------------------------------------------


@dataclass(frozen=True)
class AttemptEnd:
    """One finished run of a campaign, placed on the campaign's clock."""

    task: str
    end_s: float  # seconds since the campaign started
    ok: bool
    tokens: int


def attempt_ends(state: CampaignState) -> list[AttemptEnd]:
    """Every finished attempt (started + elapsed), earliest end first. Attempts still marked running
    (a killed driver's) have no end and are left out."""
    ends = []
    for task in state.tasks.values():
        for attempt in task.attempts:
            if attempt.ok is None or attempt.elapsed_s is None:
                continue
            start = (attempt.started - state.created).total_seconds()
            ends.append(AttemptEnd(task.key, max(0.0, start + attempt.elapsed_s), bool(attempt.ok), attempt.tokens))
    return sorted(ends, key=lambda e: e.end_s)


def success_curves(state: CampaignState) -> tuple[list[tuple[float, int]], list[tuple[int, int]]]:
    """Tasks solved against the campaign's wall time and against its LLM tokens. A task counts once,
    at its first successful run."""
    ends = attempt_ends(state)
    driver_tokens = max(0, state.tokens - sum(e.tokens for e in ends))  # the LLM's first pick
    by_time: list[tuple[float, int]] = [(0.0, 0)]
    by_tokens: list[tuple[int, int]] = [(driver_tokens, 0)]
    solved: set[str] = set()
    tokens = driver_tokens
    for end in ends:
        if end.ok:
            solved.add(end.task)
        tokens += end.tokens
        by_time.append((round(end.end_s, 1), len(solved)))
        by_tokens.append((tokens, len(solved)))
    return by_time, by_tokens


# ---- `agentk bench --campaign`: Figure 14 and warm vs cold --------------------------------------


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


class CampaignBench(BaseModel):
    """What `agentk bench --campaign` writes to <root>/campaign-bench/bench.json (and under the
    --output JSON's "campaign" key)."""

    pool: list[str]
    folders: dict[str, str]  # label → campaign folder
    orders: list[OrderRow]
    warm_vs_cold: WarmCold | None = None
    notes: list[str] = []
