"""The solver (Agent K, section 3.2): race, tune, blend, select, under one time budget.

Run as `python -m solve_pipeline.solver WORKSPACE [--light] [--folds K] [--seed S]
[--time-budget SECONDS] [--out PATH] [--fusion auto|on|off] [--no-tune] [--blend-after N]
[--device auto|cpu|cuda] [--image-backbone PATH]`.
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
complete solution, and last the metric-aware decoding of class probabilities into labels (the phases
live in solve_state.py, finetune_phase.py, blend_phase.py and decode_phase.py). Every
finished model's probabilities are temperature-calibrated where the metric gains (calibration.py),
and a tuned model is adopted on a fresh partition's score, never on the folds that chose it.

A campaign may warm-start the solve through config.json's `warm_start` (see warm_start.py): its
families race first, and its configurations are HEBO's first trials. solve_result.json records what
was used and ignored, and the `timeline` of (elapsed s, best score so far) at each improvement.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any, Sequence

from agentk.core.records.config import Device, Fusion, saved_config
from agentk.core.records.results import SolveResult
from agentk.core.records.workspace import atomic_write_json
from solve_pipeline.networks import device
from solve_pipeline.base.choice_rule import DEFAULT_RULE, RULES
from solve_pipeline.base.cv import emit
from solve_pipeline.inputs.join_selection import select_joins
from solve_pipeline.phases.outputs import clear_candidates, ranked_candidates
from solve_pipeline.pixels.target import picture_target
from solve_pipeline.inputs.solve_inputs import SolveOptions, prepare, read_plan
from solve_pipeline.phases.solve_state import Solver
from solve_pipeline.text_to_text.solve import solve_texts, text_target

# The phases after the race, the LLM's loop, the predictor's export and the pixel solve are imported
# where they run: the setup's light solve (--light, on every run) uses none of them.


def solve(options: SolveOptions) -> dict:
    began = time.monotonic()
    if picture_target(options.workspace / "setup") is not None:
        # A picture target is learnt pixel by pixel: rows of pixels do not fit the table race.
        from solve_pipeline.pixels.solve import solve_pictures

        out = options.out or options.workspace / "submissions" / "submission.csv"
        return solve_pictures(options.workspace, out, options.time_budget, options.seed, options.light)
    if text_target(options.workspace / "setup") is not None:
        # A text rewritten as text: memorised pairs and spelling rules, not the table race.
        out = options.out or options.workspace / "submissions" / "submission.csv"
        return solve_texts(options.workspace, out, options.time_budget, options.seed, options.light)
    device.configure(options.device, say=lambda line: emit("device", message=line))
    artifacts, ctx, n_total, validation = prepare(options)
    if options.image_backbone is not None and ctx.features.image_paths_train is not None:
        from solve_pipeline.images import image_backbones_local  # lazy: torch, which a tabular solve never loads

        image_backbones_local.configure(options.image_backbone, prewarm=True)
    out = options.out or artifacts.workspace / "submissions" / "submission.csv"
    solver = Solver(options, artifacts, ctx, out, validation)
    solver.state.started = began  # the budget covers feature building too
    features = ctx.features
    emit("validation", **validation.to_json())
    if ctx.forecast is not None:
        emit("forecast", **ctx.forecast)
    emit("start", n_train=features.n_train, n_train_total=n_total, n_test=features.n_test, folds=len(ctx.folds),
         targets=[s.column for s in ctx.targets], tab_features=len(features.tab_names),
         text_features=0 if features.text_train is None else features.text_train.shape[1],
         image_features=0 if features.image_train is None else features.image_train.shape[1])
    if features.audio_note:
        emit("audio", message=features.audio_note)
    if not options.light:
        clear_candidates(artifacts)

    solver.constant_first()
    # Joined side tables that do not improve CV leave the features before any family reads them
    # (after the constant model: a valid submission first, and the metric known to score).
    joins = select_joins(ctx, read_plan(artifacts), options.time_budget, options.light)
    outcome = solver.race()
    tuning: dict[str, Any] = {"skipped": "light mode or --no-tune"}
    blend_report: dict[str, Any] = {"skipped": "light mode"}
    decoding: dict[str, Any] = {"skipped": "light mode"}
    finetune: dict[str, Any] = {"skipped": "light mode"}
    llm_solve: dict[str, Any] | None = None  # recorded only when an LLM took part
    predictor: dict[str, Any] = {"skipped": "light mode"}
    bagging: dict[str, Any] = {"skipped": "light mode"}
    choice: dict[str, Any] = {"skipped": "light mode", "rule": "max_cv"}
    if not options.light:
        from solve_pipeline.export.saved import save_predictor
        from solve_pipeline.llm import llm_loop
        from solve_pipeline.phases import blend_phase, choice_phase, decode_phase, finetune_phase
        from solve_pipeline.race.warm_start import ignore_configs

        finetune = finetune_phase.finetune(solver, outcome)
        solver.finish_survivors(outcome)
        # The LLM's turn (only when the run turned it on): its actions add candidates; the expert's
        # middle phases still run when it hands the decision back.
        guided = llm_loop.decide(solver, outcome) if options.llm_solve else None
        if guided is not None:
            llm_solve = guided.record.to_json()
        if guided is None or guided.expert_resumes:
            if options.tune:
                tuning = solver.tune()
            elif solver.warm is not None and solver.warm_report is not None:
                ignore_configs(solver.warm, None, "tuning is off", solver.warm_report)
            solver.revive(outcome)
            bagging = solver.bag()
        else:
            tuning = bagging = {"skipped": f"the LLM solve policy: {guided.record.ended}"}
        blend_report = blend_phase.blend(solver) if guided is None or guided.blend is None else guided.blend
        # Before decoding: the labels' thresholds are fitted to the candidate that will be submitted.
        choice = choice_phase.choose(solver)
        decoding = decode_phase.decode(solver)
        solver.keep_own_submission()
        try:
            predictor = save_predictor(solver)
        except OSError as error:  # the submission stands without its predictor
            predictor = {"exportable": False, "reason": f"the predictor could not be written: {error}"}

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
        "joins": joins,
        **({"forecast": ctx.forecast} if ctx.forecast is not None else {}),
        "raw_scores": state.raw_scores,
        "blend": blend_report,
        "decoding": decoding,
        "choice": choice,
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
        "image_backbone": _image_backbone_summary(),
        **({"llm_solve": llm_solve} if llm_solve is not None else {}),
        "predictor": {k: v for k, v in predictor.items() if k in ("exportable", "reason", "skipped")},
    })
    result = record.to_json()
    atomic_write_json(SolveResult.path_in(artifacts.workspace / "solve"), result)
    emit("done", **{k: v for k, v in result.items()
                    if k not in ("race", "finetune", "tuning", "blend", "decoding", "choice", "timeline", "warm_start", "llm_solve")})
    return result


def _image_backbone_summary() -> dict[str, Any] | None:
    """What the user's own image models did, where images were embedded (only then is the module
    loaded: a tabular solve never imports torch)."""
    local = sys.modules.get("solve_pipeline.images.image_backbones_local")
    return None if local is None else local.summary()


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
    parser.add_argument("--image-backbone", default=None, help="an image model's folder or cached hub repo id")
    parser.add_argument("--choice", choices=list(RULES), default=None,
                        help=f"how the submission is chosen among candidates (default {DEFAULT_RULE})")
    args = parser.parse_args(argv)
    workspace = args.workspace.resolve()
    values = {} if args.light else _saved_settings(workspace)
    fusion = Fusion(args.fusion) if args.fusion is not None else None
    given = {"folds": args.folds, "seed": args.seed, "time_budget": args.time_budget, "fusion": fusion,
             "tune": args.tune, "blend_after": args.blend_after,
             "device": Device(args.device) if args.device is not None else None, "image_backbone": args.image_backbone,
             "choice": args.choice}
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
            "device": solve.device, "llm_solve": bool(solve.llm_solve), "image_backbone": solve.image_backbone}


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
    from agentk.core.process_exit import exit_now

    exit_now(main())
