"""A campaign's folder and its state: what is in the pool, what ran, what is next.

Layout of `<campaign>/`:
    state.json        CampaignState, rewritten atomically after every decision and every outcome
    decisions.jsonl   one line per choice: the order, the chosen task and every candidate's terms
    tasks/<key>.json  the task's text as the curriculum reads it (description, tree description)
    configs/<key>.json  the RunConfig a task's run started from (warm start included)
    logs/<key>.log    the run's own console output
    workspaces/       one agentk workspace per task, and `_memory/` (experience and task memories)

A killed driver leaves tasks marked running; the next driver runs them again and the run's own
resume (state.json in its workspace) carries on where it stopped.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from agentk.core.workspace import atomic_write_json, read_json_object


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


class CampaignFolder:
    """Paths of one campaign, and its state's reading and writing."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    @property
    def state_path(self) -> Path:
        return self.root / "state.json"

    @property
    def decisions_path(self) -> Path:
        return self.root / "decisions.jsonl"

    @property
    def workspaces(self) -> Path:
        return self.root / "workspaces"

    @property
    def memory_dir(self) -> Path:
        return self.workspaces / "_memory"

    @property
    def task_memory_path(self) -> Path:
        return self.memory_dir / "tasks.lance"

    def task_text_path(self, key: str) -> Path:
        return self.root / "tasks" / f"{key}.json"

    def config_path(self, key: str) -> Path:
        return self.root / "configs" / f"{key}.json"

    def log_path(self, key: str) -> Path:
        return self.root / "logs" / f"{key}.log"

    def create(self) -> None:
        for sub in ("tasks", "configs", "logs", "workspaces"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)

    def exists(self) -> bool:
        return self.state_path.is_file()

    def load(self) -> CampaignState | None:
        data = read_json_object(self.state_path)
        return CampaignState.model_validate(data) if data else None

    def save(self, state: CampaignState) -> None:
        atomic_write_json(self.state_path, json.loads(state.model_dump_json()))

    def log_decision(self, record: dict[str, Any]) -> None:
        """Append one decision; a line torn by a kill is skipped by `decisions()`."""
        self.decisions_path.parent.mkdir(parents=True, exist_ok=True)
        with self.decisions_path.open("a", encoding="utf-8") as out:
            out.write(json.dumps(record, default=str) + "\n")

    def decisions(self) -> list[dict[str, Any]]:
        if not self.decisions_path.is_file():
            return []
        found = []
        for line in self.decisions_path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if isinstance(record, dict):
                found.append(record)
        return found
