"""`agentk bench --holdout-repeats R`: does a choice rule pick candidates that generalise?

For each split competition (answers held out of data/train.csv), R times: a fresh seeded split of
train into a training part and a held-out part (rivals/splits.py, with `fraction` held out), the
real run on the training part once, then every candidate the solve kept graded on the held-out part
by the competition's grader (the held-out part plays the test set, so each candidate's test
predictions are its held-out predictions). Every rule of solve_pipeline/base/choice_rule.py is then
replayed offline on the solve's own evidence (`solve_result.json` `choice`), so the rules are
compared on the same runs: per competition and rule, the mean held-out score with a 95% interval
over the repeats, and the mean paired difference to max-CV (oriented: > 0 is better) with its own.
`oracle` (the best held-out candidate, which no rule can know) bounds what choosing can gain.

Each repeat's record is appended to ROOT/holdout.json as it ends; a repeat already there is not run
again, so a killed bench resumes.
"""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from rich.table import Table

from agentk.bench.rivals.splits import is_resplittable, split_source
from agentk.core.records.config import RunConfig
from agentk.core.errors import AgentKError, GradingError, InvalidSubmissionError
from agentk.core.records.results import SolveResult
from agentk.core.records.workspace import Workspace, atomic_write_json
from agentk.grading import grade_file
from agentk.runner import run_competition
from agentk.sources import load_competition
from solve_pipeline.base.choice_rule import OFFLINE_RULES, Evidence

RECORD = "holdout.json"
ORACLE = "oracle"


class Repeat(BaseModel):
    """One split's run: every candidate's CV and held-out score, and each rule's pick."""

    competition: str
    repeat: int
    fraction: float
    time_budget_s: float
    higher_is_better: bool
    held_out: dict[str, float | None] = {}  # candidate -> its score on the held-out part
    cv: dict[str, float] = {}
    evidence: list[dict[str, Any]] = []  # the solve's choice evidence: every rule is replayed on it
    submitted: str | None = None  # the run's own submission (after decoding) and its held-out score
    submitted_score: float | None = None
    error: str | None = None


def run_holdout(sources: list[str], config: RunConfig, repeats: int, fraction: float) -> list[Repeat]:
    """Run (or resume) every repeat of every split competition; returns every record."""
    root = Path(config.workspace_root).resolve()
    done = read_repeats(root)
    budget = config.solve.time_budget_s
    for source in sources:
        if not is_resplittable(Path(source)):
            continue  # a fixed test set cannot be split again
        for repeat in range(repeats):
            split = split_source(Path(source), repeat, root / "_holdout_splits", fraction)
            competition = load_competition(split)
            if any(r.competition == competition.id and r.repeat == repeat and r.fraction == fraction
                   and r.time_budget_s == budget for r in done):
                continue
            run_config = config.model_copy(update={"workspace_root": root / f"holdout{repeat}"})
            record = _run_repeat(split, competition, run_config, repeat, fraction)
            done = [r for r in done if not (r.competition == record.competition and r.repeat == repeat)] + [record]
            atomic_write_json(root / RECORD, [r.model_dump() for r in done])
    return done


def read_repeats(root: Path) -> list[Repeat]:
    path = Path(root) / RECORD
    if not path.is_file():
        return []
    return [Repeat.model_validate(r) for r in json.loads(path.read_text(encoding="utf-8"))]


def _run_repeat(split: Path, competition: Any, config: RunConfig, repeat: int, fraction: float) -> Repeat:
    higher = competition.grading.higher_is_better
    record = Repeat(competition=competition.id, repeat=repeat, fraction=fraction,
                    time_budget_s=config.solve.time_budget_s, higher_is_better=higher)
    try:
        result = run_competition(split, config).result
    except AgentKError as exc:
        record.error = str(exc)[:240]
        return record
    workspace = Workspace(Path(config.workspace_root).resolve() / competition.id)
    solve = SolveResult.read(workspace.solve)
    for candidate in solve.candidates:
        if candidate.model is None or candidate.validation_score is None:
            continue
        record.cv[candidate.model] = candidate.validation_score
        try:
            record.held_out[candidate.model] = grade_file(workspace.root / candidate.path, competition).score
        except (GradingError, InvalidSubmissionError):
            record.held_out[candidate.model] = None
    record.evidence = list((solve.choice or {}).get("evidence") or [])
    record.submitted, record.submitted_score = result.model, result.test_score
    if not record.evidence:
        record.error = f"the solve recorded no choice evidence: {(solve.choice or {}).get('skipped', 'none')}"
    return record


