"""What a framework check may use: the workspace and the run's limits (never grading facts)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from agentk.core.artifacts import SetupLayout
from agentk.core.records.config import SetupBudget
from agentk.core.records.workspace import Workspace, read_json_object


@dataclass
class CheckContext:
    workspace: Workspace
    budget: SetupBudget = field(default_factory=SetupBudget)  # the light solve's and probe's timeouts
    on_solver_line: Callable[[str], None] | None = None

    @property
    def setup(self) -> Path:
        return self.workspace.setup

    @property
    def layout(self) -> SetupLayout:
        return SetupLayout(self.workspace.setup)

    def plan(self) -> dict[str, Any]:
        return read_json_object(self.layout.plan)
