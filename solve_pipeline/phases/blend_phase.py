"""The solver's blending phase: per target, every complete solution blended (blending.py), the
blend adopted only where its nested CV beats the best so far."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from solve_pipeline.blend import blending, stackers
from solve_pipeline.phases import choice_phase
from solve_pipeline.base.cv import Predictions, emit, normalise_proba, score_outputs
from solve_pipeline.phases.decode_phase import decode_reserve
from solve_pipeline.blend.blend_replay import BlendReplay

if TYPE_CHECKING:
    from solve_pipeline.phases.solve_state import Solver

BLEND_UNTIL = 1.0  # less the decoding's projected need; a blender whose cost does not fit is dropped


def blend(solver: Solver) -> dict[str, Any]:
    """Per target, blend every complete solution's OOF; adopted only if its nested CV wins."""
    solutions = [r for r in solver.state.complete if r.name != "constant"]
    if len(solutions) < solver.options.blend_after:
        return {"skipped": f"{len(solutions)} solutions < blend_after={solver.options.blend_after}"}
    blended: dict[str, Predictions] = {}
    families: set[str] = set()
    report: dict[str, Any] = {}
    challenger = choice_phase.collects(solver)
    deadline = solver.at(BLEND_UNTIL) - decode_reserve(solver)
    table = stackers.table_columns(solver.ctx.features.tab_train, solver.ctx.features.tab_test)
    splits = None
    if solver.validation.kind == "time":
        # Periods, as the solutions were judged, one more of them so that no blender fold is a
        # solution's fold. Shuffled rows let the boosted stacker read a series' level off the
        # neighbouring days: daily sales at 600 s, nested SMAPE 23.5 but 27.0 on the future,
        # where the best single model scored 24.8 and 23.6.
        splits = solver.validation.folds(solver.ctx.features.n_train, len(solver.ctx.folds) + 1, solver.ctx.seed, None)
    for spec in solver.ctx.targets:
        task = spec.task if spec.is_classification else "regression"
        if not spec.is_classification and np.isnan(solver.ctx.y[spec.column]).any():
            # A target missing on some rows: the blenders fit on every row's truth, so its best
            # single solution stands.
            report[spec.column] = {"method": "best_single", "skipped": "the target is missing on some training rows"}
            continue
        held = {t: p.oof for t, p in solver.state.best.items()}

        def score_fn(_y: np.ndarray, pred: np.ndarray, column: str = spec.column,
                     held: dict = held, task: str = task) -> float:
            return score_outputs(solver.ctx, None, {**held, column: blending.as_class_matrix(pred, task)})

        result = blending.blend(
            [blending.Solution(r.name, r.oof[spec.column], r.test[spec.column]) for r in solutions],
            solver.ctx.y[spec.column], task, score_fn, solver.higher,
            blend_after=solver.options.blend_after, seed=solver.ctx.seed, deadline=deadline, table=table,
            splits=splits, keep_best_blend=challenger)
        report[spec.column] = {"method": result.method, "score": result.score, "weights": result.weights,
                               "single_scores": result.single_scores, "blend_scores": result.blend_scores}
        if result.dropped:
            report[spec.column]["dropped"] = result.dropped
        if result.method == "best_single" and result.best_blend is not None:
            report[spec.column]["challenger"] = {"method": result.best_blend.method, "score": result.best_blend.score}
            emit("blend_dropped", target=spec.column, dropped=result.dropped)
        # A blend that lost still stands as a challenger where the choice rule may weigh it.
        kept = (result.oof, result.test) if result.method != "best_single" else \
            (result.best_blend.oof, result.best_blend.test) if result.best_blend is not None else None
        if kept is not None:
            oof, test = (blending.as_class_matrix(a, task) for a in kept)
            if spec.is_classification:
                oof, test = normalise_proba(oof), normalise_proba(test)
            parts = [r.target_replay(spec.column) for r in solutions]
            method = result.best_blend.method if result.best_blend is not None else result.method
            replay = BlendReplay(method, result.blender, parts, task, result.with_table) \
                if all(p is not None for p in parts) else None
            blended[spec.column] = Predictions("blend", oof, test, replay=replay)
            families.update(_weighed(result, [r.name for r in solutions]))
    if blended:
        full = {**solver.state.best, **blended}
        solver.consider("blend", full, score_outputs(solver.ctx, None, {t: p.oof for t, p in full.items()}),
                        kind="blend", families=tuple(sorted(families)))
    solver.state.phases["blend"] = round(solver.state.elapsed(), 2)
    return report


def _weighed(result: blending.BlendResult, names: list[str]) -> set[str]:
    """The families a blend draws on: those the weighted average weighs, else every solution's."""
    method = result.method if result.method != "best_single" else \
        result.best_blend.method if result.best_blend is not None else None
    if method == "weighted" and result.weights:
        names = [n for n, w in result.weights.items() if w > 0]
    return {choice_phase.family_of(n) for n in names}
