"""A campaign's state.json: what is in the pool, what ran, and how each attempt ended.

Written by the campaign driver (agentk/campaign/) and read by the campaign report (agentk/report/),
so the schema lives on the ground floor, once.
"""

from __future__ import annotations

from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from agentk.core.workspace import read_json_object

STATE_FILE = "state.json"  # in the campaign folder


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
