"""The run page's "honest selection" section: which folds the solve validated on and why, every
tuned or bagged solution's raw score (on the partition that chose it) beside its corrected score
(on fresh partitions), and why each phase of the anytime solve stopped."""

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


class Selection(BaseModel):
    validation: str | None = None  # the fold scheme and its evidence
    pairs: list[ScorePair] = []
    stops: list[tuple[str, str]] = []  # (phase, why it ended)


def read_selection(result: SolveResult) -> Selection:
    extra: dict[str, Any] = result.model_extra or {}
    validation = extra.get("validation")
    tuning = result.tuning or {}
    bagging = extra.get("bagging") or {}
    if not isinstance(validation, dict) and "rounds" not in tuning and "bags" not in bagging:
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
    return selection
