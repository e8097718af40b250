"""The run page's LLM solve decisions (issue #27): solve/solve_result.json `llm_solve`.

Each decision the model took (or handed back to the expert): the action, its reason, the tokens it
cost, the seconds spent waiting and acting, and the best score's change; a feature block's checks,
CV before and after and whether it was kept. A solve without an LLM records no `llm_solve`, and its
page has no such section. Each decision after the first shows the ablation the model saw: every
part's effect on the CV (tuning, features, bagging, blend) and the part it was asked to work on.
"""

from __future__ import annotations

from agentk.core.records.results import SolveResult
from agentk.core.records.solve_decisions import Ablation, LLMSolveRecord
from agentk.report.page import NotAvailable
from agentk.report.run_section import Record, section


class DecisionRow(Record):
    n: int
    action: str  # "feature", "tune lightgbm", ... or "expert"
    source: str
    reason: str
    tokens: int
    seconds: float  # waiting for the reply and carrying the action out
    score_change: float | None = None
    outcome: str = ""
    code: str | None = None  # a feature block's code
    checks: str = ""  # a feature block's failed checks, or "all passed"
    cv: str = ""  # a feature block's CV before → after (± the noise margin)
    ablation: str = ""  # what the model was shown: each part's effect and the focus


class LLMSolveData(Record):
    rows: list[DecisionRow]
    ended: str
    expert_resumed: bool
    tokens: int
    kept_features: int


def read_llm_solve(solve: SolveResult | NotAvailable) -> LLMSolveData | NotAvailable | None:
    """The section's rows; None when no LLM took part in the solve."""
    if isinstance(solve, NotAvailable):
        return None
    raw = (solve.model_extra or {}).get("llm_solve")
    if raw is None:
        return None
    return section("the llm_solve record of solve/solve_result.json", lambda: _rows(LLMSolveRecord.model_validate(raw)))


def _rows(record: LLMSolveRecord) -> LLMSolveData:
    rows = []
    for d in record.decisions:
        row = DecisionRow(n=d.n, action=f"{d.action} {d.family or ''}".rstrip(), source=d.source, reason=d.reason,
                          tokens=d.tokens, seconds=round(d.llm_seconds + d.seconds, 3), score_change=d.score_change,
                          outcome=d.outcome or ("the expert's schedule resumed" if d.action == "expert" else ""))
        if d.ablation is not None:
            row.ablation = _ablation_line(d.ablation)
        feature = d.feature
        if feature is not None:
            failed = [f"{name}: {why}" for name, why in feature.checks.items() if why != "passed"]
            row.code, row.checks = feature.code, "; ".join(failed) or "all passed"
            if feature.cv_before is not None and feature.cv_after is not None:
                row.cv = f"{feature.cv_before:.5g} → {feature.cv_after:.5g} (noise ±{feature.margin or 0:.2g}, {feature.family})"
        rows.append(row)
    return LLMSolveData(rows=rows, ended=record.ended, expert_resumed=record.expert_resumed,
                        tokens=sum(d.tokens for d in record.decisions), kept_features=len(record.kept_features))


def _ablation_line(ablation: Ablation) -> str:
    parts = ", ".join(f"{p.part} {p.effect:+.3g}{' (estimate)' if p.estimated else ''}" if p.effect is not None
                      else f"{p.part} not measured" for p in ablation.parts)
    return f"{parts}; focus: {ablation.focus}" if ablation.focus else f"{parts}; {ablation.why}"
