"""The solver (Agent K, section 3.2): race, tune, blend, select, under one time budget.

Run as `python -m solve_pipeline.solver WORKSPACE [--light] [--folds K] [--seed S]
[--time-budget SECONDS] [--out PATH] [--fusion auto|on|off] [--no-tune] [--blend-after N]
[--device auto|cpu|cuda]`.
A flag left out takes the run's solve settings from WORKSPACE/config.json (the runner passes none),
else the stand-alone defaults (no time budget); --light never reads config.json.
It imports the generated setup modules, so it must only run as the sandboxed solver subprocess.
Progress goes to stdout as JSON lines.

The budget is spent in phases, each adopting whatever beats the best so far and rewriting the
submission at once, so a valid submission exists from the first second (the constant model) and
only improves: the AutoML race (~50% of the budget, on folds that match the test: validation.py),
fine-tuning of pretrained networks when a timed probe says it fits, HEBO tuning rounds over the
leading families until they plateau (both until ~75%; improvement.py), finishing the race's pruned
families (until ~80%), bagging of the leaders over fresh partitions (until ~92%), blending of every
complete solution, and last the metric-aware decoding of class probabilities into labels. Every
finished model's probabilities are temperature-calibrated where the metric gains (calibration.py),
and a tuned model is adopted on a fresh partition's score, never on the folds that chose it.

A campaign may warm-start the solve through config.json's `warm_start` (see warm_start.py): its
families race first, and its configurations are HEBO's first trials. solve_result.json records what
was used and ignored, and the `timeline` of (elapsed s, best score so far) at each improvement.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Sequence

# Must precede the first OpenMP load (numpy/sklearn/lightgbm): on a busy 2-core machine
# spin-waiting threads made LightGBM with num_threads=2 measured 7-50x slower than passive waits.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
# Pretrained models load offline; their progress bars would only clutter the run's output.
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")

import numpy as np  # noqa: E402

from agentk.core.artifacts import SolveResult  # noqa: E402
from agentk.core.config import Device, Fusion, saved_config  # noqa: E402
from agentk.core.workspace import atomic_write_json  # noqa: E402
from solve_pipeline import blending, device  # noqa: E402
from solve_pipeline.automl import RaceOutcome, finish_survivors, race, revive  # noqa: E402
from solve_pipeline.cv import (  # noqa: E402
    CandidateRun, CVContext, Predictions, cv_score, emit, finish_run,
    normalise_proba, score_outputs, start_run,
)
from solve_pipeline.baseline_models import constant_candidate  # noqa: E402
from solve_pipeline.finetune_plan import finetune_options  # noqa: E402
from solve_pipeline.decoding import Decoder, choose_decoder, fit_evaluations  # noqa: E402
from solve_pipeline.outputs import (  # noqa: E402
    check_against_formatter, clear_candidates, formatted_submission, ranked_candidates,
    save_prediction_frames, write_candidate,
)
from solve_pipeline.registry import race_candidates  # noqa: E402
from solve_pipeline.setup_modules import SetupArtifacts  # noqa: E402
from solve_pipeline.submission_record import (  # noqa: E402
    SubmissionRecord, adopt_submission, setup_fingerprint,
)
from solve_pipeline.bagging import Bag  # noqa: E402
from solve_pipeline.calibration import calibrate_run  # noqa: E402
from solve_pipeline.improvement import bag_leaders, tune_rounds  # noqa: E402
from solve_pipeline.solve_inputs import SolveOptions, prepare, read_plan  # noqa: E402
from solve_pipeline.validation import RANDOM, Validation  # noqa: E402
from solve_pipeline.warm_start import WarmReport, ignore_configs, order_race  # noqa: E402

RACE_SHARE = 0.5
TUNE_UNTIL = 0.75
# Fine-tuning a pretrained network wins most where it applies (photos, text): it may run this far,
# leaving tuning whatever is left before TUNE_UNTIL (nothing, when it runs past it).
FINETUNE_UNTIL = 0.85
REVIVE_UNTIL = 0.8
BAG_UNTIL = 0.92
BLEND_UNTIL = 1.0  # less the decoding's projected need; a blender whose cost does not fit is dropped
DECODE_UNTIL = 1.0  # the decoder search is only started when its projected metric calls fit
DECODE_RESERVE_MAX = 0.05  # of the budget: a search dearer than this is not waited for
HARD_STOP = 0.97  # the race's first finisher may run this far when nothing else has finished
FINETUNE_FOLD_SLACK = 1.5  # a fine-tuning fold may run this far past its share of the estimate


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
        self.validation = validation
        self.bags: dict[str, Bag] = {}
        self._bag_runs: dict[str, CandidateRun] = {}
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

    def consider(self, name: str, predictions: dict[str, Predictions], score: float) -> None:
        self.state.cv[name] = score if math.isfinite(score) else None
        emit("model", model=name, score=score, elapsed_s=round(self.state.elapsed(), 2))
        save_prediction_frames(self.artifacts, self.ctx.features, predictions, name)
        if not self.options.light:
            record = write_candidate(self.artifacts, self.ctx.features, predictions, name, score)
            if record is not None:
                self.state.candidates.append(record)
        if self._adopt(predictions, score):
            self._write_submission()

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

    def _write_submission(self) -> None:
        """The current best goes to the submission only if it beats the file's recorded score,
        which may come from an earlier, killed solve of the same setup."""
        state = self.state
        if math.isfinite(state.best_score):
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
        adoption = adopt_submission(self.out, write, candidate, force=self.options.light)
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
        self.on_finished(constant)
        self.state.phases["constant"] = round(self.state.elapsed(), 2)

    def race(self) -> RaceOutcome:
        candidates = race_candidates(self.ctx.features, light=self.options.light, fusion=self.options.fusion,
                                     budget_s=self.options.time_budget, targets=self.ctx.targets)
        if self.warm is not None and self.warm_report is not None:
            candidates = order_race(candidates, self.warm, self.ctx.features, self.warm_report)
            emit("warm_start", phase="race", order=self.warm_report.race_order, sources=self.warm_report.sources,
                 ignored=[i for i in self.warm_report.ignored if "config" not in i and "configs" not in i])
        share = 1.0 if self.options.light or not self.options.tune else RACE_SHARE
        outcome = race(candidates, self.ctx, self.at(share), self.higher, self.on_finished,
                       hard_deadline=self.at(HARD_STOP))
        self.state.phases["race"] = round(self.state.elapsed(), 2)
        return outcome

    def finish_survivors(self, outcome: RaceOutcome) -> None:
        finish_survivors(outcome, self.ctx, self.at(TUNE_UNTIL), self.on_finished)
        self.state.phases["survivors"] = round(self.state.elapsed(), 2)

    def revive(self, outcome: RaceOutcome) -> None:
        revive(outcome, self.ctx, self.at(REVIVE_UNTIL), self.on_finished)
        self.state.phases["revive"] = round(self.state.elapsed(), 2)

    def finetune(self) -> dict[str, Any]:
        """Pretrained networks fine-tuned end to end, when their timed estimate fits before
        tuning's end; tuning then gets what is left. Each fold is capped near its estimate."""
        began = time.monotonic()
        try:
            options, notes = finetune_options(self.ctx.features, len(self.ctx.folds),
                                              self.at(FINETUNE_UNTIL) - time.monotonic())
        except Exception as error:  # noqa: BLE001 - a network that cannot load costs its option, not the solve
            options, notes = [], [f"fine-tuning unavailable: {type(error).__name__}: {str(error)[:200]}"]
        emit("finetune_plan", notes=notes, probe_s=round(time.monotonic() - began, 2))
        report: dict[str, Any] = {"notes": notes, "runs": []}
        for option in options:
            left = self.at(FINETUNE_UNTIL) - time.monotonic()
            if option.seconds > left:
                report["runs"].append({"model": option.candidate.name,
                                       "skipped": f"needs ~{option.seconds:.0f} s, {left:.0f} s left"})
                continue
            run = start_run(option.candidate, self.ctx)
            if run is None:
                continue
            fold_cap = FINETUNE_FOLD_SLACK * option.seconds / len(self.ctx.folds)
            finished = finish_run(run, self.ctx, self.at(FINETUNE_UNTIL), fold_cap_s=fold_cap)
            report["runs"].append({"model": run.name, "epochs": option.epochs, "finished": finished,
                                   "estimate_s": round(option.seconds, 1), "seconds": round(run.seconds, 1)})
            if finished:
                self.on_finished(run)
        self.state.phases["finetune"] = round(self.state.elapsed(), 2)
        return report

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

    def blend(self) -> dict[str, Any]:
        """Per target, blend every complete solution's OOF; adopted only if its nested CV wins."""
        solutions = [r for r in self.state.complete if r.name != "constant"]
        if len(solutions) < self.options.blend_after:
            return {"skipped": f"{len(solutions)} solutions < blend_after={self.options.blend_after}"}
        blended: dict[str, Predictions] = {}
        report: dict[str, Any] = {}
        deadline = self.at(BLEND_UNTIL) - self._decode_reserve()
        for spec in self.ctx.targets:
            task = spec.task if spec.is_classification else "regression"
            held = {t: p.oof for t, p in self.state.best.items()}

            def score_fn(_y: np.ndarray, pred: np.ndarray, column: str = spec.column,
                         held: dict = held, task: str = task) -> float:
                return score_outputs(self.ctx, None, {**held, column: blending.as_class_matrix(pred, task)})

            result = blending.blend(
                [blending.Solution(r.name, r.oof[spec.column], r.test[spec.column]) for r in solutions],
                self.ctx.y[spec.column], task, score_fn, self.higher,
                blend_after=self.options.blend_after, seed=self.ctx.seed, deadline=deadline)
            report[spec.column] = {"method": result.method, "score": result.score, "weights": result.weights,
                                   "single_scores": result.single_scores, "blend_scores": result.blend_scores}
            if result.dropped:
                report[spec.column]["dropped"] = result.dropped
                emit("blend_dropped", target=spec.column, dropped=result.dropped)
            if result.method != "best_single":
                oof, test = (blending.as_class_matrix(a, task) for a in (result.oof, result.test))
                if spec.is_classification:
                    oof, test = normalise_proba(oof), normalise_proba(test)
                blended[spec.column] = Predictions("blend", oof, test)
        if blended:
            full = {**self.state.best, **blended}
            self.consider("blend", full, score_outputs(self.ctx, None, {t: p.oof for t, p in full.items()}))
        self.state.phases["blend"] = round(self.state.elapsed(), 2)
        return report


    def _decode_reserve(self) -> float:
        """Seconds the decoding search after the blend will need (one metric call timed), kept
        from the blend when modest; a search dearer than DECODE_RESERVE_MAX is not waited for."""
        if self.ctx.surrogate or self.options.time_budget is None or not self.state.best:
            return 0.0
        calls = sum(3 * fit_evaluations(s.n_classes, s.classes) for s in self.ctx.targets if s.is_classification)
        if not calls:
            return 0.0
        began = time.monotonic()
        score_outputs(self.ctx, None, {t: p.oof for t, p in self.state.best.items()})
        need = (time.monotonic() - began) * calls
        return need if need <= DECODE_RESERVE_MAX * self.options.time_budget else 0.0

    def decode(self) -> dict[str, Any]:
        """Per classification target, a threshold or ordinal cut points instead of argmax, when a
        cross-fitted check says the setup's label metric gains (see decoding.py)."""
        if self.ctx.surrogate:
            return {"skipped": "ranking by a surrogate loss, which reads probabilities only"}
        decoded = dict(self.state.best)
        report: dict[str, Any] = {}
        score = self.state.best_score
        for spec in self.ctx.targets:
            if not spec.is_classification:
                continue
            oofs = {t: p.oof for t, p in decoded.items()}
            held = {t: p.decoder for t, p in decoded.items()}

            def scorer(decoder: Decoder, rows: np.ndarray, column: str = spec.column,
                       oofs: dict = oofs, held: dict = held) -> float:
                return score_outputs(self.ctx, rows, {t: o[rows] for t, o in oofs.items()}, {**held, column: decoder})

            choice = choose_decoder(decoded[spec.column].oof, spec.classes, scorer, self.higher, self.ctx.seed,
                                    deadline=self.at(DECODE_UNTIL))
            report[spec.column] = {"decoder": asdict(choice.decoder), "score": choice.score,
                                   "argmax_score": choice.argmax_score}
            if choice.skipped is not None:
                report[spec.column]["skipped"] = choice.skipped
                emit("decoding_skipped", target=spec.column, reason=choice.skipped)
            if choice.decoder.kind != "argmax" and self.ctx.direction.better(choice.score, score):
                current = decoded[spec.column]
                decoded[spec.column] = replace(current, model=f"{current.model}_{choice.decoder.kind}",
                                               decoder=choice.decoder)
                score = choice.score
        if decoded != self.state.best:
            name = "+".join(sorted({p.model for p in decoded.values()}))
            self.state.cv[name] = score
            emit("model", model=name, score=score, elapsed_s=round(self.state.elapsed(), 2))
            save_prediction_frames(self.artifacts, self.ctx.features, decoded, name)
            record = write_candidate(self.artifacts, self.ctx.features, decoded, name, score)
            if record is not None:
                self.state.candidates.append(record)
            self.state.best, self.state.best_score = decoded, score
            self._write_submission()
        self.state.phases["decode"] = round(self.state.elapsed(), 2)
        return report


