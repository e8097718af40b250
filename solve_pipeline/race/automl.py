"""The tabular AutoML race: model families under K-fold CV with successive halving.

The first family with usable features (the catalog lists the cheapest, or on images the frozen
pretrained features, first) is finished at once, so a real model replaces the constant submission
early whatever the budget. Rung one then fits a single
fold of every other family; the weaker half (by that fold's metric) is dropped, and the survivors
finish their remaining folds cheapest first. Every finished family keeps its OOF and test
predictions for blending.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Callable, Literal

from agentk.core.metrics.direction import Direction
from solve_pipeline.base.baseline_models import ModelCandidate
from solve_pipeline.base.cv import CandidateRun, CVContext, FoldOutOfTime, emit, finish_run, fit_fold, start_run

# Blending needs three solutions (Agent K's blend_after), so halving never leaves fewer.
MIN_SURVIVORS = 3
RUNG_ONE_MIN_S = 5.0
FOLD_CAP_FACTOR = 1.5
CHEAP_S = 2.0
BIG_PACE_SHARE = 0.5  # a family whose remaining folds are projected this cheap is finished past the deadline


@dataclass
class RaceEntry:
    family: str
    status: Literal["finished", "pruned", "failed", "skipped", "out_of_time"]
    first_fold_score: float | None = None
    seconds: float = 0.0
    reason: str | None = None


def survivors(scored: list[tuple[CandidateRun, float]], higher_is_better: bool,
              keep_at_least: int = MIN_SURVIVORS) -> list[CandidateRun]:
    """Top half by first-fold score (at least `keep_at_least`), best first; unscored runs last."""
    finite = [(run, score) for run, score in scored if math.isfinite(score)]
    best_first = Direction(higher_is_better).ranked(finite, key=lambda item: item[1])
    keep = max(keep_at_least, math.ceil(len(scored) / 2))
    return [run for run, _ in best_first[:keep]]


@dataclass
class RaceOutcome:
    entries: list[RaceEntry]
    pruned: list[CandidateRun]  # pruned or stopped by the deadline: finished later if time is left
    # Families the race's time ran out before: started later, in race order, if time is left.
    unstarted: list[ModelCandidate] = field(default_factory=list)


def race(candidates: list[ModelCandidate], ctx: CVContext, deadline: float, higher_is_better: bool,
         on_finished: Callable[[CandidateRun], None], hard_deadline: float | None = None,
         past_the_end: bool = True) -> RaceOutcome:
    """Run the race until every survivor finishes or the deadline passes.

    Until one family has finished, the race may run on to `hard_deadline` (the end of the whole
    budget), and the first family with features finishes even past it (unless not `past_the_end`):
    a real model beats the constant, however little time is left for anything else.
    """
    hard = deadline if hard_deadline is None else max(deadline, hard_deadline)
    entries: dict[str, RaceEntry] = {}
    rung: list[tuple[CandidateRun, float]] = []
    # Rung one may spend about half the race; a family slower than its share is cut short there
    # (boosting keeps the trees it has), which is how a slow family loses on a small budget.
    box = max(RUNG_ONE_MIN_S, 0.5 * (deadline - time.monotonic()) / max(len(candidates), 1))
    paced = False
    unstarted: list[ModelCandidate] = []
    for candidate in candidates:
        # The first family with usable features sets the pace: one whose features cannot be
        # built (no pretrained network, no text) passes the role on.
        pace_setter = not paced
        entry = entries[candidate.name] = RaceEntry(candidate.name, "skipped")
        # The pace-setter runs even when the budget went to building the features (a loaded
        # machine, a tiny budget): seconds over the budget beat submitting the constant.
        cutoff = deadline
        if pace_setter:
            cutoff = math.inf if past_the_end else hard
        if time.monotonic() > cutoff:
            entry.status, entry.reason = "out_of_time", "the race's time budget was spent before rung one"
            emit("skip", model=candidate.name, reason=entry.reason)
            unstarted.append(candidate)
            continue
        try:
            run = start_run(candidate, ctx)
            if run is None:
                entry.reason = "no usable features"
                continue
            paced = True
            first_deadline = hard
            if pace_setter:
                # One family's folds could eat the whole budget (a big table; a logistic model over
                # the embeddings of thousands of photos of 120 breeds, after the embedding took its
                # share): the pace-setter's folds share the time left to the hard stop (half the
                # race on a big table), and a model at its cap keeps what it reached (boosting its
                # trees, lbfgs its coefficients).
                share = (BIG_PACE_SHARE * (deadline - time.monotonic()) if ctx.features.big
                         else hard - time.monotonic())
                first_deadline = min(hard, time.monotonic() + max(RUNG_ONE_MIN_S, share / len(ctx.folds)))
            score = fit_fold(run, 0, ctx, first_deadline if pace_setter else min(deadline, time.monotonic() + box))
        except Exception as error:  # noqa: BLE001 - one broken family must not sink the race
            entry.status, entry.reason = "failed", f"{type(error).__name__}: {error}"
            emit("skip", model=candidate.name, reason=entry.reason)
            continue
        entry.first_fold_score = score if math.isfinite(score) else None
        entry.seconds = run.seconds
        if pace_setter:
            finish_cheapest_first([run], entries, ctx, hard, on_finished, first_deadline=hard)
        else:
            rung.append((run, score))

    kept = survivors(rung, higher_is_better, keep_at_least=MIN_SURVIVORS - 1)
    for run, _ in rung:
        if run not in kept:
            entries[run.name].status = "pruned"
            emit("pruned", model=run.name, first_fold_score=entries[run.name].first_fold_score)
    finish_cheapest_first(kept, entries, ctx, deadline, on_finished,
                          first_deadline=None if any(e.status == "finished" for e in entries.values()) else hard)
    # Survivors the deadline stopped before they finished are revived with the pruned ones.
    unfinished = [run for run, _ in rung if entries[run.name].status in ("pruned", "out_of_time")]
    return RaceOutcome(list(entries.values()), unfinished, unstarted)


def finish_cheapest_first(runs: list[CandidateRun], entries: dict[str, RaceEntry], ctx: CVContext,
                          deadline: float, on_finished: Callable[[CandidateRun], None],
                          first_deadline: float | None = None) -> None:
    """Complete the runs' folds; several complete solutions (for blending) beat one slow one.

    The first run to finish may use `first_deadline` instead of `deadline`."""
    finished_any = first_deadline is None
    exempt = not finished_any  # one family only may run past the budget
    for run in sorted(runs, key=lambda r: r.seconds):
        entry = entries[run.name]
        limit: float | None = deadline if finished_any else max(deadline, first_deadline)
        remaining = limit - time.monotonic()
        expected = run.seconds * (len(ctx.folds) - len(run.done)) + ctx.adopt_s
        fold_cap_s = max(FOLD_CAP_FACTOR * run.seconds / max(len(run.done), 1), RUNG_ONE_MIN_S)
        if exempt:
            # Nothing real has finished: the cheapest family finishes even past the budget, since a
            # constant submission is no submission to a user. Its fold cap bounds it (about 1.5x
            # its remaining folds' estimate, at most their share of the time left), and a busy
            # machine cannot stop it between folds.
            exempt = False
            folds_left = max(len(ctx.folds) - len(run.done), 1)
            fold_cap_s = max(min(fold_cap_s, remaining / folds_left), RUNG_ONE_MIN_S)
            limit = None
        elif expected <= CHEAP_S and time.monotonic() + expected <= limit + CHEAP_S:
            # Seconds to finish (naive Bayes, a small linear model): worth a complete solution, a
            # few seconds past the deadline at most (many cheap families must not add up to more).
            limit = max(limit, time.monotonic() + 1.5 * CHEAP_S)
        elif expected > 1.2 * remaining:
            # A family that cannot finish in time would only burn the budget the next ones need.
            entry.status = "out_of_time"
            entry.reason = f"needs ~{expected:.0f} s, {max(remaining, 0):.0f} s left"
            emit("skip", model=run.name, reason=entry.reason)
            continue
        try:
            # Later folds get about the first fold's time: a family cut short in rung one stays
            # cut alike, and the estimate above stays honest.
            finished = finish_run(run, ctx, limit, fold_cap_s=fold_cap_s)
        except Exception as error:  # noqa: BLE001
            entry.status, entry.reason = "failed", f"{type(error).__name__}: {error}"
            emit("skip", model=run.name, reason=entry.reason)
            continue
        entry.seconds = run.seconds
        if not finished:
            entry.status, entry.reason = "out_of_time", "deadline passed between folds"
            continue
        entry.status = "finished"
        finished_any = True
        adopting = time.monotonic()
        on_finished(run)
        ctx.adopt_s = time.monotonic() - adopting


def finish_survivors(outcome: RaceOutcome, ctx: CVContext, deadline: float,
                     on_finished: Callable[[CandidateRun], None]) -> None:
    """Complete the survivors of rung one that the race's deadline stopped: they earned their place
    on one fold (spooky's character n-gram model, 0.405 beside the best single 0.365, stopped behind
    a slow pretrained embedding), and a complete strong family feeds the blend more than tuning's
    last trials do. Pruned families wait for `revive`."""
    entries = {e.family: e for e in outcome.entries}
    stopped = [run for run in outcome.pruned if entries[run.name].status == "out_of_time"]
    finish_cheapest_first(stopped, entries, ctx, deadline, on_finished)
    outcome.pruned = [run for run in outcome.pruned if entries[run.name].status != "finished"]


def revive(outcome: RaceOutcome, ctx: CVContext, deadline: float,
           on_finished: Callable[[CandidateRun], None]) -> None:
    """Spend left-over time finishing pruned (or deadline-stopped) families: weaker alone, they can
    still help a blend."""
    entries = {e.family: e for e in outcome.entries}
    finish_cheapest_first(outcome.pruned, entries, ctx, deadline, on_finished)
    # Then the families never started (a short budget's race ends before a cheap family's turn:
    # naive Bayes behind a slow logistic model): one fold each, finished when it fits.
    for candidate in outcome.unstarted:
        if time.monotonic() + RUNG_ONE_MIN_S > deadline:
            break
        entry = entries[candidate.name]
        try:
            run = start_run(candidate, ctx)
            if run is None:
                entry.status, entry.reason = "skipped", "no usable features"
                continue
            fit_fold(run, 0, ctx, deadline, stop_between_targets=True)
        except FoldOutOfTime as stopped:
            entry.status, entry.reason = "out_of_time", str(stopped)
            emit("skip", model=candidate.name, reason=entry.reason)
            continue
        except Exception as error:  # noqa: BLE001 - one broken family must not sink the solve
            entry.status, entry.reason = "failed", f"{type(error).__name__}: {error}"
            emit("skip", model=candidate.name, reason=entry.reason)
            continue
        entry.first_fold_score, entry.seconds = run.fold_scores.get(0), run.seconds
        finish_cheapest_first([run], entries, ctx, deadline, on_finished)
