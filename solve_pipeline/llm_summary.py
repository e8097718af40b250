"""The compact, typed picture of a solve that the model decides from: the task's shape, the race
table, the tuning so far, the best solution and its parts, the time left and the actions allowed
now. No data values go out, only names, shapes and scores."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from agentk.core.solve_decisions import DecisionRequest, FamilyView, PastDecision, TargetView, TaskView
from solve_pipeline.automl import RaceOutcome
from solve_pipeline.feature_trial import code_cap, tabular_bases
from solve_pipeline.hebo_tool import hebo_missing
from solve_pipeline.registry import tunable_for

if TYPE_CHECKING:
    from solve_pipeline.solve_state import Solver

MAX_COLUMNS = 60  # a wide table's column list is cut here: the prompt stays small


def _finite(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


def task_view(solver: Solver) -> TaskView:
    artifacts, features = solver.artifacts, solver.ctx.features
    columns: dict[str, str] = {}
    if "tab" in artifacts.train_maps:
        frame = artifacts.train_maps["tab"]
        columns = {str(c): str(frame[c].dtype) for c in list(frame.columns)[:MAX_COLUMNS]}
    return TaskView(
        metric=solver.metric_name, higher_is_better=solver.higher, n_train=features.n_train,
        n_test=features.n_test, modalities=sorted(artifacts.train_maps),
        targets=[TargetView(column=s.column, task=s.task, n_classes=s.n_classes if s.is_classification else None)
                 for s in solver.ctx.targets],
        columns=columns)


def tunable_families(solver: Solver) -> list[str]:
    if hebo_missing() is not None:
        return []
    ctx = solver.ctx
    return [r.name for r in solver.state.complete if tunable_for(r.name, ctx.features, ctx.targets) is not None]


def unfinished_families(outcome: RaceOutcome) -> list[str]:
    return [r.name for r in outcome.pruned] + [c.name for c in outcome.unstarted]


def allowed_actions(solver: Solver, outcome: RaceOutcome) -> list[str]:
    allowed = []
    if tunable_families(solver):
        allowed.append("tune")
    if unfinished_families(outcome):
        allowed.append("race")
    if "tab" in solver.artifacts.train_maps and solver.artifacts.target_map is not None and tabular_bases(solver):
        allowed.append("feature")
    if any(r.name != "constant" for r in solver.state.complete):
        allowed.append("bag")
    allowed += ["blend", "stop"]
    return allowed


def build_request(solver: Solver, outcome: RaceOutcome, n: int, token: str, trials: dict[str, int],
                  history: list[PastDecision], seconds_left: float) -> DecisionRequest:
    state = solver.state
    race = [FamilyView(family=e.family, status=e.status, cv=_finite(state.cv.get(e.family)),
                       first_fold_score=e.first_fold_score, tuned_trials=trials.get(e.family, 0), reason=e.reason)
            for e in outcome.entries]
    return DecisionRequest(
        n=n, token=token, task=task_view(solver), race=race, best_score=_finite(state.best_score),
        best_parts={t: p.model for t, p in state.best.items()}, budget_left_s=round(max(seconds_left, 0.0), 1),
        allowed=allowed_actions(solver, outcome), tunable=tunable_families(solver),
        unfinished=unfinished_families(outcome), history=list(history), feature_cap_s=round(code_cap(seconds_left), 1))