def solve(options: SolveOptions) -> dict:
    began = time.monotonic()
    device.configure(options.device, say=lambda line: emit("device", message=line))
    artifacts, ctx, n_total, validation = prepare(options)
    out = options.out or artifacts.workspace / "submissions" / "submission.csv"
    solver = Solver(options, artifacts, ctx, out, validation)
    solver.state.started = began  # the budget covers feature building too
    features = ctx.features
    emit("validation", **validation.to_json())
    emit("start", n_train=features.n_train, n_train_total=n_total, n_test=features.n_test, folds=len(ctx.folds),
         targets=[s.column for s in ctx.targets], tab_features=len(features.tab_names),
         text_features=0 if features.text_train is None else features.text_train.shape[1],
         image_features=0 if features.image_train is None else features.image_train.shape[1])
    if not options.light:
        clear_candidates(artifacts)

    solver.constant_first()
    outcome = solver.race()
    tuning: dict[str, Any] = {"skipped": "light mode or --no-tune"}
    blend_report: dict[str, Any] = {"skipped": "light mode"}
    decoding: dict[str, Any] = {"skipped": "light mode"}
    finetune: dict[str, Any] = {"skipped": "light mode"}
    bagging: dict[str, Any] = {"skipped": "light mode"}
    if not options.light:
        finetune = solver.finetune()
        solver.finish_survivors(outcome)
        if options.tune:
            tuning = solver.tune()
        elif solver.warm is not None and solver.warm_report is not None:
            ignore_configs(solver.warm, None, "tuning is off", solver.warm_report)
        solver.revive(outcome)
        bagging = solver.bag()
        blend_report = solver.blend()
        decoding = solver.decode()

    state = solver.state
    if state.submission_path is None:
        raise RuntimeError("no candidate produced a submission")
    record = SolveResult.model_validate({
        **solver.adopted(),
        "higher_is_better": solver.higher,
        "metric": "surrogate" if ctx.surrogate else "setup",
        "cv": state.cv,
        "race": [asdict(e) for e in outcome.entries],
        "finetune": finetune,
        "tuning": tuning,
        "bagging": bagging,
        "validation": validation.to_json(),
        "raw_scores": state.raw_scores,
        "blend": blend_report,
        "decoding": decoding,
        "phases_s": state.phases,
        "folds": len(ctx.folds),
        "n_train": features.n_train,
        "n_train_total": n_total,
        "n_test": features.n_test,
        "light": options.light,
        "seed": options.seed,
        "time_budget_s": options.time_budget,
        "submission_path": str(state.submission_path),
        # The kept file goes first: on a tie it stays the submission, so it must rank first too.
        "candidates": ranked_candidates(solver.kept_candidate() + state.candidates, solver.higher),
        "elapsed_s": round(state.elapsed(), 3),
        "time_to_first_submission_s": round(state.first_submission_s or 0.0, 3),
        "timeline": state.timeline,
        "warm_start": solver.warm_report.to_json() if solver.warm_report is not None else None,
        "device": device.summary(),
    })
    result = record.to_json()
    atomic_write_json(SolveResult.path_in(artifacts.workspace / "solve"), result)
    emit("done", **{k: v for k, v in result.items()
                    if k not in ("race", "finetune", "tuning", "blend", "decoding", "timeline", "warm_start")})
    return result


