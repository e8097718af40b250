"""What a framework check may use: the workspace and the run's limits (never grading facts)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from agentk.workspace import Workspace


@dataclass
class CheckContext:
    workspace: Workspace
    light_solve_timeout_s: float = 300.0
    probe_timeout_s: float = 120.0
    on_solver_line: Callable[[str], None] | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def setup(self) -> Path:
        return self.workspace.setup

    def read_json(self, name: str) -> Any:
        return json.loads((self.setup / name).read_text(encoding="utf-8"))

    def plan(self) -> dict[str, Any]:
        path = self.setup / "plan.json"
        if not path.exists():
            return {}
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except ValueError:
            return {}
        return data if isinstance(data, dict) else {}
