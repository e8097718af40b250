"""A campaign's state.json: what is in the pool, what ran, and how each attempt ended.

Written by the campaign driver (agentk/campaign/) and read by the campaign report (agentk/report/),
so the schema lives on the ground floor, once.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from agentk.core.workspace import read_json_object

STATE_FILE = "state.json"  # in the campaign folder
WORKSPACES_DIR = "workspaces"  # a campaign's task workspaces: <campaign>/workspaces/<task>/
BENCH_DIR = "campaign-bench"  # `agentk bench --campaign` runs each order in <root>/campaign-bench/<order>/


class TaskStatus(StrEnum):
    PENDING = "pending"
    RUNNING = "running"
    SOLVED = "solved"  # set up, solved, a valid submission written
    FAILED = "failed"  # the last attempt failed; still in the pool while attempts remain
    GAVE_UP = "gave_up"  # failed on every attempt the campaign allows
    VANISHED = "vanished"  # its source folder disappeared mid-campaign


class Attempt(BaseModel):
    round: int
    started: datetime
    ok: bool | None = None  # None while running
    error: str | None = None
    validation_score: float | None = None
    test_score: float | None = None
    elapsed_s: float | None = None
    tokens: int = 0
    warm_start_from: list[str] = []


class TaskState(BaseModel):
    key: str
    source: str
    kind: str  # folder | kaggle
    slug: str | None = None
    workspace: str | None = None  # the run's workspace folder, once known
    complexity: float | None = None
    status: TaskStatus = TaskStatus.PENDING
    attempts: list[Attempt] = []
    note: str | None = None  # why a task left the pool (vanished, unusable)

    @property
    def last_failed_round(self) -> int | None:
        failed = [a.round for a in self.attempts if a.ok is False]
        return max(failed) if failed else None

    @property
    def last(self) -> Attempt | None:
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
