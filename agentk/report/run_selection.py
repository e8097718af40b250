"""The run page's "honest selection" section: which folds the solve validated on and why, every
tuned or bagged solution's raw score (on the partition that chose it) beside its corrected score
(on fresh partitions), why each phase of the anytime solve stopped, and which rule chose the
submission among the candidates, with each candidate's margin to the best CV (choice_phase.py)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from agentk.core.records.results import SolveResult
from agentk.report.run_section import Missing, number_or_none


class ScorePair(BaseModel):
    model: str
    how: str  # what the corrected score is
    raw: float | None = None
    corrected: float | None = None


class ChoiceMargin(BaseModel):
    """A candidate against the best CV: the best's paired mean gain per fold, its standard error,
    the optimism charged to the best's search, and whether it is within noise."""

    model: str
    gain: float | None = None
    se: float | None = None
    charge: float | None = None
    within: bool = False


class Selection(BaseModel):
    validation: str | None = None  # the fold scheme and its evidence
    pairs: list[ScorePair] = []
    stops: list[tuple[str, str]] = []  # (phase, why it ended)
    choice: str | None = None  # which rule chose the submission, and why
    margins: list[ChoiceMargin] = []


def read_selection(result: SolveResult) -> Selection:
    extra: dict[str, Any] = result.model_extra or {}
    validation = extra.get("validation")
    tuning = result.tuning or {}
    bagging = extra.get("bagging") or {}
    choice = result.choice or {}
    if not isinstance(validation, dict) and "rounds" not in tuning and "bags" not in bagging and not choice:
        raise Missing("this solve recorded no validation scheme, corrected scores or stop reasons")
    selection = Selection()
    if isinstance(validation, dict):
        selection.validation = f"{validation.get('scheme', '?')} folds: {validation.get('reason', '')}"
    for round_ in tuning.get("rounds") or []:
        if isinstance(round_, dict) and round_.get("improved"):
            selection.pairs.append(ScorePair(model=f"{round_.get('family')}_tuned", how=str(round_.get("corrected_by")),
                                             raw=number_or_none(round_.get("raw_score")),
                                             corrected=number_or_none(round_.get("corrected_score"))))
    for bag in bagging.get("bags") or []:
        if isinstance(bag, dict):
            selection.pairs.append(ScorePair(model=str(bag.get("model")), how=f"{bag.get('repeats')} fresh partitions",
                                             raw=number_or_none(bag.get("raw_score")),
                                             corrected=number_or_none(bag.get("corrected_score"))))
    for phase, record in (("tuning", tuning), ("bagging", bagging)):
        why = record.get("skipped") or record.get("stopped")
        if why:
            selection.stops.append((phase, str(why)))
    if choice:
        selection.choice = f"{choice.get('rule', '?')}: {choice.get('skipped') or choice.get('reason', '')}"
        if choice.get("chosen") and choice.get("chosen") != choice.get("leader"):
            selection.choice += f" (chosen {choice['chosen']} over the best CV, {choice.get('leader')})"
    for m in choice.get("margins") or []:
        if isinstance(m, dict):
            selection.margins.append(ChoiceMargin(model=str(m.get("name")), gain=number_or_none(m.get("gain")),
                                                  se=number_or_none(m.get("se")), charge=number_or_none(m.get("charge")),
                                                  within=bool(m.get("within"))))
    return selection
