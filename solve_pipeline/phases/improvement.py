"""The solve's anytime middle: HEBO rounds over the leading families, then bagging of the leaders.

After the race, the budget goes to what wins in CV, for as long as it keeps winning:

1. Tuning rounds. The best tunable family is tuned until its search plateaus (PATIENCE trials
   without a gain) or its share of the time is spent; then the next family; then any family that
   has not plateaued resumes its search where it stopped. A tuned configuration is never adopted on
   the score of the folds that chose it: it is refitted on a fresh partition first (bagging.py), and
   adopted on that corrected score. Without time for the refit, its gain over the defaults is halved
   (shrinkage toward the untuned score).
2. Bagging. The best single configurations get repeats on fresh partitions (other folds, other
   seeds) while time remains, up to MAX_REPEATS each: honest, lower-variance predictions.

Each phase stops early only for a stated reason, recorded in solve_result.json.
"""

from __future__ import annotations

import math
import time
from typing import TYPE_CHECKING, Any

from solve_pipeline.race.bagging import MAX_REPEATS, Bag, add_repeat, corrected_score
from solve_pipeline.base.cv import CandidateRun, cv_score, emit
from solve_pipeline.race.hebo_tool import Trial, hebo_missing
from solve_pipeline.race.registry import tunable_for
from solve_pipeline.race.tuning import MIN_TRIALS, affordable_trials, tune_family
from solve_pipeline.race.warm_start import choose_tuned, ignore_configs, warm_points

if TYPE_CHECKING:
    from solve_pipeline.phases.solve_state import Solver

# The leader's first round may take this share of the tuning window when another family could be tuned.
FIRST_ROUND_SHARE = 0.6
SHRINK_WITHOUT_REFIT = 0.5
LEADERS_BAGGED = 2
BAG_PATIENCE = 2  # repeats in a row without a gain that close a bag


def tune_rounds(solver: Solver, until: float, refit_until: float) -> dict[str, Any]:
    """Tune family after family until `until` (a monotonic time); the report lists every round."""
    ctx = solver.ctx
    ranked = ctx.direction.ranked(
        (r for r in solver.state.complete if tunable_for(r.name, ctx.features, ctx.targets)),
        key=lambda r: cv_score(r, ctx))
    window = until - time.monotonic()
    affordable = [r for r in ranked if affordable_trials(r.seconds, window) >= MIN_TRIALS]
    if not affordable:
        reason = "no tunable family finished the race" if not ranked else \
            f"no tunable family's CV fits {MIN_TRIALS} trials in {max(window, 0):.0f} s"
    else:
        reason = hebo_missing()  # `pip install .` alone leaves HEBO out: the other phases still run
    if reason is not None:
        emit("tuning_skipped", reason=reason)
        if solver.warm is not None and solver.warm_report is not None:
            ignore_configs(solver.warm, None, f"tuning skipped: {reason}", solver.warm_report)
        return {"skipped": reason}
    order = list(affordable)
    first_points: dict[str, list[dict[str, Any]]] = {}
    if solver.warm is not None and solver.warm_report is not None:
        scores = {r.name: cv_score(r, ctx) for r in affordable}
        chosen = choose_tuned(affordable, solver.warm, scores, ctx.direction, solver.warm_report,
                              tunable={r.name for r in ranked})
        order = [chosen] + [r for r in affordable if r is not chosen]
        tunable = tunable_for(chosen.name, ctx.features, ctx.targets)
        first_points[chosen.name] = warm_points(chosen.name, solver.warm.configs.get(chosen.name, []), tunable.space,
                                                tunable.defaults, affordable_trials(chosen.seconds, window),
                                                solver.warm_report)
        ignore_configs(solver.warm, chosen.name, f"{chosen.name} was tuned", solver.warm_report)
        emit("warm_start", phase="tuning", family=chosen.name, first_trials=first_points[chosen.name],
             choice=solver.warm_report.tuning)

    history: dict[str, list[Trial]] = {r.name: [] for r in order}
    best_score = {r.name: cv_score(r, ctx) for r in order}
    plateaued: set[str] = set()
    rounds: list[dict[str, Any]] = []
    stop_reason = "time"
    while True:
        left = until - time.monotonic()
        open_families = [r for r in order if r.name not in plateaued
                         and affordable_trials(r.seconds, left) >= MIN_TRIALS]
        if not open_families:
            stop_reason = "every tunable family plateaued" if len(plateaued) == len(order) else \
                f"no open family's CV fits {MIN_TRIALS} trials in the {max(left, 0):.0f} s left"
            break
        # The family with the fewest rounds goes next (the leader first): a second family gets its
        # round before the leader resumes.
        base = min(open_families, key=lambda r: sum(1 for x in rounds if x["family"] == r.name))
        budget = left
        if not rounds and len(open_families) > 1 and \
                affordable_trials(base.seconds, FIRST_ROUND_SHARE * left) >= MIN_TRIALS:
            budget = FIRST_ROUND_SHARE * left
        round_report = tune_round(solver, base, best_score[base.name], budget, history[base.name],
                                  first_points.pop(base.name, []), refit_until)
        rounds.append(round_report)
        if round_report["improved"]:
            best_score[base.name] = round_report["raw_score"]
        if round_report["stopped"] != "time":  # a plateau, or every planned trial ran
            plateaued.add(base.name)
    solver.state.phases["tune"] = round(solver.state.elapsed(), 2)
    emit("tuning_done", rounds=len(rounds), reason=stop_reason)
    first = rounds[0] if rounds else {}
    return {**first, "rounds": rounds, "stopped": stop_reason}


