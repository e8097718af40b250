"""The solver's last phase: metric-aware decoding of the best solution's class probabilities into
labels (decoding.py), and the time the blend must leave it."""

from __future__ import annotations

import time
from dataclasses import asdict, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from solve_pipeline.base.cv import emit, score_outputs
from solve_pipeline.base.decoding import Decoder, choose_decoder, fit_evaluations
from solve_pipeline.phases.outputs import save_prediction_frames, write_candidate

if TYPE_CHECKING:
    from solve_pipeline.phases.solve_state import Solver

DECODE_UNTIL = 1.0  # the decoder search is only started when its projected metric calls fit
DECODE_RESERVE_MAX = 0.05  # of the budget: a search dearer than this is not waited for


def decode_reserve(solver: Solver) -> float:
    """Seconds the decoding search after the blend will need (one metric call timed), kept
    from the blend when modest; a search dearer than DECODE_RESERVE_MAX is not waited for."""
    if solver.ctx.surrogate or solver.options.time_budget is None or not solver.state.best:
        return 0.0
    calls = sum(3 * fit_evaluations(s.n_classes, s.classes) for s in solver.ctx.targets if s.is_classification)
    if not calls:
        return 0.0
    began = time.monotonic()
    score_outputs(solver.ctx, None, {t: p.oof for t, p in solver.state.best.items()})
    need = (time.monotonic() - began) * calls
    return need if need <= DECODE_RESERVE_MAX * solver.options.time_budget else 0.0


def decode(solver: Solver) -> dict[str, Any]:
    """Per classification target, a threshold or ordinal cut points instead of argmax, when a
    cross-fitted check says the setup's label metric gains (see decoding.py)."""
    if solver.ctx.surrogate:
        return {"skipped": "ranking by a surrogate loss, which reads probabilities only"}
    decoded = dict(solver.state.best)
    report: dict[str, Any] = {}
    score = solver.state.best_score
    for spec in solver.ctx.targets:
        if not spec.is_classification:
            continue
        oofs = {t: p.oof for t, p in decoded.items()}
        held = {t: p.decoder for t, p in decoded.items()}

        def scorer(decoder: Decoder, rows: np.ndarray, column: str = spec.column,
                   oofs: dict = oofs, held: dict = held) -> float:
            return score_outputs(solver.ctx, rows, {t: o[rows] for t, o in oofs.items()}, {**held, column: decoder})

        choice = choose_decoder(decoded[spec.column].oof, spec.classes, scorer, solver.higher, solver.ctx.seed,
                                deadline=solver.at(DECODE_UNTIL))
        report[spec.column] = {"decoder": asdict(choice.decoder), "score": choice.score,
                               "argmax_score": choice.argmax_score}
        if choice.skipped is not None:
            report[spec.column]["skipped"] = choice.skipped
            emit("decoding_skipped", target=spec.column, reason=choice.skipped)
        if choice.decoder.kind != "argmax" and solver.ctx.direction.better(choice.score, score):
            current = decoded[spec.column]
            decoded[spec.column] = replace(current, model=f"{current.model}_{choice.decoder.kind}",
                                           decoder=choice.decoder)
            score = choice.score
    if decoded != solver.state.best:
        name = "+".join(sorted({p.model for p in decoded.values()}))
        solver.state.cv[name] = score
        emit("model", model=name, score=score, elapsed_s=round(solver.state.elapsed(), 2))
        save_prediction_frames(solver.artifacts, solver.ctx.features, decoded, name)
        record = write_candidate(solver.artifacts, solver.ctx.features, decoded, name, score)
        if record is not None:
            solver.state.candidates.append(record)
        solver.state.best, solver.state.best_score = decoded, score
        solver.write_submission()
    solver.state.phases["decode"] = round(solver.state.elapsed(), 2)
    return report
