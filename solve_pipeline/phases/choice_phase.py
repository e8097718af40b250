"""The solver's choice among its candidates, after the blend and before decoding.

Every phase adopts whatever beats the best CV so far; on small data the best CV among many
near-equal candidates is partly the luck of their folds. As each candidate is considered, its
out-of-fold predictions are scored on each of the solve's folds (its evidence: choice_rule.py);
at the end the solve's rule (`SolveOptions.choice`) decides. Under `within_noise` a candidate within
noise of the best that generalises better (a blend of several families, a less searched model)
takes the best's place and is written as the submission; under `max_cv` the best stands and the
record still says what `within_noise` would have chosen. Either way `solve_result.json` `choice`
holds the rule that decided, the margins and every candidate's evidence (the held-out bench,
agentk/bench/holdout.py, replays every rule on them).
"""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING, Any

from solve_pipeline.base.choice_rule import MIN_FOLDS, Evidence, Kind, within_noise
from solve_pipeline.base.cv import Predictions, emit, score_outputs

if TYPE_CHECKING:
    from solve_pipeline.phases.solve_state import Solver

_SUFFIXES = re.compile(r"(_tuned)?(_bag\d+)?$")
# The candidates' predictions kept for the rule stop here (wide class probabilities on many rows):
# later candidates are then not weighed, and the record says how many were left out.
POOL_MAX_BYTES = 1 << 30


def family_of(name: str) -> str:
    """The model family a candidate's name stands for (`catboost_tuned_bag3` -> `catboost`)."""
    return _SUFFIXES.sub("", name) or name


def collects(solver: Solver) -> bool:
    """Whether this solve gathers evidence for the rule (see `_unjudged`)."""
    return _unjudged(solver) is None


def _unjudged(solver: Solver) -> str | None:
    """Why the rule cannot judge this solve: a light solve, several targets, a big table (noise is
    small there and every candidate's predictions dear to keep), or too few folds; None when it can."""
    if solver.options.light:
        return "a light solve"
    if len(solver.ctx.targets) != 1:
        return "several targets: the best is adopted target by target"
    if solver.ctx.features.big:
        return "a big table: noise is small and every candidate's predictions dear to keep"
    if len(solver.ctx.folds) < MIN_FOLDS:
        return f"{len(solver.ctx.folds)} folds are too few to judge noise"
    return None


def record(solver: Solver, name: str, predictions: dict[str, Predictions], score: float, kind: Kind,
           configs: int, families: tuple[str, ...]) -> None:
    """Keep a considered candidate's evidence (its score on each of the solve's folds) and predictions."""
    if not collects(solver) or not math.isfinite(score):
        return
    size = sum(p.oof.nbytes + (p.test.nbytes if p.test is not None else 0) for p in predictions.values())
    if sum(solver.pool_bytes.values()) + size - solver.pool_bytes.get(name, 0) > POOL_MAX_BYTES:
        solver.unweighed.append(name)
        return
    ctx = solver.ctx
    decoders = {t: p.decoder for t, p in predictions.items()}
    folds = tuple(score_outputs(ctx, rows, {t: p.oof[rows] for t, p in predictions.items()}, decoders)
                  for _, rows in ctx.folds)
    solver.evidence[name] = Evidence(name, score, folds, kind, configs, families or (family_of(name),))
    solver.pool[name], solver.pool_bytes[name] = dict(predictions), size


def choose(solver: Solver) -> dict[str, Any]:
    """Apply the solve's rule; the record of what decided, the margins and the evidence."""
    rule = solver.options.choice
    unjudged = _unjudged(solver)
    if unjudged is not None:
        return {"skipped": f"{unjudged}: the best CV stands", "rule": "max_cv"}
    if solver.state.kept is not None:
        return {"skipped": "an earlier solve's submission still beats this one", "rule": "max_cv"}
    evidence = list(solver.evidence.values())
    decision = within_noise(evidence, solver.higher)
    best = {p.model for p in solver.state.best.values()}
    if decision is None or best != {decision.leader}:
        return {"skipped": f"the best so far ({', '.join(sorted(best))}) is not a candidate the rule can weigh",
                "rule": "max_cv", "evidence": [e.to_json() for e in evidence]}
    report: dict[str, Any] = {**decision.to_json(), "applied": rule, "evidence": [e.to_json() for e in evidence]}
    if solver.unweighed:
        report["unweighed"] = {"models": solver.unweighed, "why": f"their predictions would pass {POOL_MAX_BYTES >> 20} MB"}
    if decision.rule == "within_noise" and rule != "within_noise":
        report.update(rule="max_cv", would_choose=decision.chosen, chosen=decision.leader,
                      reason=f"the solve's rule is {rule}; within_noise would choose {decision.chosen}: {decision.reason}")
    elif decision.rule == "within_noise":
        chosen = solver.evidence[decision.chosen]
        solver.state.best, solver.state.best_score = dict(solver.pool[chosen.name]), chosen.cv
        solver.write_submission(chosen=True)
    emit("choice", rule=report["rule"], chosen=report["chosen"], leader=decision.leader, reason=report["reason"])
    solver.state.phases["choice"] = round(solver.state.elapsed(), 2)
    return report
