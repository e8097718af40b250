"""The compact, typed picture of a solve that the model decides from: the task's shape, the race
table, the tuning so far, the best solution and its parts, the time left, the actions allowed now
and, from the second request on, the ablation of the best pipeline (llm_ablation.py). No data values
go out, only names, shapes and scores."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from agentk.core.records.solve_decisions import (
    Ablation,
    DecisionRecord,
    DecisionRequest,
    FamilyView,
    PastDecision,
    TargetView,
    TaskView,
)
from solve_pipeline.race.automl import RaceOutcome
from solve_pipeline.base.cv import emit
from solve_pipeline.llm.feature_trial import MIN_CAP_S, code_cap, tabular_bases
from solve_pipeline.phases.finetune_plan import FinetuneOption
from solve_pipeline.llm.llm_ablation import ablate, finite_or_none
from solve_pipeline.race.hebo_tool import hebo_missing
from solve_pipeline.race.registry import tunable_for

if TYPE_CHECKING:
    from solve_pipeline.phases.solve_state import Solver

MAX_COLUMNS = 60  # a wide table's column list is cut here: the prompt stays small


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


def finetunable(options: Sequence[FinetuneOption], seconds_left: float) -> dict[str, float]:
    """The fine-tuning plan's options that fit the time left, network -> estimated seconds (none on a
    table: the plan has none)."""
    return {o.candidate.name: round(o.seconds, 1) for o in options if o.seconds <= seconds_left}


def allowed_actions(solver: Solver, outcome: RaceOutcome, seconds_left: float) -> list[str]:
    allowed = []
    if tunable_families(solver):
        allowed.append("tune")
    if unfinished_families(outcome):
        allowed.append("race")
    # Below the code cap's floor the child cannot even start its imports: a block would only time out.
    if seconds_left >= MIN_CAP_S and "tab" in solver.artifacts.train_maps and solver.artifacts.target_map is not None \
            and tabular_bases(solver):
        allowed.append("feature")
    if finetunable(solver.finetune_options, seconds_left):
        allowed.append("finetune")
    if any(r.name != "constant" for r in solver.state.complete):
        allowed.append("bag")
    allowed += ["blend", "stop"]
    return allowed


def build_request(solver: Solver, outcome: RaceOutcome, n: int, token: str, trials: dict[str, int],
                  history: list[PastDecision], seconds_left: float, decisions: Sequence[DecisionRecord] = (),
                  blend_cache: dict[tuple[str, ...], float | None] | None = None) -> DecisionRequest:
    """`decisions`: those taken so far; after the first, the request carries their ablation."""
    state = solver.state
    allowed = allowed_actions(solver, outcome, seconds_left)
    race = [FamilyView(family=e.family, status=e.status, cv=finite_or_none(state.cv.get(e.family)),
                       first_fold_score=e.first_fold_score, tuned_trials=trials.get(e.family, 0), reason=e.reason)
            for e in outcome.entries]
    return DecisionRequest(
        n=n, token=token, task=task_view(solver), race=race, best_score=finite_or_none(state.best_score),
        best_parts={t: p.model for t, p in state.best.items()}, budget_left_s=round(max(seconds_left, 0.0), 1),
        allowed=allowed, tunable=tunable_families(solver),
        unfinished=unfinished_families(outcome), history=list(history), feature_cap_s=round(code_cap(seconds_left), 1),
        finetunable=finetunable(solver.finetune_options, seconds_left),
        ablation=_ablation(solver, outcome, decisions, allowed, blend_cache) if decisions else None)


def _ablation(solver: Solver, outcome: RaceOutcome, decisions: Sequence[DecisionRecord], allowed: list[str],
              cache: dict[tuple[str, ...], float | None] | None) -> Ablation | None:
    try:
        return ablate(solver, outcome, decisions, allowed, cache)
    except Exception as error:  # noqa: BLE001 - feedback is a help: the decision is asked for without it
        emit("ablation_failed", reason=f"{type(error).__name__}: {error}")
        return None

