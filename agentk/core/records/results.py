"""The records the solver and the run write: `solve/solve_result.json` (`SolveResult`) and
`result.json` (`RunResult`), with what later readers take from them (a solved task's summary for the
task memory, the run's direction, LLM tokens).

The JSON on disk keeps the keys it always had: a workspace written by an older agentk resumes, and
a record's fields that are not typed here yet ride along as extras.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict

from agentk.core.artifacts import SetupLayout
from agentk.core.metrics.direction import Direction, finite
from agentk.core.records.workspace import read_json_object


class SolveCandidate(BaseModel):
    """One model's submission file the solver kept, for the top-k sends."""

    model_config = ConfigDict(extra="allow")

    model: str | None = None
    validation_score: float | None = None
    path: str = ""  # relative to the workspace root


class SolveResult(BaseModel):
    """solve/solve_result.json, written by `solve_pipeline.solver`."""

    model_config = ConfigDict(extra="allow")

    FILE: ClassVar[str] = "solve_result.json"

    validation_score: float | None = None
    model: str | None = None
    models_per_target: dict[str, str] | None = None
    submission_from: Literal["this_solve", "earlier_solve"] | None = None
    # The direction the solver ranked by: the metric's, or lower for the surrogate loss.
    higher_is_better: bool | None = None
    metric: Literal["setup", "surrogate"] | None = None
    cv: dict[str, float | None] | None = None
    race: list[dict[str, Any]] | None = None
    finetune: dict[str, Any] | None = None
    tuning: dict[str, Any] | None = None
    blend: dict[str, Any] | None = None
    decoding: dict[str, Any] | None = None
    # How the submission was chosen among the candidates (solve_pipeline/phases/choice_phase.py): the rule
    # that decided, the chosen and the best-CV candidate, the margins and every candidate's evidence.
    choice: dict[str, Any] | None = None
    phases_s: dict[str, float] | None = None
    folds: int | None = None
    n_train: int | None = None
    n_train_total: int | None = None
    n_test: int | None = None
    light: bool | None = None
    seed: int | None = None
    time_budget_s: float | None = None
    submission_path: str | None = None
    candidates: list[SolveCandidate] = []
    elapsed_s: float | None = None
    time_to_first_submission_s: float | None = None
    # (seconds since the solver started, best validation score so far), one point per improvement.
    timeline: list[tuple[float, float]] = []
    joins: dict[str, Any] | None = None  # per joined side table: kept or dropped, with the CV scores
    warm_start: dict[str, Any] | None = None  # a campaign's suggestions: what was used, what ignored and why
    # Where torch work ran: {choice, used, parts: {part: cpu|cuda}, notes: [fallback lines]}.
    device: dict[str, Any] | None = None
    # The user's own image models: {named, offered: [{name, source, why, relative_cost, ...}], chosen, notes}.
    image_backbone: dict[str, Any] | None = None

    @classmethod
    def path_in(cls, solve_dir: Path) -> Path:
        return Path(solve_dir) / cls.FILE

    @classmethod
    def read(cls, solve_dir: Path) -> SolveResult:
        """The record, or an empty one when the solver has not written it (yet)."""
        return cls.model_validate(read_json_object(cls.path_in(solve_dir)))

    def to_json(self) -> dict[str, Any]:
        """The dict to write as JSON (values pydantic does not type pass through as they are)."""
        return self.model_dump()


class FamilyOutcome(BaseModel):
    """One model family's result in a finished solve, as a later task's warm start reads it."""

    family: str
    score: float | None = None  # cross-validated, in the solve's direction
    params: dict[str, Any] = {}  # HEBO's best configuration when the family was tuned, else {}
    tuned: bool = False


class SolvedSummary(BaseModel):
    """What a campaign's task memory keeps of a solved task: which families won, their tuned
    configurations, and how the validation score moved with time."""

    metric: str | None = None
    higher_is_better: bool | None = None
    validation_score: float | None = None
    families: list[FamilyOutcome] = []  # best first
    # (seconds since the solver started, best validation score so far), one point per improvement.
    timeline: list[tuple[float, float]] = []
    time_budget_s: float | None = None

    @classmethod
    def from_solve(cls, solve_dir: Path) -> SolvedSummary | None:
        """The summary of the full solve recorded in `solve_dir` (a workspace's `solve/`); None
        when there is no solve result, or only the setup's light check. Families are the race's
        finished ones, best first by their cross-validated score; the tuned family carries HEBO's
        best configuration and the better of its default and tuned scores."""
        data = read_json_object(SolveResult.path_in(solve_dir))
        if not data:
            return None
        result = SolveResult.model_validate(data)
        if result.light:
            return None
        direction = Direction.recorded(result.higher_is_better)
        cv = result.cv or {}
        tuning = result.tuning or {}
        trials = [t for t in tuning.get("trials") or [] if isinstance(t, dict) and t.get("error") is None
                  and finite(t.get("score")) and isinstance(t.get("params"), dict)]
        best_trial = direction.best(trials, key=lambda t: t["score"]) if direction is not None else None
        families: list[FamilyOutcome] = []
        for entry in result.race or []:
            family = entry.get("family")
            if not isinstance(family, str) or entry.get("status") != "finished":
                continue
            score = cv.get(family)
            outcome = FamilyOutcome(family=family, score=score if finite(score) else None)
            if best_trial is not None and family == tuning.get("family"):
                outcome.params, outcome.tuned = dict(best_trial["params"]), True
                outcome.score = direction.best_score([outcome.score, best_trial["score"]])  # type: ignore[union-attr]
            families.append(outcome)
        if direction is not None:
            families = direction.ranked(families, key=lambda f: f.score)
        return cls(metric=_metric_name(solve_dir, result.metric), higher_is_better=result.higher_is_better,
                   validation_score=result.validation_score, families=families,
                   timeline=list(result.timeline), time_budget_s=result.time_budget_s)


