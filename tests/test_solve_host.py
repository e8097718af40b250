"""The run's solve host (agentk/solve_sandbox.py) on the demo: the maps probe, the light solve and
the solver all run in it, the runner closes it at the end, also when setup's deadline ends the run."""

from __future__ import annotations

from pathlib import Path

import pytest

import agentk.runner as runner
from agentk.core.records.config import RunConfig
from agentk.core.sandbox.isolation import isolation_status
from agentk.core.sandbox.stage_host import StageHost
from agentk.runner import run_competition
from agentk.sources.demo import make_demo_competition

pytestmark = pytest.mark.skipif(not isolation_status().available, reason=isolation_status().reason)


class Watched(StageHost):
    """A solve host that notes what ran in it, and whether in the host (not a fallback)."""

    opened: list[Watched] = []

    def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        self.ran: list[tuple[str, bool, int]] = []
        self.started = False
        Watched.opened.append(self)

    def start(self) -> None:
        super().start()
        self.started = self.active

    def run(self, args, **kwargs):  # type: ignore[no-untyped-def]
        lines: list[str] = []
        caller = kwargs.get("on_stdout_line")

        def on_line(line: str) -> None:
            lines.append(line)
            if caller is not None:
                caller(line)

        result = super().run(args, **{**kwargs, "on_stdout_line": on_line})
        self.ran.append((" ".join(args[:2] + [a for a in args if a == "--light"]), self.active, len(lines)))
        return result


@pytest.fixture
def watched(monkeypatch: pytest.MonkeyPatch) -> list[Watched]:
    Watched.opened = []
    original = runner.open_solve_host

    def open_watched(workspace, config):  # type: ignore[no-untyped-def]
        host = original(workspace, config)
        return Watched(host.cwd, host.mounts, host.preload, host_limits=host.host_limits, env_extra=host.env_extra)

    monkeypatch.setattr(runner, "open_solve_host", open_watched)
    return Watched.opened


def test_the_probe_light_solve_and_solver_run_in_one_host_closed_at_the_end(tmp_path: Path, watched: list[Watched]) -> None:
    source = make_demo_competition(tmp_path / "demo")
    outcome = run_competition(source, RunConfig(workspace_root=tmp_path / "ws", folds=2, time_budget_s=3, tune=False, quiet=True))
    assert outcome.result.valid_submission
    [host] = watched
    commands = [command for command, _, _ in host.ran]
    assert commands == ["-m unit_tests_setup.probe_batch", "-m solve_pipeline.solver --light", "-m solve_pipeline.solver"]
    assert all(in_host for _, in_host, _ in host.ran)  # none fell back to a fresh sandbox
    assert all(lines > 0 for _, _, lines in host.ran[1:])  # the solvers' JSON lines came through live
    assert host.started and not host.active
    logs = outcome.workspace.logs
    for name in ("meta_maps_probe", "meta_light_solve", "solve"):
        assert (logs / f"{name}.stdout.txt").read_text().strip()


def test_setups_deadline_closes_the_host(tmp_path: Path, watched: list[Watched]) -> None:
    source = make_demo_competition(tmp_path / "demo")
    config = RunConfig(workspace_root=tmp_path / "ws", folds=2, time_budget_s=3, tune=False, quiet=True,
                       setup_deadline_s=0.001)
    outcome = run_competition(source, config)
    assert outcome.result.phase == "done" and outcome.result.validation_score is None
    [host] = watched
    assert host.started and host.ran == [] and not host.active
