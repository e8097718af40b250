"""Everything a run's report shows, read from the run's workspace into plain records.

Each section is built on its own (`run_header`, `run_setup`, `run_solver`, `run_dataset`): a file
that is missing, or written by an older agentk in a shape this reader does not know, turns that
section (only) into `NotAvailable(reason)`. The run's records are read through their models
(`RunResult`, `SolveResult`); solve/solve_result.json once, here, for the two sections that use it.
"""

from __future__ import annotations

import json
from pathlib import Path

from agentk.core.errors import AgentKError
from agentk.core.records.results import SolveResult
from agentk.report.page import NotAvailable
from agentk.report.run_dataset import DatasetData, read_dataset
from agentk.report.run_header import Header, read_header
from agentk.report.run_joins import JoinsData, read_joins
from agentk.report.run_llm_solve import LLMSolveData, read_llm_solve
from agentk.report.run_section import Record, section
from agentk.report.run_setup import ATTEMPTS_LINK, SetupData, read_setup
from agentk.report.run_solver import EVENTS_FILE, SolverData, read_solver


class RunData(Record):
    root: Path
    header: Header | NotAvailable
    setup: SetupData
    solver: SolverData | NotAvailable
    data: DatasetData
    joins: JoinsData | NotAvailable | None = None  # the side tables joined; None: the plan joins none
    llm_solve: LLMSolveData | NotAvailable | None = None  # the LLM's solve decisions; None: no LLM solved
    files: list[tuple[str, str]] = []  # (label, relative link) of the run's files that exist


def is_run_workspace(path: Path) -> bool:
    return (path / "result.json").is_file() or (path / "state.json").is_file()


def read_solve_result(root: Path) -> SolveResult | NotAvailable:
    """solve/solve_result.json through its model, or why it cannot be had."""
    path = SolveResult.path_in(root / "solve")
    if not path.is_file():
        return NotAvailable("solve/solve_result.json is missing: the solver has not finished")
    return section("solve/solve_result.json", lambda: SolveResult.model_validate(json.loads(path.read_text(encoding="utf-8"))))


def read_run(root: Path) -> RunData:
    """Everything the run report shows; an AgentKError only when `root` is not a run workspace."""
    root = Path(root)
    if not root.is_dir() or not is_run_workspace(root):
        raise AgentKError(f"{root} is not a run workspace (no result.json or state.json in it)")
    solve = read_solve_result(root)
    known = [("result.json", "result.json"), ("config.json", "config.json"), ("setup attempts", ATTEMPTS_LINK),
             ("events", f"logs/{EVENTS_FILE}"), ("solve record", "solve/solve_result.json"),
             ("setup plan", "setup/plan.json"), ("task summary", "setup/task_summary.md")]
    return RunData(
        root=root,
        header=section("result.json", lambda: read_header(root)),
        setup=read_setup(root),
        solver=read_solver(root, solve),
        data=read_dataset(root, solve),
        joins=read_joins(root, solve),
        llm_solve=read_llm_solve(solve),
        files=[(label, link) for label, link in known if (root / link).is_file()],
    )
