"""An ablation of the current best pipeline's parts for the LLM solve policy (MLE-STAR's idea: measure
which part moves the score most, and work on that one next).

Everything comes from what the solver already has: the CV of every adopted solution (`state.cv`),
the feature blocks' records and the decisions' score changes. The only computation is the blend's
estimate before any blend ran, an equal-weight average of the leading models' out-of-fold
predictions scored once: no model is fitted.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from agentk.core.metrics.direction import finite
from agentk.core.records.solve_decisions import Ablation, AblationPart, ActionEffect, DecisionRecord
from solve_pipeline.race.automl import RaceOutcome
from solve_pipeline.base.cv import score_outputs

if TYPE_CHECKING:
    from solve_pipeline.phases.solve_state import Solver

BLEND_TOP = 3  # the blend estimate averages this many leading models
_BAG = re.compile(r"^(?P<base>.+)_bag\d+$")


def finite_or_none(value: float | None) -> float | None:
    return value if finite(value) else None


def _effect(solver: Solver, without: float | None, with_: float | None) -> float | None:
    if without is None or with_ is None:
        return None
    return (with_ - without) if solver.higher else (without - with_)


def _best(solver: Solver, scores: dict[str, float]) -> str | None:
    ranked = solver.ctx.direction.ranked(list(scores), key=lambda name: scores[name])
    return ranked[0] if ranked else None


def _part(solver: Solver, part: str, action: str, without: str | None, without_cv: float | None,
          with_: str | None, with_cv: float | None, **extra: object) -> AblationPart:
    return AblationPart(part=part, action=action, without_model=without, without_cv=without_cv, with_model=with_,
                        with_cv=with_cv, effect=_effect(solver, without_cv, with_cv), **extra)  # type: ignore[arg-type]


def _tuning(solver: Solver, cv: dict[str, float], race: list[str], decisions: Sequence[DecisionRecord]) -> AblationPart:
    """The last family the model tuned: its tuned version against the same family untuned on the same
    features. Tuning after a kept feature block reads the block, so its untuned twin is the block's own
    run (same family) or, for another family, not measured; never the race's run on fewer columns."""
    tunes = [d for d in decisions if d.action == "tune" and d.family]
    if not tunes:
        leader = _best(solver, {f: cv[f] for f in race})
        return _part(solver, "tuning", "tune", leader, cv.get(leader or ""), None, None, note="not tuned yet")
    last = tunes[-1]
    family = str(last.family)
    blocks = [(d.n, d.feature) for d in decisions if d.n < last.n and d.feature is not None and d.feature.kept]
    twin: str | None = family
    if blocks:
        n, block = blocks[-1]
        twin = f"{family}_fe{n}" if block.family == family else None
    versions = {n: s for n, s in cv.items() if n == f"{family}_tuned" or n.startswith(f"{family}_tuned_bag")}
    tuned = _best(solver, versions)
    without_cv = cv.get(twin) if twin is not None else None
    if tuned is None:
        return AblationPart(part="tuning", action="tune", without_model=twin, without_cv=without_cv,
                            effect=0.0 if without_cv is not None else None,
                            note=f"{len(tunes)} round(s); none beat the untuned {family}")
    note = "" if twin is not None else f"tuned on kept feature blocks; {family} untuned on them not measured"
    return _part(solver, "tuning", "tune", twin, without_cv, tuned, cv[tuned], note=note)