def parse_args(argv: Sequence[str] | None = None) -> SolveOptions:
    # Every default is None = "not given": the value then comes from config.json or SolveOptions.
    parser = argparse.ArgumentParser(prog="python -m solve_pipeline.solver", description=__doc__)
    parser.add_argument("workspace", type=Path)
    parser.add_argument("--light", action="store_true", help="<= 600 rows, 2 folds, ~50 trees, no tuning")
    parser.add_argument("--folds", type=int, default=None)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--time-budget", type=float, default=None, help="seconds")
    parser.add_argument("--out", type=Path, default=None, help="submission path")
    parser.add_argument("--fusion", choices=[f.value for f in Fusion], default=None)
    parser.add_argument("--no-tune", dest="tune", action="store_const", const=False, default=None, help="skip HEBO tuning")
    parser.add_argument("--blend-after", type=int, default=None)
    parser.add_argument("--device", choices=[d.value for d in Device], default=None)
    args = parser.parse_args(argv)
    workspace = args.workspace.resolve()
    values = {} if args.light else _saved_settings(workspace)
    fusion = Fusion(args.fusion) if args.fusion is not None else None
    given = {"folds": args.folds, "seed": args.seed, "time_budget": args.time_budget, "fusion": fusion,
             "tune": args.tune, "blend_after": args.blend_after,
             "device": Device(args.device) if args.device is not None else None}
    values.update({k: v for k, v in given.items() if v is not None})
    for name in ("folds", "blend_after"):
        if name in values:
            values[name] = max(2, values[name])
    return SolveOptions(workspace=workspace, light=args.light,
                        out=args.out.resolve() if args.out is not None else None, **values)


def _saved_settings(workspace: Path) -> dict[str, Any]:
    """The run's solve settings under SolveOptions' names; empty without a run's config.json."""
    config = saved_config(workspace)
    if config is None:
        return {}
    solve = config.solve
    return {"folds": solve.folds, "seed": solve.seed, "time_budget": solve.time_budget_s, "fusion": solve.fusion,
            "tune": solve.tune, "blend_after": solve.blend_after, "warm_start": solve.warm_start,
            "device": solve.device}


def main(argv: Sequence[str] | None = None) -> int:
    from threadpoolctl import threadpool_limits

    options = parse_args(argv)
    try:
        # Multi-threaded BLAS/OpenMP inside sklearn spin-waits badly on a busy 2-core machine
        # (lbfgs measured 50x slower); LightGBM still applies its own num_threads per call.
        with threadpool_limits(limits=1):
            solve(options)
    except Exception as error:
        emit("error", message=f"{type(error).__name__}: {error}")
        print(f"solve failed: {type(error).__name__}: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
