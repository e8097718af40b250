"""Issue #37: feature code a model offers with less time left than the code cap's floor is never
run (a child stopped before its imports end says nothing of the code): the solver does not offer
the action then, and a reply that arrives past the floor is dropped, not refused nor blamed. The
solver is built in this process from a real workspace; above the floor the same code does run,
in the real sandbox."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import psutil
import pytest
from llm_solve_helpers import ratio_workspace

from agentk.core.records.config import SolveSettings
from agentk.core.sandbox.isolation import isolation_status
from solve_pipeline.inputs.solve_inputs import SolveOptions, prepare
from solve_pipeline.llm.feature_trial import MIN_CAP_S, tabular_bases, try_feature
from solve_pipeline.llm.llm_summary import allowed_actions
from solve_pipeline.phases.solve_state import Solver

needs_sandbox = pytest.mark.skipif(not isolation_status().available, reason=isolation_status().reason)


def _started(marker: str) -> list[psutil.Process]:
    return [p for p in psutil.process_iter(["cmdline"]) if marker in " ".join(p.info["cmdline"] or [])]


@needs_sandbox
def test_feature_code_with_less_time_than_the_caps_floor_is_not_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    workspace = ratio_workspace(tmp_path / "ratio", SolveSettings(time_budget_s=6, folds=2))
    monkeypatch.chdir(tmp_path)  # prepare() moves into setup/, as the solver subprocess does
    options = SolveOptions(workspace=workspace, folds=2, time_budget=6)
    artifacts, ctx, _, validation = prepare(options)
    solver = Solver(options, artifacts, ctx, tmp_path / "submission.csv", validation)
    solver.constant_first()
    outcome = solver.race()
    bases = tabular_bases(solver)
    assert bases, "the race finished no tabular family to judge a block against"

    # Offered while its cap can hold the child's start, not below.
    assert "feature" in allowed_actions(solver, outcome, 30.0)
    assert "feature" not in allowed_actions(solver, outcome, MIN_CAP_S - 1)

    # A reply past the floor: the code, which would leave a process behind if it ran, never starts.
    seconds = f"{3000 + uuid.uuid4().int % 500}.{uuid.uuid4().int % 1000:03d}"  # this test's own marker
    code = f'''
import subprocess

def add_features(train, test):
    subprocess.Popen(["sleep", "{seconds}"])
    for frame in (train, test):
        frame["a_over_b"] = frame["a"] / frame["b"]
    return train, test
'''
    late = try_feature(solver, code, 1, time.monotonic() + MIN_CAP_S - 2, dict(bases))
    assert late.verdict.startswith("dropped: no time to run it"), late.verdict
    assert late.refused is None and not late.checks and not late.kept and late.columns == []
    assert _started(f"sleep {seconds}") == []
    assert late.code == code  # stored as written (nothing in it to redact)

    # With time, the same code runs under the checks (its grandchild dies with it).
    timely = try_feature(solver, code, 2, time.monotonic() + 60, dict(bases))
    assert timely.checks and not timely.verdict.startswith("dropped: no time"), timely.verdict
    assert _started(f"sleep {seconds}") == []