def _features(solver: Solver, decisions: Sequence[DecisionRecord]) -> AblationPart:
    """The family the first kept block was judged on, without any block and with every kept one."""
    tried = [(d.n, d.feature) for d in decisions if d.feature is not None and d.feature.cv_after is not None]
    kept = [(n, f) for n, f in tried if f.kept]
    if kept:
        (_, first), (last_n, last) = kept[0], kept[-1]
        return _part(solver, "features", "feature", first.family, first.cv_before, f"{last.family}_fe{last_n}",
                     last.cv_after, note=f"{len(kept)} block(s) kept")
    if tried:
        n, best = max(tried, key=lambda item: _effect(solver, item[1].cv_before, item[1].cv_after) or -math.inf)
        return _part(solver, "features", "feature", best.family, best.cv_before, f"{best.family}_fe{n}",
                     best.cv_after, note=f"no block kept ({len(tried)} tried); the best one shown, dropped")
    return AblationPart(part="features", action="feature", note="no feature code tried yet")


def _bagging(solver: Solver, cv: dict[str, float]) -> AblationPart:
    bags = {n: s for n, s in cv.items() if (m := _BAG.match(n)) is not None and m["base"] in cv}
    best = _best(solver, bags)
    if best is None:
        return AblationPart(part="bagging", action="bag", note="not bagged yet")
    base = _BAG.match(best)["base"]  # type: ignore[index]
    return _part(solver, "bagging", "bag", base, cv[base], best, cv[best])


def _blend(solver: Solver, cv: dict[str, float], cache: dict[tuple[str, ...], float | None]) -> AblationPart:
    singles = {n: s for n, s in cv.items() if n not in ("blend", "constant")}
    leader = _best(solver, singles)
    if "blend" in cv:
        return _part(solver, "blend", "blend", leader, cv.get(leader or ""), "blend", cv["blend"])
    runs = [r for r in solver.state.complete if r.name in singles]
    top = solver.ctx.direction.ranked(runs, key=lambda r: singles[r.name])[:BLEND_TOP]
    if len(top) < 2 or leader is None:
        return AblationPart(part="blend", action="blend", note="fewer than two models to blend")
    key = tuple(r.name for r in top)
    if key not in cache:
        cache[key] = _average_score(solver, top)
    return _part(solver, "blend", "blend", top[0].name, singles[top[0].name], f"mean of {', '.join(key)}",
                 cache[key], estimated=True, note="estimate: equal-weight average of the leaders' out-of-fold "
                 "predictions, no fit")


def _average_score(solver: Solver, runs: list) -> float | None:
    try:
        mean = {s.column: np.mean([r.oof[s.column] for r in runs], axis=0) for s in solver.ctx.targets}
        return finite_or_none(float(score_outputs(solver.ctx, None, mean)))
    except Exception:  # noqa: BLE001 - an estimate that cannot be made is left out, never a failed decision
        return None


def ablate(solver: Solver, outcome: RaceOutcome, decisions: Sequence[DecisionRecord], allowed: Sequence[str],
           cache: dict[tuple[str, ...], float | None] | None = None) -> Ablation:
    """The parts (tuning, features, bagging, blend) with and without, each past action's score
    change, and the part to work on: the largest positive effect whose action is allowed now."""
    cv = {n: s for n, s in solver.state.cv.items() if finite_or_none(s) is not None}
    race = [e.family for e in outcome.entries if e.family in cv and e.family != "constant"]
    parts = [_tuning(solver, cv, race, decisions), _features(solver, decisions), _bagging(solver, cv),
             _blend(solver, cv, {} if cache is None else cache)]
    actions = [ActionEffect(n=d.n, action=d.action, family=d.family, score_change=d.score_change)
               for d in decisions if d.source == "llm"]
    open_parts = [p for p in parts if p.effect is not None and p.effect > 0 and p.action in allowed]
    if not open_parts:
        untried = [p.part for p in parts if p.effect is None and p.action in allowed]
        why = "no part has shown a gain yet" + (f"; not measured: {', '.join(untried)}" if untried else "")
        return Ablation(parts=parts, actions=actions, why=why)
    focus = max(open_parts, key=lambda p: p.effect or 0.0)
    return Ablation(parts=parts, actions=actions, focus=focus.part,
                    why=f"{focus.part} moves the CV most ({focus.effect:+.5g}): work on it with '{focus.action}'")
