"""A campaign's folder and its state: what is in the pool, what ran, what is next.

Layout of `<campaign>/`:
    state.json        CampaignState, rewritten atomically after every decision and every outcome
    decisions.jsonl   one line per choice: the order, the chosen task and every candidate's terms
    tasks/<key>.json  the task's text as the curriculum reads it (description, tree description)
    configs/<key>.json  the RunConfig a task's run started from (warm start included)
    logs/<key>.log    the run's own console output
    workspaces/       one agentk workspace per task, and `_memory/` (experience and task memories);
                      with `--seeds N`, seed k's workspaces in `workspaces/_seed<k>/`

A killed driver leaves tasks marked running; the next driver runs them again and the run's own
resume (state.json in its workspace) carries on where it stopped.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agentk.core.records.campaign_record import STATE_FILE, WORKSPACES_DIR, CampaignState, TaskAttempt, TaskState, TaskStatus
from agentk.core.records.workspace import atomic_write_json, json_lines

__all__ = ["CampaignFolder", "CampaignState", "TaskAttempt", "TaskState", "TaskStatus"]


class CampaignFolder:
    """Paths of one campaign, and its state's reading and writing."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    @property
    def state_path(self) -> Path:
        return self.root / STATE_FILE

    @property
    def decisions_path(self) -> Path:
        return self.root / "decisions.jsonl"

    @property
    def workspaces(self) -> Path:
        return self.root / WORKSPACES_DIR

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
        for sub in ("tasks", "configs", "logs", WORKSPACES_DIR):
            (self.root / sub).mkdir(parents=True, exist_ok=True)

    def exists(self) -> bool:
        return self.state_path.is_file()

    def load(self) -> CampaignState | None:
        return CampaignState.read(self.root)

    def save(self, state: CampaignState) -> None:
        atomic_write_json(self.state_path, json.loads(state.model_dump_json()))

    def log_decision(self, record: dict[str, Any]) -> None:
        """Append one decision; a line torn by a kill is skipped by `decisions()`."""
        self.decisions_path.parent.mkdir(parents=True, exist_ok=True)
        with self.decisions_path.open("a", encoding="utf-8") as out:
            out.write(json.dumps(record, default=str) + "\n")

    def decisions(self) -> list[dict[str, Any]]:
        return list(json_lines(self.decisions_path))