def picks(record: Repeat) -> dict[str, str | None]:
    """Rule -> the candidate it chooses on the repeat's evidence."""
    evidence = [Evidence.from_json(e) for e in record.evidence]
    chosen = {name: rule(evidence, record.higher_is_better) for name, rule in OFFLINE_RULES.items()}
    return {name: choice.chosen if choice is not None else None for name, choice in chosen.items()}


def _score(record: Repeat, rule: str) -> float | None:
    """The held-out score of the rule's pick (oriented as the metric), or None."""
    if rule == ORACLE:
        scores = [s for s in record.held_out.values() if s is not None and math.isfinite(s)]
        return (max if record.higher_is_better else min)(scores) if scores else None
    if rule == "submitted":
        return record.submitted_score
    name = picks(record).get(rule)
    return record.held_out.get(name) if name is not None else None


def _interval(values: list[float]) -> tuple[float, float]:
    """Mean and the half-width of its 95% t interval (0 for fewer than two values)."""
    mean = statistics.fmean(values)
    if len(values) < 2:
        return mean, 0.0
    from scipy.stats import t

    return mean, float(t.ppf(0.975, len(values) - 1) * statistics.stdev(values) / math.sqrt(len(values)))


def summarise(records: list[Repeat]) -> list[dict[str, Any]]:
    """Per competition and rule: mean held-out score ± 95% half-width, the paired difference to
    max-CV (> 0: better than max-CV) ± its half-width, and how often the rule chose otherwise."""
    rows: list[dict[str, Any]] = []
    for competition in sorted({r.competition for r in records}):
        runs = [r for r in records if r.competition == competition and r.error is None]
        for rule in [*OFFLINE_RULES, "submitted", ORACLE]:
            pairs = [(s, b) for r in runs if (s := _score(r, rule)) is not None and (b := _score(r, "max_cv")) is not None]
            if not pairs:
                continue
            sign = 1.0 if runs[0].higher_is_better else -1.0
            mean, half = _interval([s for s, _ in pairs])
            gain, gain_half = _interval([sign * (s - b) for s, b in pairs])
            differs = sum(1 for r in runs if rule in OFFLINE_RULES and picks(r)[rule] != picks(r)["max_cv"])
            rows.append({"competition": competition, "rule": rule, "repeats": len(pairs), "mean": mean, "half": half,
                         "vs_max_cv": gain, "vs_max_cv_half": gain_half, "differs": differs,
                         "higher_is_better": runs[0].higher_is_better})
    return rows


def render_holdout(rows: list[dict[str, Any]]) -> Table:
    table = Table(title="agentk bench: held-out score of each choice rule (mean ± 95% interval over repeats)")
    for column in ("competition", "rule", "repeats", "held-out score", "vs max-CV (> 0 better)", "picks ≠ max-CV"):
        table.add_column(column)
    for row in rows:
        table.add_row(row["competition"], row["rule"], str(row["repeats"]), f"{row['mean']:.4f} ± {row['half']:.4f}",
                      f"{row['vs_max_cv']:+.4f} ± {row['vs_max_cv_half']:.4f}", str(row["differs"]))
    return table


def holdout_bench(sources: list[str], config: RunConfig, repeats: int, fraction: float,
                  output: Path | None) -> list[dict[str, Any]]:
    """The bench's whole job for --holdout-repeats: run, summarise, write --output."""
    budget = config.solve.time_budget_s
    # Repeats of other fractions or budgets, from earlier benches in the same folder, stay out.
    records = [r for r in run_holdout(sources, config, repeats, fraction)
               if r.fraction == fraction and r.time_budget_s == budget and r.repeat < repeats]
    rows = summarise(records)
    if output is not None:
        output.write_text(json.dumps({"repeats": [r.model_dump() for r in records], "summary": rows}, indent=2),
                          encoding="utf-8")
    return rows
