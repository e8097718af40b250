"""The solver's fine-tuning phase: pretrained networks fine-tuned end to end when a timed probe
says they fit (finetune_plan.py prices them), each fold capped near its estimate."""

from __future__ import annotations

import math
import time
from typing import TYPE_CHECKING, Any

from agentk.core.metrics.direction import Direction
from solve_pipeline.base.cv import emit, finish_run, start_run
from solve_pipeline.phases.finetune_plan import finetune_options
from solve_pipeline.race.registry import FROZEN_EMBEDDING_FAMILY

if TYPE_CHECKING:
    from solve_pipeline.race.automl import RaceOutcome
    from solve_pipeline.phases.solve_state import Solver

# Fine-tuning a pretrained network wins most where it applies (photos, text): it may run this far,
# leaving tuning whatever is left before TUNE_UNTIL (nothing, when it runs past it).
FINETUNE_UNTIL = 0.85
FINETUNE_FOLD_SLACK = 1.5  # a fine-tuning fold may run this far past its share of the estimate


def text_promise(solver: Solver, outcome: RaceOutcome | None) -> float | None:
    """The frozen sentence embedding's family's share of the race leader's gain over the constant,
    on first folds (1: it leads); None where the race did not measure it, or photos share it."""
    if outcome is None or solver.ctx.features.image_paths_train is not None:
        return None
    scores = {e.family: e.first_fold_score for e in outcome.entries
              if e.first_fold_score is not None and math.isfinite(e.first_fold_score)}
    frozen, constant = scores.get(FROZEN_EMBEDDING_FAMILY), solver.state.cv.get("constant")
    best = Direction(solver.higher).best_score(scores.values())
    if frozen is None or constant is None or best is None or best == constant:
        return None
    return (frozen - constant) / (best - constant)


def finetune(solver: Solver, outcome: RaceOutcome | None = None) -> dict[str, Any]:
    """Pretrained networks fine-tuned end to end, when their timed estimate fits before
    tuning's end; tuning then gets what is left. Each fold is capped near its estimate."""
    began = time.monotonic()
    try:
        options, notes = finetune_options(solver.ctx.features, len(solver.ctx.folds),
                                          solver.at(FINETUNE_UNTIL) - time.monotonic(),
                                          text_promise=text_promise(solver, outcome))
    except Exception as error:  # noqa: BLE001 - a network that cannot load costs its option, not the solve
        options, notes = [], [f"fine-tuning unavailable: {type(error).__name__}: {str(error)[:200]}"]
    emit("finetune_plan", notes=notes, probe_s=round(time.monotonic() - began, 2))
    solver.finetune_options = options  # the LLM solve policy's finetune action prices from the same plan
    report: dict[str, Any] = {"notes": notes, "runs": []}
    for option in options:
        left = solver.at(FINETUNE_UNTIL) - time.monotonic()
        if option.seconds > left:
            report["runs"].append({"model": option.candidate.name,
                                   "skipped": f"needs ~{option.seconds:.0f} s, {left:.0f} s left"})
            continue
        run = start_run(option.candidate, solver.ctx)
        if run is None:
            continue
        fold_cap = FINETUNE_FOLD_SLACK * option.seconds / len(solver.ctx.folds)
        finished = finish_run(run, solver.ctx, solver.at(FINETUNE_UNTIL), fold_cap_s=fold_cap)
        report["runs"].append({"model": run.name, "epochs": option.epochs, "finished": finished,
                               "estimate_s": round(option.seconds, 1), "seconds": round(run.seconds, 1)})
        if finished:
            solver.on_finished(run)
    solver.state.phases["finetune"] = round(solver.state.elapsed(), 2)
    return report
