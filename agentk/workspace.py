"""A competition's workspace: its folders, and state written atomically so a killed run resumes."""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field


def atomic_write_text(path: Path, text: str) -> None:
    """Write via a temp file in the same folder and rename, so readers never see half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read_json_object(path: Path) -> dict[str, Any]:
    """A JSON object from a file the agent wrote; {} when it is missing or not an object."""
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def atomic_write_json(path: Path, data: Any) -> None:
    atomic_write_text(path, json.dumps(data, indent=2, default=str) + "\n")


@dataclass(frozen=True)
class Workspace:
    """Paths of one competition's workspace; creating the object touches nothing on disk."""

    root: Path

    @property
    def raw(self) -> Path:
        return self.root / "raw"

    @property
    def setup(self) -> Path:
        return self.root / "setup"

    @property
    def solve(self) -> Path:
        return self.root / "solve"

    @property
    def submissions(self) -> Path:
        return self.root / "submissions"

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    @property
    def state_path(self) -> Path:
        return self.root / "state.json"

    @property
    def result_path(self) -> Path:
        return self.root / "result.json"

    @property
    def submission_path(self) -> Path:
        return self.submissions / "submission.csv"

    def create(self) -> None:
        for folder in (self.raw, self.setup, self.solve, self.submissions, self.logs):
            folder.mkdir(parents=True, exist_ok=True)

    def load_state(self) -> RunState:
        if not self.state_path.exists():
            return RunState()
        return RunState.model_validate_json(self.state_path.read_text(encoding="utf-8"))

    def save_state(self, state: RunState) -> None:
        atomic_write_text(self.state_path, state.model_dump_json(indent=2) + "\n")


class StageState(BaseModel):
    attempts: int = 0
    passed: bool = False
    last_error: str | None = None


class MetaState(BaseModel):
    rounds: int = 0
    passed: bool = False


class RunState(BaseModel):
    """Everything needed to resume: which phase, and which setup stages already passed."""

    phase: str = "new"  # new → setup → solve → done
    policy: str | None = None
    stages: dict[str, StageState] = Field(default_factory=dict)
    meta: dict[str, MetaState] = Field(default_factory=dict)
    elapsed_s: float = 0.0
    error: str | None = None

    def stage(self, name: str) -> StageState:
        return self.stages.setdefault(name, StageState())

    def meta_check(self, name: str) -> MetaState:
        return self.meta.setdefault(name, MetaState())
