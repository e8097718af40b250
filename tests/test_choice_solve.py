"""One small real solve records the choice rule's decision: every candidate's fold evidence, the
margins, the rule that decided, and a submission that is the chosen candidate's; replaying the
rule on the recorded evidence gives the recorded decision, and the run page says which rule decided."""

from __future__ import annotations

from pathlib import Path

import pytest
from solver_workspaces import run_solver, titanic_workspace

from agentk.core.records.results import SolveResult
from agentk.report.run_selection import read_selection
from solve_pipeline.base.choice_rule import Evidence, leader_of, within_noise

pytestmark = pytest.mark.integration


def test_the_solve_records_the_choice_and_submits_the_chosen(tmp_path: Path) -> None:
    workspace = titanic_workspace(tmp_path / "titanic")
    result, events = run_solver(workspace, "--folds", "3", "--seed", "2", "--time-budget", "20", "--no-tune")
    choice = result["choice"]
    evidence = [Evidence.from_json(e) for e in choice["evidence"]]
    assert {e.name for e in evidence} <= set(result["cv"]) and len(evidence) >= 3
    assert all(len(e.fold_scores) == 3 and e.cv == pytest.approx(result["cv"][e.name]) for e in evidence)
    assert next(e for e in evidence if e.name == "constant").kind == "constant"

    # The record is the rule's own decision on that evidence.
    replay = within_noise(evidence, higher=True)
    assert replay is not None and choice["applied"] == "within_noise"
    assert (choice["rule"], choice["chosen"], choice["leader"]) == (replay.rule, replay.chosen, replay.leader)
    assert choice["leader"] == leader_of(evidence, higher=True).name  # type: ignore[union-attr]
    assert {m["name"] for m in choice["margins"]} == {e.name for e in evidence} - {"constant", choice["leader"]}
    assert any(e["event"] == "choice" and e["chosen"] == choice["chosen"] for e in events)

    # The submission is the chosen candidate's (decoded into labels when a threshold gained).
    assert result["model"] in (choice["chosen"], f"{choice['chosen']}_threshold")
    submitted = (workspace / "submissions" / "submission.csv").read_bytes()
    assert submitted == (workspace / "submissions" / "candidates" / f"{result['model']}.csv").read_bytes()
    if choice["rule"] == "within_noise":
        chosen = next(m for m in choice["margins"] if m["name"] == choice["chosen"])
        assert chosen["within"] and result["cv"][choice["chosen"]] <= result["cv"][choice["leader"]]

    selection = read_selection(SolveResult.read(workspace / "solve"))
    assert selection.choice is not None and selection.choice.startswith(choice["rule"])
    assert [m.model for m in selection.margins] == [m["name"] for m in choice["margins"]]
