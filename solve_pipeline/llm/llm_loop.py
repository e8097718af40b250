"""The LLM solve policy's loop, inside the sandboxed solver: after the race, ask the parent for the
next action, carry it out with the solver's own tools, feed the score change back, and repeat until
the model stops, hands the decision back, or the improvement window closes.

Every action only adds candidates through `Solver.consider`, so the submission is never worse than
what the expert's own steps would have kept from the same runs. When the model's reply is missing,
unusable or says "expert", the expert's middle phases (tune, revive, bag) run in the time left; after
`stop` or `blend` they are skipped. Blending (unless the model already blended) and decoding run
either way.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agentk.core.records.solve_decisions import DecisionRecord, DecisionRequest, LLMSolveRecord, PastDecision, SolveAction
from solve_pipeline.phases import blend_phase
from solve_pipeline.race.automl import RaceOutcome, finish_cheapest_first
from solve_pipeline.base.cv import CandidateRun, emit, finish_run, fit_fold, start_run
from solve_pipeline.llm.feature_trial import tabular_bases, try_feature
from solve_pipeline.phases.finetune_phase import FINETUNE_FOLD_SLACK
from solve_pipeline.race.hebo_tool import Trial
from solve_pipeline.phases.improvement import tune_round, bag_leaders
from solve_pipeline.llm.llm_channel import DecisionChannel
from solve_pipeline.llm.llm_summary import build_request
from solve_pipeline.race.registry import tunable_for
from solve_pipeline.phases.solve_state import BAG_UNTIL

if TYPE_CHECKING:
    from solve_pipeline.phases.solve_state import Solver

MAX_DECISIONS = 12
WAIT_MAX_S, WAIT_SHARE, WAIT_MIN_S = 120.0, 0.25, 5.0  # how long a reply may take, from the time left
ROUND_SHARE = 0.5  # a tune or bag action's share of the time left


@dataclass
class LoopOutcome:
    record: LLMSolveRecord
    expert_resumes: bool  # the expert's tune, revive and bag phases run after the loop
    blend: dict[str, Any] | None = None  # the blend the model asked for, if it did


@dataclass
class _Loop:
    solver: Solver
    outcome: RaceOutcome
    channel: DecisionChannel
    until: float
    trials: dict[str, list[Trial]] = field(default_factory=dict)
    bars: dict[str, float] = field(default_factory=dict)
    history: list[PastDecision] = field(default_factory=list)
    bases: dict[str, CandidateRun] | None = None  # feature blocks' comparison runs (feature_trial.py)
    blend_cache: dict[tuple[str, ...], float | None] = field(default_factory=dict)  # the ablation's blend estimates


def decide(solver: Solver, outcome: RaceOutcome) -> LoopOutcome:
    loop = _Loop(solver, outcome, DecisionChannel(solver.artifacts.workspace / "solve"), solver.at(BAG_UNTIL))
    record = LLMSolveRecord()
    while True:
        left = loop.until - time.monotonic()
        if left <= 1.0:
            return _end(record, "time: the improvement window is spent", resumes=False)
        if len(record.decisions) >= MAX_DECISIONS:
            return _end(record, f"{MAX_DECISIONS} decisions taken; the expert goes on", resumes=True)
        n = loop.channel.next_number()
        request = build_request(solver, outcome, n, loop.channel.token,
                                {k: len(v) for k, v in loop.trials.items()}, loop.history, left,
                                decisions=record.decisions, blend_cache=loop.blend_cache)
        reply, waited = loop.channel.ask(request, max(WAIT_MIN_S, min(WAIT_MAX_S, WAIT_SHARE * left)))
        expert = _expert_reason(reply, request)
        if expert is not None:
            record.decisions.append(DecisionRecord(n=n, action="expert", source="expert", reason=expert,
                                                   tokens=reply.tokens if reply else 0, llm_seconds=round(waited, 3),
                                                   ablation=request.ablation))
            emit("decision", n=n, action="expert", reason=expert)
            return _end(record, f"the expert decides: {expert}", resumes=True)
        assert reply is not None and reply.action is not None
        action = reply.action
        decision = DecisionRecord(n=n, action=action.action, family=action.family, reason=action.reason,
                                  tokens=reply.tokens, llm_seconds=round(waited, 3),
                                  score_before=request.best_score, ablation=request.ablation)
        emit("decision", n=n, action=action.action, family=action.family, reason=action.reason)
        if action.action == "stop":
            decision.outcome = "stopped: blending and decoding next"
            record.decisions.append(decision)
            return _end(record, f"the model stopped: {action.reason}".rstrip(": "), resumes=False)
        started = time.monotonic()
        try:
            blend = _act(loop, action, decision, n, request)
        except Exception as error:  # noqa: BLE001 - a failed action costs its time, never the solve
            decision.outcome = f"failed: {type(error).__name__}: {error}"
            blend = None
        decision.seconds = round(time.monotonic() - started, 3)
        after = solver.state.best_score
        decision.score_after = after if after == after else None
        if decision.score_before is not None and decision.score_after is not None:
            decision.score_change = decision.score_after - decision.score_before
        record.decisions.append(decision)
        if decision.feature is not None and decision.feature.kept:
            record.kept_features.append(decision.feature.code)
        loop.history.append(PastDecision(n=n, action=action.action, family=action.family, outcome=decision.outcome,
                                         score_change=decision.score_change))
        if action.action == "blend":
            done = _end(record, "the model blended: decoding next", resumes=False)
            done.blend = blend
            return done


def _end(record: LLMSolveRecord, why: str, *, resumes: bool) -> LoopOutcome:
    record.ended, record.expert_resumed = why, resumes
    emit("llm_solve_done", ended=why, decisions=len(record.decisions))
    return LoopOutcome(record, resumes)


def _expert_reason(reply: Any, request: DecisionRequest) -> str | None:
    """Why the expert takes this decision back, or None when the model's action can be carried out."""
    if reply is None:
        return "no reply in time"
    action: SolveAction | None = reply.action
    if action is None:
        return reply.expert_reason or "the reply held no action"
    allowed, tunable, unfinished = request.allowed, request.tunable, request.unfinished
    if action.action not in allowed:
        return f"{action.action!r} is not allowed now (allowed: {', '.join(allowed)})"
    if action.action == "tune" and action.family not in tunable:
        return f"cannot tune {action.family!r} (tunable: {', '.join(tunable)})"
    if action.action == "race" and action.family not in unfinished:
        return f"cannot race {action.family!r} (unfinished: {', '.join(unfinished)})"
    if action.action == "feature" and not (action.code and "add_features" in action.code):
        return "the feature action carried no add_features function"
    if action.action == "finetune" and action.family is not None and action.family not in request.finetunable:
        return f"cannot fine-tune {action.family!r} (fits now: {', '.join(request.finetunable)})"
    return None


