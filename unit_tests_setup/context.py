"""What a framework check may use: the workspace and the run's limits (never grading facts)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from agentk.core.artifacts import SetupLayout
from agentk.core.records.config import SetupBudget
from agentk.core.records.workspace import Workspace, read_json_object
from agentk.core.sandbox.isolation import Mounts
from agentk.core.sandbox.sandbox import ExecutionResult, Limits, run_python
from agentk.core.sandbox.stage_host import StageHost


@dataclass
class CheckContext:
    workspace: Workspace
    budget: SetupBudget = field(default_factory=SetupBudget)  # the light solve's and probe's timeouts
    on_solver_line: Callable[[str], None] | None = None
    # The run's warm sandbox for solver code (agentk/solve_sandbox.py), owned by the runner; None:
    # each check starts its own.
    solve_host: StageHost | None = None

    @property
    def setup(self) -> Path:
        return self.workspace.setup

    @property
    def layout(self) -> SetupLayout:
        return SetupLayout(self.workspace.setup)

    def plan(self) -> dict[str, Any]:
        return read_json_object(self.layout.plan)

    def run_solver_code(self, args: list[str], *, limits: Limits, log_prefix: Path,
                        on_stdout_line: Callable[[str], None] | None = None) -> ExecutionResult:
        """`python -u *args` in solve/ as the solver's code: in the run's solve host when there is
        one, else in a fresh sandbox that may write solve/ only."""
        if self.solve_host is not None:
            return self.solve_host.run(args, limits=limits, log_prefix=log_prefix, on_stdout_line=on_stdout_line)
        return run_python(args, cwd=self.workspace.solve, limits=limits, on_stdout_line=on_stdout_line,
                          log_prefix=log_prefix, mounts=Mounts.workspace(self.workspace.root, write=["solve"]))