def tune_round(solver: Solver, base: CandidateRun, bar: float, budget: float, earlier: list[Trial],
               first: list[dict[str, Any]], refit_until: float) -> dict[str, Any]:
    ctx = solver.ctx
    tunable = tunable_for(base.name, ctx.features, ctx.targets)
    base_score = cv_score(base, ctx)
    outcome = tune_family(tunable, base, bar, ctx, budget, solver.higher, first=first, earlier=earlier)
    earlier.extend(Trial(t["params"], t["score"], t["seconds"], t.get("error")) for t in outcome.trials
                   if t.get("score") is not None)
    report: dict[str, Any] = {"family": tunable.family, "base_score": base_score, "bar": bar,
                              "planned_trials": outcome.planned_trials, "improved": outcome.run is not None,
                              "trials": outcome.trials, "stopped": outcome.stopped}
    if outcome.run is None:
        return report
    raw = cv_score(outcome.run, ctx)
    # Every configuration this family's search has tried so far, its defaults included.
    configs = solver.searched[outcome.run.name] = len(earlier) + 1
    bag = Bag(outcome.run, base_honest=False)
    report["raw_score"] = raw
    if add_repeat(bag, ctx, solver.fold_maker, refit_until):
        combined = solver.add_bag(bag)
        corrected = cv_score(combined, ctx)
        report["corrected_by"] = "refit on a fresh partition"
        solver.consider(combined.name, combined.predictions(), corrected, kind="tuned", configs=configs)
    else:
        corrected = base_score + SHRINK_WITHOUT_REFIT * (raw - base_score) if math.isfinite(base_score) else raw
        report["corrected_by"] = f"no time to refit: the gain over the defaults shrunk by {SHRINK_WITHOUT_REFIT}"
        solver.state.complete.append(outcome.run)
        solver.consider(outcome.run.name, outcome.run.predictions(), corrected, kind="tuned", configs=configs)
    report["corrected_score"] = corrected
    report["adopted"] = True
    solver.state.raw_scores[f"{tunable.family}_tuned"] = raw
    return report


def bag_leaders(solver: Solver, until: float) -> dict[str, Any]:
    """Repeats on fresh partitions, round-robin over the best LEADERS_BAGGED configurations still
    open; a bag that is full (MAX_REPEATS) or too slow for the time left hands its place to the
    next best, so time left over goes to more of what wins, until `until`."""
    ctx = solver.ctx
    # Race families only: a tuned run without its refit has no honest partition to bag from.
    singles = [r for r in solver.state.complete
               if r.name not in ("constant", "blend") and r.X is not None and not r.name.endswith("_tuned")]
    ranked = ctx.direction.ranked(singles, key=lambda r: cv_score(r, ctx))
    bags = [solver.bags.get(r.name) or Bag(r, base_honest=True) for r in ranked]
    # A tuned configuration's bag (refit already) comes first: it holds the best parameters found.
    tuned = [b for b in solver.bags.values() if not b.base_honest]
    bags = tuned + [b for b in bags if b not in tuned]
    if not bags:
        return {"skipped": "no complete model to bag"}
    used: list[Bag] = []
    stalls: dict[str, int] = {}
    # Each bag's last corrected score: a metric call costs seconds on big data, so none is repeated.
    scores: dict[str, float] = {}
    reason = f"every model has {MAX_REPEATS} repeats or stopped gaining ({BAG_PATIENCE} repeats without a gain)"
    while True:
        left = until - time.monotonic()
        open_bags = [b for b in bags if len(b.repeats) < MAX_REPEATS and b.closed is None]
        fitting = [b for b in open_bags if b.seconds_per_repeat <= left]
        if not fitting:
            if open_bags:
                reason = "time: no open model's repeat fits the time left"
            break
        bag = min(fitting[:LEADERS_BAGGED], key=lambda b: len(b.repeats))
        name = bag.base.name
        before = scores[name] if name in scores else corrected_score(bag, ctx)
        if not add_repeat(bag, ctx, solver.fold_maker, until):
            reason = "time: a repeat did not finish"
            break
        if bag not in used:
            used.append(bag)
        combined = solver.add_bag(bag)
        score = scores[name] = cv_score(combined, ctx)
        solver.consider(combined.name, combined.predictions(), score, kind="bag",
                        configs=solver.searched.get(bag.base.name, 1))
        # A bag whose average stopped improving is full: more repeats of it buy nothing.
        stalls[name] = 0 if ctx.direction.better(score, before) else stalls.get(name, 0) + 1
        if stalls[name] >= BAG_PATIENCE:
            bag.closed = f"no gain in its last {BAG_PATIENCE} repeats"
    report: dict[str, Any] = {"bags": [
        {"model": bag.base.name, "repeats": len(bag.repeats), "raw_score": solver.state.raw_scores[bag.name],
         "corrected_score": scores[bag.base.name], "closed": bag.closed} for bag in used]}
    report["stopped"] = reason
    solver.state.phases["bag"] = round(solver.state.elapsed(), 2)
    emit("bagging_done", reason=reason, bags=report["bags"])
    return report