def _act(loop: _Loop, action: SolveAction, decision: DecisionRecord, n: int,
         request: DecisionRequest) -> dict[str, Any] | None:
    solver, left = loop.solver, loop.until - time.monotonic()
    if action.action == "tune":
        decision.outcome = _tune(loop, str(action.family), ROUND_SHARE * left)
    elif action.action == "race":
        decision.outcome = _race(loop, str(action.family))
    elif action.action == "feature":
        if loop.bases is None:
            loop.bases = tabular_bases(solver)
        decision.feature = try_feature(solver, str(action.code), n, loop.until, loop.bases)
        decision.outcome = decision.feature.verdict
    elif action.action == "finetune":
        decision.outcome = _finetune(loop, action.family or next(iter(request.finetunable)), n)
    elif action.action == "bag":
        report = bag_leaders(solver, time.monotonic() + ROUND_SHARE * left)
        decision.outcome = str(report.get("stopped") or report.get("skipped") or "bagged")
    elif action.action == "blend":
        report = blend_phase.blend(solver)
        decision.outcome = str(report.get("skipped") or "blended")
        return report
    return None


def _tune(loop: _Loop, family: str, budget: float) -> str:
    solver = loop.solver
    base = next(r for r in solver.state.complete if r.name == family)
    tunable = tunable_for(family, solver.ctx.features, solver.ctx.targets)
    assert tunable is not None
    bar = loop.bars.get(family, solver.state.cv.get(family) or float("nan"))
    report = tune_round(solver, base, bar, budget, loop.trials.setdefault(family, []), [], loop.until)
    if report["improved"]:
        loop.bars[family] = report["raw_score"]
        return f"tuned: {len(report['trials'])} trials, adopted at {report['corrected_score']:.5f}"
    return f"tuned: {len(report['trials'])} trials, no gain ({report['stopped']})"


def _race(loop: _Loop, family: str) -> str:
    solver, outcome = loop.solver, loop.outcome
    entries = {e.family: e for e in outcome.entries}
    run = next((r for r in outcome.pruned if r.name == family), None)
    if run is None:
        candidate = next(c for c in outcome.unstarted if c.name == family)
        outcome.unstarted.remove(candidate)
        run = start_run(candidate, solver.ctx)
        if run is None:
            entries[family].status, entries[family].reason = "skipped", "no usable features"
            return "skipped: no usable features"
        fit_fold(run, 0, solver.ctx, loop.until)
        entries[family].first_fold_score = run.fold_scores.get(0)
    else:
        outcome.pruned.remove(run)
    finish_cheapest_first([run], entries, solver.ctx, loop.until, solver.on_finished)
    entry = entries[family]
    if entry.status != "finished" and run not in outcome.pruned:
        outcome.pruned.append(run)  # the expert's revive may still finish it
    return f"{entry.status}" + (f": {entry.reason}" if entry.reason and entry.status != "finished" else "")


def _finetune(loop: _Loop, network: str, n: int) -> str:
    """The plan's network fine-tuned once more, with its own seed: a further model for the blend,
    adopted like any other when its CV wins."""
    solver = loop.solver
    option = next(o for o in solver.finetune_options if o.candidate.name == network)
    ctx = dataclasses.replace(solver.ctx, seed=solver.ctx.seed + 1000 * n)
    run = start_run(option.candidate, ctx, name=f"{network}_llm{n}")
    if run is None:
        return "skipped: no usable features"
    fold_cap = FINETUNE_FOLD_SLACK * option.seconds / len(ctx.folds)
    if not finish_run(run, ctx, loop.until, fold_cap_s=fold_cap):
        return f"out of time: {len(run.done)} of {len(ctx.folds)} folds"
    solver.on_finished(run)
    score = solver.state.cv.get(run.name)
    return "fine-tuned" + (f": CV {score:.5g}" if score is not None else "")
