"""RunConfig is the one place for a run's defaults: flat names nest, the solver reads config.json."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError
from solver_workspaces import titanic_workspace

from agentk.core.records.config import CONFIG_FILE, Fusion, PolicyName, RunConfig, SetupBudget, SolveSettings, saved_config
from agentk.core.records.events import EventLog
from agentk.core.records.workspace import Workspace, atomic_write_json
from agentk.runner import _run_solver
from solve_pipeline.inputs.solve_inputs import SolveOptions
from solve_pipeline.solver import parse_args

pytestmark = pytest.mark.integration


def test_flat_names_go_into_their_sub_model() -> None:
    config = RunConfig(folds=3, time_budget_s=15, attempts_per_stage=2, light_solve_timeout_s=90, policy="llm")
    assert config.solve == SolveSettings(folds=3, time_budget_s=15)
    assert config.setup == SetupBudget(attempts_per_stage=2, light_solve_timeout_s=90)
    assert config.policy is PolicyName.LLM
    assert RunConfig(seed=1, solve=SolveSettings(folds=4)).solve == SolveSettings(folds=4, seed=1)
    assert RunConfig().with_solve(seed=9).solve.seed == 9
    with pytest.raises(ValidationError):
        RunConfig(fusion="maybe")


def test_the_saved_config_reads_back(tmp_path: Path) -> None:
    assert saved_config(tmp_path) is None
    config = RunConfig(workspace_root=tmp_path, folds=4, fusion="off", tune=False)
    (tmp_path / CONFIG_FILE).write_text(config.model_dump_json(), encoding="utf-8")
    assert saved_config(tmp_path) == config
    assert config.model_dump(mode="json")["solve"]["fusion"] == "off"  # the same strings in JSON


def test_solver_flags_default_to_the_saved_config(tmp_path: Path) -> None:
    bare = parse_args([str(tmp_path)])
    assert bare == SolveOptions(workspace=tmp_path.resolve())  # stand-alone: no budget
    config = RunConfig(folds=3, seed=7, time_budget_s=42, fusion="on", tune=False)
    (tmp_path / CONFIG_FILE).write_text(config.model_dump_json(), encoding="utf-8")
    saved = parse_args([str(tmp_path)])
    assert (saved.folds, saved.seed, saved.time_budget, saved.fusion, saved.tune) == (3, 7, 42.0, Fusion.ON, False)
    flagged = parse_args([str(tmp_path), "--folds", "4", "--fusion", "off"])
    assert (flagged.folds, flagged.fusion, flagged.seed) == (4, Fusion.OFF, 7)
    # The setup's light solve is the same check whatever the run's settings.
    assert parse_args([str(tmp_path), "--light"]) == SolveOptions(workspace=tmp_path.resolve(), light=True)


def test_the_runner_solves_with_the_saved_config(tmp_path: Path) -> None:
    """The runner passes no solver flags: the sandboxed solver must see config.json."""
    workspace = Workspace(titanic_workspace(tmp_path / "titanic"))
    workspace.create()
    # 3 s: not a default, so the record shows whose value the solver used; the pace-setter fits in it.
    config = RunConfig(workspace_root=tmp_path, folds=2, time_budget_s=3, tune=False, quiet=True)
    atomic_write_json(workspace.root / CONFIG_FILE, config.model_dump(mode="json"))
    result = _run_solver(workspace, config, EventLog(workspace.logs / "events.jsonl", quiet=True), None)
    assert result.ok, result.error_summary(max_lines=5)
    solved = json.loads((workspace.solve / "solve_result.json").read_text(encoding="utf-8"))
    assert solved["folds"] == 2 and solved["time_budget_s"] == 3.0
