"""Repeats of one configuration over fresh fold partitions: honest scores and bagged predictions.

A tuned model's CV on the folds it was tuned on is optimistic (HEBO keeps whatever was lucky on
that partition), and a single partition's CV of small data is noisy. Refitting the same
configuration on a fresh partition (other folds, another model seed) answers both: its
out-of-fold score is honest for that configuration (corrected), and averaging repeats is seed
bagging (test predictions from every repeat's fold models, OOF from the honest repeats).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np

from solve_pipeline.race.calibration import calibrate_run
from solve_pipeline.base.cv import CandidateRun, CVContext, cv_score, finish_run, start_run

# seed -> a fresh partition of the train rows, of the solve's validation kind.
FoldMaker = Callable[[int], list[tuple]]
# Beyond this many repeats, averaging measured no gain worth another CV.
MAX_REPEATS = 6
REPEAT_SEED_STEP = 7919  # far apart, so a repeat's partition never equals the solver's own


@dataclass
class Bag:
    """One configuration's runs: `base` on the solver's partition, then fresh repeats."""

    base: CandidateRun
    base_honest: bool  # False when the base partition chose the configuration (a tuned run)
    repeats: list[CandidateRun] = field(default_factory=list)
    closed: str | None = None  # why no more repeats are worth it, once that is known

    @property
    def name(self) -> str:
        return f"{self.base.name}_bag{1 + len(self.repeats)}"

    @property
    def honest(self) -> list[CandidateRun]:
        return ([self.base] if self.base_honest else []) + self.repeats

    @property
    def seconds_per_repeat(self) -> float:
        runs = [self.base, *self.repeats]
        return float(np.mean([r.seconds for r in runs]))

    def combined(self) -> CandidateRun | None:
        """One run holding the bag's predictions (None until an honest run exists): OOF averaged
        over the honest runs, test over every run."""
        honest = self.honest
        if not honest:
            return None
        every = [self.base, *self.repeats]
        oof = {t: np.mean([r.oof[t] for r in honest], axis=0) for t in self.base.oof}
        test = {t: np.mean([r.test[t] for r in every], axis=0) for t in self.base.test}
        run = CandidateRun(self.name, self.base.candidate, None, None, oof, test,
                           done=list(self.base.done), seconds=sum(r.seconds for r in every))
        run.calibration = {}  # each repeat was calibrated on its own partition
        return run


def add_repeat(bag: Bag, ctx: CVContext, folds_for: FoldMaker, deadline: float) -> bool:
    """Fit one more repeat on a fresh partition; False when it could not finish by `deadline`."""
    k = 1 + len(bag.repeats)
    fresh = replace(ctx, folds=folds_for(ctx.seed + k * REPEAT_SEED_STEP), seed=ctx.seed + k)
    run = start_run(bag.base.candidate, fresh, name=f"{bag.base.name}_r{k}")
    if run is None or not finish_run(run, fresh, deadline):
        return False
    calibrate_run(run, fresh)
    bag.repeats.append(run)
    return True


def corrected_score(bag: Bag, ctx: CVContext) -> float:
    run = bag.combined()
    return cv_score(run, ctx) if run is not None else math.nan
