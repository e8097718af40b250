"""HEBO tuning of one model family inside the solver: every trial is a full K-fold CV on the
solver's own folds and metric (probabilities calibrated as every finished run's are), so a tuned
model is compared with the race on equal terms.

The race already evaluated the family at its defaults; that result is handed to HEBO as a known
observation instead of being paid for again. There is no fixed trial count: a search runs until
its time is spent or it plateaus (PATIENCE trials in a row without a gain), and says which.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Callable

from agentk.core.metrics.direction import Direction
from solve_pipeline.base.baseline_models import ModelCandidate
from solve_pipeline.race.calibration import calibrate_run
from solve_pipeline.base.cv import CandidateRun, CVContext, emit, finish_run, start_run
from solve_pipeline.race.hebo_tool import HeboConfig, SearchParam, Trial, tune

# HEBO's model-based suggest() costs ~2 s on 2 cores: below a few trials, tuning is overhead.
MIN_TRIALS = 4
# Not a budget (Agent K's Table 5 stopped at 20, leaving most of a budget unused) but a bound on
# the GP's cubic cost; the plateau rule or the time ends a search long before it.
MAX_TRIALS = 300
PATIENCE = 15
TRIAL_TIME_FACTOR = 3.0
MIN_TRIAL_S = 5.0


@dataclass(frozen=True)
class Tunable:
    """A family HEBO may tune: its search space, its defaults inside that space, and a factory."""

    family: str
    space: list[SearchParam]
    defaults: dict[str, Any]
    build: Callable[[dict[str, Any]], ModelCandidate]
    portfolio: list[dict[str, Any]] = field(default_factory=list)  # proven points, tried first


@dataclass
class TuningOutcome:
    run: CandidateRun | None  # the best trial's complete predictions, when it beat the defaults
    trials: list[dict[str, Any]]
    planned_trials: int
    stopped: str | None = None  # "time", a plateau, or None when every planned trial ran
    best_params: dict[str, Any] | None = None  # the best trial's, when it beat the defaults


def affordable_trials(seconds_per_cv: float, budget_s: float) -> int:
    """How many full-CV trials fit, counting HEBO's own suggest time."""
    per_trial = max(seconds_per_cv, 0.1) + 2.0
    return int(min(MAX_TRIALS, budget_s // per_trial))


def tune_family(tunable: Tunable, base: CandidateRun, base_score: float, ctx: CVContext,
                budget_s: float, higher_is_better: bool,
                first: list[dict[str, Any]] | None = None, earlier: list[Trial] | None = None) -> TuningOutcome:
    """Tune `tunable` within `budget_s`; the returned run is complete and beats `base_score`.

    `first` points (inside the space: a warm start's configurations) are the first trials, run
    like any other; their trials are marked `warm` in the record and the events. `earlier` trials
    (a previous round's on this family) are observed, not re-run: a second round resumes the search.
    The record's trials are this round's only."""
    warm = list(first or [])
    # The family's proven configurations follow a warm start's (the first round only).
    proven = [p for p in tunable.portfolio if p not in warm and p != tunable.defaults] if not earlier else []
    first = warm + proven
    planned = affordable_trials(base.seconds, budget_s)
    if planned < MIN_TRIALS:
        emit("tuning_skipped", model=tunable.family, reason=f"only {planned} trials fit in {budget_s:.0f} s")
        return TuningOutcome(None, [], planned)
    deadline = time.monotonic() + budget_s
    best: dict[str, Any] = {"run": None, "score": base_score}

    def objective(params: dict[str, Any]) -> float:
        # Table 5's max_time per trial: a slow corner of the space (tiny learning rates, deep
        # trees) costs a few default-sized CVs at most, not the whole tuning budget.
        trial_deadline = min(deadline, time.monotonic() + max(TRIAL_TIME_FACTOR * base.seconds, MIN_TRIAL_S))
        run = start_run(tunable.build(params), ctx, name=f"{tunable.family}_tuned")
        if run is None or not finish_run(run, ctx, trial_deadline):
            raise TimeoutError("the trial's time ran out before its folds finished")
        score = calibrate_run(run, ctx)
        if Direction(higher_is_better).better(score, best["score"]):
            best["run"], best["score"], best["params"] = run, score, dict(params)
        return score

    reported = [0]

    def report(trial: Trial) -> None:
        index = reported[0]  # `first` points run first: the warm start's, then the portfolio's
        mark = {"warm": True} if index < len(warm) else ({"portfolio": True} if index < len(first) else {})
        reported[0] += 1
        emit("trial", model=tunable.family, params=trial.params, score=trial.score,
             seconds=round(trial.seconds, 2), error=trial.error, **mark)

    known = [Trial(dict(tunable.defaults), base_score, base.seconds)] if math.isfinite(base_score) else []
    n_defaults = len(known)
    known += [t for t in (earlier or []) if t.score is not None]
    config = HeboConfig(n_trials=planned, max_time_s=budget_s, seed=ctx.seed + len(earlier or []),
                        higher_is_better=higher_is_better, n_initial=min(5, planned),
                        patience=max(PATIENCE, len(first) + 1))
    result = tune(objective, tunable.space, config, on_trial=report, known=known, first=first)
    trials = [{**asdict(t), "seconds": round(t.seconds, 3)} for t in result.trials]
    for trial in trials[len(known):len(known) + len(warm)]:
        trial["warm"] = True
    for trial in trials[len(known) + len(warm):len(known) + len(first)]:
        trial["portfolio"] = True
    # The defaults' trial stays in the record (the search's starting point); earlier rounds' don't.
    trials = trials[:n_defaults] + trials[len(known):]
    return TuningOutcome(best["run"], trials, planned, result.stopped, best.get("params"))
