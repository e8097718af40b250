"""The LLM solve policy's protocol: what the sandboxed solver asks, what the parent answers, and what
solve_result.json records (`llm_solve`).

The solver has no network and no keys, so it cannot call a model itself. At a decision point it
writes a `DecisionRequest` to `solve/llm/request_<n>.json` and prints a `decision_request` line; the
runner's advisor (agentk/solve_advisor.py) asks the model and writes a `DecisionReply` to
`solve/llm/reply_<n>.json`, atomically. Both sides validate through these models, so neither trusts
the other's JSON. The whole exchange exists only when the run's solve settings turn it on: the
expert policy never writes or reads any of it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

LLM_DIR = "llm"  # under solve/
ActionName = Literal["tune", "race", "feature", "finetune", "bag", "blend", "stop"]
ACTIONS: tuple[str, ...] = ("tune", "race", "feature", "finetune", "bag", "blend", "stop")


def llm_dir(solve_dir: Path) -> Path:
    return Path(solve_dir) / LLM_DIR


def request_path(solve_dir: Path, n: int) -> Path:
    return llm_dir(solve_dir) / f"request_{n}.json"


def reply_path(solve_dir: Path, n: int) -> Path:
    return llm_dir(solve_dir) / f"reply_{n}.json"


class TargetView(BaseModel):
    column: str
    task: str
    n_classes: int | None = None


class TaskView(BaseModel):
    """The task as the model needs it: no data values, only shapes and names."""

    metric: str
    higher_is_better: bool
    n_train: int
    n_test: int
    modalities: list[str] = Field(default_factory=list)
    targets: list[TargetView] = Field(default_factory=list)
    # The tabular input map's columns with their pandas dtypes (the frames add_features receives).
    columns: dict[str, str] = Field(default_factory=dict)


class FamilyView(BaseModel):
    family: str
    status: str  # finished, pruned, failed, skipped, out_of_time
    cv: float | None = None
    first_fold_score: float | None = None
    tuned_trials: int = 0
    reason: str | None = None


class PastDecision(BaseModel):
    """A decision already taken this solve, with its outcome: the model's score feedback."""

    n: int
    action: str
    family: str | None = None
    source: Literal["llm", "expert"] = "llm"
    outcome: str = ""
    score_change: float | None = None


class AblationPart(BaseModel):
    """One part of the current best pipeline, off and on: the CV without it, with it, and the effect."""

    part: Literal["tuning", "features", "bagging", "blend"]
    action: str  # the action that works on this part
    without_model: str | None = None
    without_cv: float | None = None
    with_model: str | None = None
    with_cv: float | None = None
    # with minus without, signed so that positive is better whatever the metric's direction; None:
    # not measured yet (the part was never tried).
    effect: float | None = None
    estimated: bool = False  # from predictions already made, without a fit (the blend before blending)
    note: str = ""


class ActionEffect(BaseModel):
    n: int
    action: str
    family: str | None = None
    score_change: float | None = None


class Ablation(BaseModel):
    """MLE-STAR's ablation, from what the solver already has: which part moves the CV most."""

    parts: list[AblationPart] = Field(default_factory=list)
    actions: list[ActionEffect] = Field(default_factory=list)  # each past action's score change
    focus: str | None = None  # the part with the largest measured effect whose action is allowed now
    why: str = ""


class DecisionRequest(BaseModel):
    n: int
    token: str  # this solve's nonce: a reply left by an earlier solve never answers this one
    task: TaskView
    race: list[FamilyView]
    best_score: float | None = None
    best_parts: dict[str, str] = Field(default_factory=dict)  # target -> model
    budget_left_s: float
    allowed: list[str]
    tunable: list[str] = Field(default_factory=list)
    unfinished: list[str] = Field(default_factory=list)
    history: list[PastDecision] = Field(default_factory=list)
    feature_cap_s: float = 60.0
    # Fine-tuning options the solver's plan says fit the time left: network -> estimated seconds.
    finetunable: dict[str, float] = Field(default_factory=dict)
    ablation: Ablation | None = None  # every request after the first


class SolveAction(BaseModel):
    """One of the solver's own tools, as the model chose it."""

    action: ActionName
    family: str | None = None
    code: str | None = None  # feature: the add_features function
    reason: str = ""


class DecisionReply(BaseModel):
    n: int
    token: str
    action: SolveAction | None = None  # None: the expert decides (with `expert_reason`)
    expert_reason: str | None = None
    tokens: int = 0
    seconds: float = 0.0


class FeatureRecord(BaseModel):
    """One feature-engineering block: its code, its checks and whether CV kept it."""

    code: str
    checks: dict[str, str] = Field(default_factory=dict)  # check -> "passed" or why it failed
    refused: str | None = None
    columns: list[str] = Field(default_factory=list)
    family: str | None = None
    cv_before: float | None = None
    cv_after: float | None = None
    margin: float | None = None
    kept: bool = False
    verdict: str = ""


class DecisionRecord(BaseModel):
    n: int
    action: str  # an action name, or "expert" when the reply handed the decision back
    family: str | None = None
    reason: str = ""
    source: Literal["llm", "expert"] = "llm"
    tokens: int = 0
    llm_seconds: float = 0.0  # waiting for the reply
    seconds: float = 0.0  # carrying the action out
    score_before: float | None = None
    score_after: float | None = None
    score_change: float | None = None
    outcome: str = ""
    feature: FeatureRecord | None = None
    ablation: Ablation | None = None  # what the model was shown before it chose


class LLMSolveRecord(BaseModel):
    """solve_result.json's `llm_solve`: absent when no LLM took part."""

    decisions: list[DecisionRecord] = Field(default_factory=list)
    ended: str = ""  # why the model stopped deciding
    expert_resumed: bool = False  # whether the expert's middle phases (tune, revive, bag) ran after it
    kept_features: list[str] = Field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json")