def _metric_name(solve_dir: Path, ranked_by: str | None) -> str | None:
    """The plan's metric name when the solver ranked by the setup's metric, else what it ranked by."""
    if ranked_by == "surrogate":
        return ranked_by
    metric = read_json_object(SetupLayout(Path(solve_dir).parent / "setup").plan).get("metric")
    return metric if isinstance(metric, str) and metric else ranked_by


def time_to_reach(timeline: Sequence[tuple[float, float]], target: float, higher_is_better: bool) -> float | None:
    """The first elapsed time at which a solve's best-so-far score is at least as good as `target`
    (the cold-vs-warm benchmark's measure); None when it never is."""
    direction = Direction(higher_is_better)
    for elapsed, score in sorted(timeline, key=lambda point: point[0]):
        if direction.at_least(score, target):
            return elapsed
    return None


class StageRecord(BaseModel):
    model_config = ConfigDict(extra="allow")

    attempts: int
    passed: bool


class MetaRecord(BaseModel):
    model_config = ConfigDict(extra="allow")

    rounds: int
    passed: bool


class LeaderboardPlace(BaseModel):
    """Where a score ranks among a leaderboard's teams (the grader's placing of the test score)."""

    rank: int
    n_teams: int
    percentile: float  # share of teams strictly worse
    medal: str | None = None


class RunResult(BaseModel):
    """result.json, written by `agentk.runner` (and nowhere else); `kaggle`, present only after
    `--submit`, rides along as an extra."""

    model_config = ConfigDict(extra="allow")

    competition_id: str
    source: str | None = None
    valid_submission: bool = False
    submission_path: str | None = None
    metric: str | None = None
    higher_is_better: bool | None = None
    assumptions: list[Any] = []
    validation_score: float | None = None
    model: str | None = None
    test_score: float | None = None
    test_metric: str | None = None
    test_score_note: str | None = None
    test_leaderboard: LeaderboardPlace | None = None  # the test score on the competition's leaderboard file
    setup: dict[str, StageRecord] = {}
    meta: dict[str, MetaRecord] = {}
    time_to_first_submission_s: float | None = None
    policy: str | None = None
    llm_usage: dict[str, Any] | None = None
    elapsed_s: float | None = None
    phase: str | None = None
    error: str | None = None
    # Setup failed (this is its message) and the submission is the one handed in without a model:
    # valid, but no solve; a campaign counts the run as a failure.
    setup_failure: str | None = None

    @classmethod
    def read(cls, path: Path) -> RunResult | None:
        """The run's record; None when no run has written one."""
        data = read_json_object(path)
        return cls.model_validate(data) if data else None

    @property
    def direction(self) -> Direction | None:
        return Direction.recorded(self.higher_is_better)

    @property
    def kaggle(self) -> dict[str, Any] | None:
        return (self.model_extra or {}).get("kaggle")

    @property
    def setup_passed(self) -> bool:
        """Every setup stage and meta check passed (what Pass@k counts)."""
        return bool(self.setup) and all(s.passed for s in self.setup.values()) and all(m.passed for m in self.meta.values())

    def to_json(self) -> dict[str, Any]:
        """The dict to write as JSON (values pydantic does not type pass through as they are)."""
        return self.model_dump()


def llm_tokens(usage: Mapping[str, Any] | None) -> int:
    """Tokens an LLM usage ledger (logs/llm_usage.json, result.json's `llm_usage`) counts; 0 for none."""
    usage = usage or {}
    total = usage.get("total_tokens")
    if total is None:
        total = int(usage.get("prompt_tokens") or 0) + int(usage.get("completion_tokens") or 0)
    return int(total or 0)


def run_direction(plan: Mapping[str, Any], solve: SolveResult) -> Direction | None:
    """The metric direction a run records in result.json, which every later reader takes from
    there: the setup plan's, else the solver's (a plan written without one); None when neither
    says, and each reader then states what it does without one."""
    return Direction.recorded(plan.get("higher_is_better")) or Direction.recorded(solve.higher_is_better)
