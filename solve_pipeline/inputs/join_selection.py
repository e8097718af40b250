"""Keep a joined side table's columns only when they help, as a Kaggle expert checks a merge.

The setup joins every side table whose key matches (plan.json `joins`, each block of columns named
with its own prefix, `stores__...`). Before the race, a fast LightGBM is cross-validated on the
race's own folds with every block, then without each block in turn; a block whose removal scores
as well or better is dropped from the features every family reads. The check spends a small share
of the budget; a block it had no time to test is kept (the setup's decision stands). The decisions
go to solve_result.json (`joins`).
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any

from solve_pipeline.base.baseline_models import LightGBMModel, ModelCandidate, ModelOptions, tree_matrices
from solve_pipeline.base.cv import CVContext, emit, known_rows, predict, score_outputs, start_run
from solve_pipeline.base.dataset import FeatureSet

SHARE = 0.1  # of the time budget
# A tiny budget still checks a small table (a few seconds of light LightGBM), but never spends more
# than this share of the whole run on it.
FLOOR_S = 6.0
FLOOR_SHARE = 0.3
UNBUDGETED_S = 120.0  # the check's own limit when the solve has no budget


def _blocks(features: FeatureSet, plan: dict[str, Any]) -> dict[str, list[int]]:
    """Tabular columns per joined table: those named with its prefix (derived ones included)."""
    blocks = {}
    for join in plan.get("joins") or []:
        prefix = join.get("prefix") if isinstance(join, dict) else None
        if prefix:
            columns = [i for i, name in enumerate(features.tab_names) if name.startswith(prefix)]
            if columns:
                blocks[str(join.get("table") or prefix)] = columns
    return blocks


def _without(features: FeatureSet, drop: list[int]) -> FeatureSet:
    dropped = set(drop)
    keep = [i for i in range(len(features.tab_names)) if i not in dropped]
    return dataclasses.replace(
        features, tab_train=features.tab_train[:, keep], tab_test=features.tab_test[:, keep],
        tab_names=[features.tab_names[i] for i in keep], tab_kinds=[features.tab_kinds[i] for i in keep])


def _fast_cv(ctx: CVContext, features: FeatureSet, deadline: float) -> float | None:
    """A light LightGBM's out-of-fold score on the race's folds; None when out of time."""
    ctx = dataclasses.replace(ctx, features=features)
    run = start_run(ModelCandidate("join_check", tree_matrices, lambda s, o, f: LightGBMModel(s, o, f.categorical_indices)), ctx)
    if run is None:
        return None
    X, oof = run.X, run.oof
    options = ModelOptions(seed=ctx.seed, light=True, threads=2, deadline=deadline)
    for train_rows, valid_rows in ctx.folds:
        if time.monotonic() > deadline:
            return None
        for spec in ctx.targets:
            model = run.candidate.make(spec, options, features)
            y = ctx.y[spec.column]
            fit_rows, check_rows = known_rows(y, train_rows), known_rows(y, valid_rows)
            model.fit(X[fit_rows], y[fit_rows], X_val=X[check_rows], y_val=y[check_rows])
            oof[spec.column][valid_rows] = predict(model, spec, X[valid_rows])
    return score_outputs(ctx, None, oof)


def check_seconds(budget_s: float | None) -> float:
    """The check's own limit: a share of the budget, with a floor so a 20 s run still compares."""
    if not budget_s:
        return UNBUDGETED_S
    return max(SHARE * budget_s, min(FLOOR_S, FLOOR_SHARE * budget_s))


def select_joins(ctx: CVContext, plan: dict[str, Any], budget_s: float | None, light: bool) -> dict[str, Any]:
    """Drop from `ctx.features` the joined blocks that do not improve CV; the record of why."""
    blocks = _blocks(ctx.features, plan)
    if not blocks:
        return {"skipped": "no side table was joined"}
    if light:
        return {"skipped": "light mode: every joined table kept", "kept": list(blocks)}
    started = time.monotonic()
    deadline = started + check_seconds(budget_s)
    full = ctx.features
    base = _fast_cv(ctx, full, deadline)
    if base is None:
        return {"skipped": "no time to compare: every joined table kept", "kept": list(blocks)}
    decisions: dict[str, dict[str, Any]] = {}
    drop: list[int] = []
    for table, columns in blocks.items():
        score = _fast_cv(ctx, _without(full, columns), deadline)
        if score is None:
            decisions[table] = {"columns": len(columns), "kept": True, "why": "not tested: out of time"}
            continue
        helps = ctx.direction.better(base, score)
        decisions[table] = {"columns": len(columns), "kept": helps, "score_with": base, "score_without": score,
                            "why": "CV better with it" if helps else "CV as good or better without it"}
        if not helps:
            drop += columns
    if drop:
        ctx.features = _without(full, drop)
    record = {"baseline": base, "tables": decisions, "seconds": round(time.monotonic() - started, 2)}
    emit("joins", **{t: d["kept"] for t, d in decisions.items()})
    return record
