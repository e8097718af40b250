"""One solve's state and the single path every solution takes to the submission: `Solver.consider`
adopts what beats the best so far (per target) and rewrites the submission at once, unless an
earlier solve's file on disk still scores better. The race, tuning and bagging phases run from here;
fine-tuning, blending and decoding have their own modules (finetune_phase, blend_phase, decode_phase).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from solve_pipeline.phases import choice_phase
from solve_pipeline.race.automl import RaceOutcome, finish_survivors, race, revive
from solve_pipeline.race.bagging import Bag
from solve_pipeline.base.baseline_models import constant_candidate
from solve_pipeline.race.calibration import calibrate_run
from solve_pipeline.base.choice_rule import Evidence, Kind
from solve_pipeline.base.cv import CandidateRun, CVContext, Predictions, cv_score, emit, finish_run, score_outputs, start_run
from solve_pipeline.phases.improvement import bag_leaders, tune_rounds
from solve_pipeline.phases.outputs import check_against_formatter, formatted_submission, save_prediction_frames, write_candidate
from solve_pipeline.race.registry import race_candidates
from solve_pipeline.base.setup_modules import SetupArtifacts
from solve_pipeline.inputs.solve_inputs import SolveOptions, read_plan
from solve_pipeline.base.submission_record import KnownSubmission, SubmissionRecord, adopt_submission, setup_fingerprint
from solve_pipeline.inputs.validation import RANDOM, Validation
from solve_pipeline.race.warm_start import WarmReport, order_race

if TYPE_CHECKING:
    from solve_pipeline.phases.finetune_plan import FinetuneOption

RACE_SHARE = 0.5
TUNE_UNTIL = 0.75
REVIVE_UNTIL = 0.8
BAG_UNTIL = 0.92
HARD_STOP = 0.97  # the race's first finisher may run this far when nothing else has finished


@dataclass
class SolveState:
    started: float
    best: dict[str, Predictions] = field(default_factory=dict)
    best_score: float = math.nan
    cv: dict[str, float | None] = field(default_factory=dict)
    complete: list[CandidateRun] = field(default_factory=list)
    first_submission_s: float | None = None
    submission_path: Path | None = None
    candidates: list[dict[str, object]] = field(default_factory=list)
    phases: dict[str, float] = field(default_factory=dict)
    # (seconds since the start, best validation score so far), one point per adopted improvement.
    timeline: list[tuple[float, float]] = field(default_factory=list)
    # A bagged or tuned solution's score on the partition that chose it, beside its corrected
    # score in `cv` (both reported: the corrected one decides).
    raw_scores: dict[str, float] = field(default_factory=dict)
    # The record of the submission on disk when an earlier solve's file beat everything this one
    # wrote (a resumed run); None while the file on disk is this solve's own best.
    kept: SubmissionRecord | None = None

    def elapsed(self) -> float:
        return time.monotonic() - self.started


class Solver:
    """One solve over one workspace: owns the state every phase adopts into."""

    def __init__(self, options: SolveOptions, artifacts: SetupArtifacts, ctx: CVContext, out: Path,
                 validation: Validation = RANDOM) -> None:
        self.options, self.artifacts, self.ctx, self.out = options, artifacts, ctx, out
        self.state = SolveState(started=time.monotonic())
        self.fingerprint = setup_fingerprint(artifacts.setup_dir, list(ctx.features.test_ids))
        # Read once, before any model-written code ran: later, a record on disk is no evidence.
        self.known = KnownSubmission(out)
        self.validation = validation
        self.bags: dict[str, Bag] = {}
        # The fine-tuning plan's options (finetune_phase.py); empty where nothing fits or applies.
        self.finetune_options: list[FinetuneOption] = []
        self._bag_runs: dict[str, CandidateRun] = {}
        # What the choice rule weighs (choice_phase.py): each candidate's evidence and predictions,
        # and the configurations each tuned run's search tried (by run name).
        self.evidence: dict[str, Evidence] = {}
        self.pool: dict[str, dict[str, Predictions]] = {}
        self.pool_bytes: dict[str, int] = {}
        self.unweighed: list[str] = []  # candidates left out of the rule: the pool was full
        self.searched: dict[str, int] = {}
        warm = options.warm_start if not options.light else None
        self.warm, self.warm_report = warm, (WarmReport(sources=list(warm.sources)) if warm is not None else None)

    @property
    def metric_name(self) -> str:
        if self.ctx.surrogate:
            return "surrogate"
        return str(read_plan(self.artifacts).get("metric") or "setup")

    def fold_maker(self, seed: int) -> list[tuple]:
        """A fresh partition of the solve's rows, of the solve's validation kind."""
        return self.validation.folds(self.ctx.features.n_train, len(self.ctx.folds), seed, self.strata)

    @property
    def strata(self) -> np.ndarray | None:
        return next((self.ctx.y[s.column] for s in self.ctx.targets if s.is_classification), None)

    @property
    def higher(self) -> bool:
        return self.ctx.higher_is_better

    def at(self, share: float) -> float:
        """The monotonic time by which `share` of the budget is spent (no budget: ~forever)."""
        budget = self.options.time_budget if self.options.time_budget is not None else 1e9
        return self.state.started + share * budget

    # ---- adoption: the one path every solution takes to the submission ----

    def consider(self, name: str, predictions: dict[str, Predictions], score: float, kind: Kind = "model",
                 configs: int = 1, families: tuple[str, ...] = ()) -> None:
        """`kind`, `configs` (how many configurations a search tried to find it) and `families` are
        what the choice rule weighs (choice_rule.py)."""
        self.state.cv[name] = score if math.isfinite(score) else None
        choice_phase.record(self, name, predictions, score, kind, configs, families)
        emit("model", model=name, score=score, elapsed_s=round(self.state.elapsed(), 2))
        if not self.ctx.features.big:  # for inspection only: at a million rows, seconds and 100s of MB each
            save_prediction_frames(self.artifacts, self.ctx.features, predictions, name)
        if not self.options.light:
            record = write_candidate(self.artifacts, self.ctx.features, predictions, name, score)
            if record is not None:
                self.state.candidates.append(record)
        if self._adopt(predictions, score):
            self.write_submission()

    def on_finished(self, run: CandidateRun) -> None:
        self.state.complete.append(run)
        score = calibrate_run(run, self.ctx)  # first: it replaces the run's prediction arrays
        self.consider(run.name, run.predictions(), score)

    def _adopt(self, results: dict[str, Predictions], own_score: float) -> bool:
        """Take a solution's targets into the best set where they improve the whole frame's score."""
        state = self.state
        if not state.best:
            state.best, state.best_score = dict(results), own_score
            return True
        improved = False
        # One target at a time with the others held at their best (one target: plain comparison).
        for spec in self.ctx.targets:
            trial = {**state.best, spec.column: results[spec.column]}
            score = score_outputs(self.ctx, None, {t: p.oof for t, p in trial.items()})
            if self.ctx.direction.better(score, state.best_score):
                state.best, state.best_score, improved = trial, score, True
        return improved

    def write_submission(self, chosen: bool = False) -> None:
        """The current best goes to the submission only if it beats the file's recorded score,
        which may come from an earlier, killed solve of the same setup. `chosen`: the choice rule
        put a candidate of lower CV in place of the best (choice_phase.py); it is written regardless
        and, being no improvement, leaves the timeline alone."""
        state = self.state
        if math.isfinite(state.best_score) and not chosen:
            state.timeline.append((round(state.elapsed(), 3), state.best_score))
        models = sorted({p.model for p in state.best.values()})
        candidate = SubmissionRecord(
            model="+".join(models), models_per_target={t: p.model for t, p in state.best.items()},
            validation_score=state.best_score if math.isfinite(state.best_score) else None,
            metric=self.metric_name, higher_is_better=self.higher, setup_fingerprint=self.fingerprint)
        best = dict(state.best)

        def write(tmp: Path) -> None:  # formatted only when it will be written
            formatted_submission(self.artifacts, self.ctx.features, best).to_csv(tmp, index=False)

        # The meta check's light solve must show that this setup writes a submission at all.
        adoption = adopt_submission(self.out, write, candidate, force=self.options.light or chosen, known=self.known)
        if state.first_submission_s is None:
            state.first_submission_s = state.elapsed()
        state.submission_path = self.out
        if not adoption.written:
            state.kept = adoption.record
            emit("submission_kept", path=str(self.out), model=candidate.model,
                 validation_score=candidate.validation_score, reason=adoption.reason,
                 elapsed_s=round(state.elapsed(), 2))
            return
        state.kept = None
        emit("submission", path=str(self.out), model=candidate.model, validation_score=state.best_score,
             elapsed_s=round(state.elapsed(), 2))
        check_against_formatter(self.artifacts, self.out)

    def keep_own_submission(self) -> None:
        """A file on disk that is neither this solve's nor the earlier one it found (model-written
        code may have forged it and its record) is replaced by this solve's best."""
        if self.state.best and self.known.on_disk() is None:
            emit("submission_foreign", path=str(self.out), reason="the file on disk is not one this solve knows")
            self.write_submission()

    def adopted(self) -> dict[str, Any]:
        """What the submission on disk is: this solve's best, or an earlier solve's better file
        that it did not beat (reported as that file's model and score, this solve's beside it)."""
        state = self.state
        chosen = {t: p.model for t, p in state.best.items()}
        names = sorted(set(chosen.values()))
        own = {
            "validation_score": state.best_score if math.isfinite(state.best_score) else None,
            "model": names[0] if len(names) == 1 else ",".join(f"{t}={m}" for t, m in chosen.items()),
            "models_per_target": chosen,
        }
        kept = state.kept
        if kept is None:
            return {**own, "submission_from": "this_solve"}
        return {"validation_score": kept.validation_score, "model": kept.model,
                "models_per_target": kept.models_per_target or {}, "submission_from": "earlier_solve",
                "this_solve": own}

    def kept_candidate(self) -> list[dict[str, object]]:
        """An earlier solve's kept submission stays a candidate (its own candidate file was cleared)."""
        kept = self.state.kept
        if kept is None or self.options.light or kept.validation_score is None:
            return []
        try:
            path = self.out.resolve().relative_to(self.artifacts.workspace)
        except ValueError:
            return []
        return [{"model": kept.model, "validation_score": kept.validation_score, "path": path.as_posix(),
                 "earlier_solve": True}]

    # ---- phases ----

    def constant_first(self) -> None:
        """The floor, and the first valid submission within seconds of the start."""
        constant = start_run(constant_candidate(), self.ctx)
        finish_run(constant, self.ctx, None)
        score = cv_score(constant, self.ctx)
        if not math.isfinite(score) and not self.ctx.surrogate:
            # The setup's metric cannot score even class frequencies: rank by a surrogate instead
            # (still graded by the real metric later), rather than adopting models blindly.
            self.ctx.surrogate = True
            score = cv_score(constant, self.ctx)
            emit("metric_fallback", reason="the setup's metric returned no score; ranking by log loss / squared error")
        # Not calibrated: the class frequencies are already the best constant probabilities.
        self.state.complete.append(constant)
        self.consider(constant.name, constant.predictions(), score, kind="constant")
        self.state.phases["constant"] = round(self.state.elapsed(), 2)

    def race(self) -> RaceOutcome:
        candidates = race_candidates(self.ctx.features, light=self.options.light, fusion=self.options.fusion,
                                     budget_s=self.options.time_budget, targets=self.ctx.targets)
        if self.warm is not None and self.warm_report is not None:
            candidates = order_race(candidates, self.warm, self.ctx.features, self.warm_report)
            emit("warm_start", phase="race", order=self.warm_report.race_order, sources=self.warm_report.sources,
                 ignored=[i for i in self.warm_report.ignored if "config" not in i and "configs" not in i])
        share = 1.0 if self.options.light or not self.options.tune else RACE_SHARE
        # A budget of zero asks for the constant alone; any other budget gets a real model.
        outcome = race(candidates, self.ctx, self.at(share), self.higher, self.on_finished,
                       hard_deadline=self.at(HARD_STOP), past_the_end=self.options.time_budget != 0)
        self.state.phases["race"] = round(self.state.elapsed(), 2)
        return outcome

    def finish_survivors(self, outcome: RaceOutcome) -> None:
        finish_survivors(outcome, self.ctx, self.at(TUNE_UNTIL), self.on_finished)
        self.state.phases["survivors"] = round(self.state.elapsed(), 2)

    def revive(self, outcome: RaceOutcome) -> None:
        revive(outcome, self.ctx, self.at(REVIVE_UNTIL), self.on_finished)
        self.state.phases["revive"] = round(self.state.elapsed(), 2)

    def tune(self) -> dict[str, Any]:
        return tune_rounds(self, self.at(TUNE_UNTIL), self.at(BAG_UNTIL))

    def bag(self) -> dict[str, Any]:
        return bag_leaders(self, self.at(BAG_UNTIL))

    def add_bag(self, bag: Bag) -> CandidateRun:
        """The bag's combined run (it has an honest run) replaces its earlier one among the complete
        solutions, for blending; returned for scoring."""
        combined = bag.combined()
        assert combined is not None, "a bag is added once it holds an honest run"
        name = bag.base.name
        previous = self._bag_runs.get(name)
        raw = self.state.raw_scores.get(previous.name) if previous is not None else None
        self.state.raw_scores[combined.name] = cv_score(bag.base, self.ctx) if raw is None else raw
        self.state.complete = [r for r in self.state.complete if r is not previous]
        self.bags[name], self._bag_runs[name] = bag, combined
        self.state.complete.append(combined)
        return combined
