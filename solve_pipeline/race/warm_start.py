"""Warm-starting the solver from a campaign's nearest solved tasks (meta-learning as in
Auto-sklearn): their winning families race first, a warm family is preferred for HEBO when the
race cannot tell it from the best, and their tuned configurations are HEBO's first trials.

Suggestions come from other tasks, so every one is checked against this task: a family that is
not a candidate here is ignored, a configuration is fitted into the tuned family's space. What
was used and what was ignored (and why) is kept in a `WarmReport` for solve_result.json.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from agentk.core.records.config import WarmStart
from agentk.core.metrics.direction import Direction, finite
from solve_pipeline.base.baseline_models import ModelCandidate
from solve_pipeline.base.cv import CandidateRun
from solve_pipeline.base.dataset import FeatureSet
from solve_pipeline.race.hebo_tool import SearchParam
from solve_pipeline.race.registry import BY_NAME

# Warm configurations may take at most this share of HEBO's planned trials: the rest is HEBO's
# own search, which the warm points only inform.
WARM_TRIAL_SHARE = 0.5


@dataclass
class WarmReport:
    """What a warm start suggested and what this solve did with each suggestion."""

    sources: list[str]
    used: list[dict[str, Any]] = field(default_factory=list)
    ignored: list[dict[str, Any]] = field(default_factory=list)
    race_order: list[str] = field(default_factory=list)
    tuning: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"sources": self.sources, "used": self.used, "ignored": self.ignored,
                "race_order": self.race_order, "tuning": self.tuning}


def warm_families(warm: WarmStart) -> list[str]:
    """The suggested families, best first, then those with configurations only; no repeats."""
    return list(dict.fromkeys([*warm.families, *warm.configs]))


def order_race(candidates: Sequence[ModelCandidate], warm: WarmStart, features: FeatureSet,
               report: WarmReport) -> list[ModelCandidate]:
    """The race's candidates with the warm families right after the pace-setter, in the warm order,
    the rest after them in their own order. The race finishes its first family whatever it costs, so
    that place keeps the cold order's first, cheapest family (the leader on these inputs, e.g.
    pretrained features on images, or the linear model)."""
    by_name = {c.name: c for c in candidates}
    warm_here: list[str] = []
    for name in warm.families:
        if name in warm_here:
            continue
        if name not in BY_NAME:
            report.ignored.append({"family": name, "reason": "not a model family"})
        elif name not in by_name:
            report.ignored.append({"family": name, "reason": "not a race candidate for this task"})
        else:
            warm_here.append(name)
    leaders = [c.name for c in candidates if c.name in BY_NAME and BY_NAME[c.name].leads(features)]
    # The cold order's first family stays first too: it is the cheapest, and the race's first family
    # sets the pace and always finishes. A slow warm winner in its place (a random forest on 10k rows
    # at a 15 s budget) took the whole race and left a worse model than the cold start.
    pace = [candidates[0].name] if candidates and candidates[0].name not in leaders else []
    first = leaders + pace + [n for n in warm_here if n not in leaders + pace]
    ordered = [by_name[n] for n in first] + [c for c in candidates if c.name not in first]
    report.race_order = [c.name for c in ordered]
    for name in warm_here:
        report.used.append({"family": name, "as": "raced first" if name not in leaders else "raced first (leader)"})
    for name in warm.configs:
        if name not in BY_NAME:
            report.ignored.append({"family": name, "configs": len(warm.configs[name]),
                                   "reason": "not a model family"})
    return ordered


def standard_error(run: CandidateRun) -> float:
    """The standard error of a run's mean fold score: how far apart two families' CV scores can be
    by the luck of the folds alone; 0 with fewer than two scored folds."""
    scores = [v for v in run.fold_scores.values() if finite(v)]
    if len(scores) < 2:
        return 0.0
    return float(np.std(scores, ddof=1) / math.sqrt(len(scores)))


def choose_tuned(affordable: Sequence[CandidateRun], warm: WarmStart, score: Mapping[str, float],
                 direction: Direction, report: WarmReport, tunable: Collection[str] = ()) -> CandidateRun:
    """Which affordable family HEBO tunes: the first warm family whose CV score is within the race's
    noise (one standard error of the best's fold scores) of the best, else the best.
    `affordable` is best first and not empty; `score` is each run's CV score by name; `tunable`
    names every finished tunable family, affordable or not (for the report's reasons)."""
    best = affordable[0]
    noise = standard_error(best)
    by_name = {r.name: r for r in affordable}
    notes: list[dict[str, Any]] = []
    chosen = best
    for name in warm_families(warm):
        if name not in BY_NAME:
            continue  # reported with the race's order
        run = by_name.get(name)
        if run is None:
            if not BY_NAME[name].space:
                reason = "has no search space"
            elif name in tunable:
                reason = "its cross-validation is too slow for a worthwhile number of trials in the time left"
            else:
                reason = "not tunable for this task, or did not finish the race"
            notes.append({"family": name, "reason": reason})
            continue
        gap = abs(score[best.name] - score[name]) if finite(score[name]) else math.inf
        if run is best or gap <= noise:
            chosen = run
            notes.append({"family": name, "chosen": True, "gap": gap, "noise": noise})
            break
        notes.append({"family": name, "gap": gap, "noise": noise,
                      "reason": f"finished {gap:.4g} behind {best.name}, more than the race's noise {noise:.4g}"})
    report.tuning = {"chosen": chosen.name, "cold_choice": best.name, "candidates": notes}
    if chosen is not best:
        report.used.append({"family": chosen.name, "as": "tuned instead of the race's best",
                            "race_best": best.name})
    elif any(n.get("chosen") for n in notes):
        report.used.append({"family": chosen.name, "as": "tuned"})
    for note in notes:
        if "reason" in note:
            report.ignored.append({"family": note["family"], "as": "tuning", "reason": note["reason"]})
    return chosen


def fit_config(config: Mapping[str, Any], space: Sequence[SearchParam],
               defaults: Mapping[str, Any]) -> tuple[dict[str, Any] | None, list[str]]:
    """A configuration from another task made a point of this family's space: unknown keys dropped,
    numbers clipped into the bounds (integers rounded), an unknown category or a value of the wrong
    kind replaced by the default, a missing parameter given its default. Returns the point (None
    when a parameter has neither a usable value nor a default) and a note per change."""
    names = {p.name for p in space}
    notes = [f"dropped {key!r}: not in the search space" for key in config if key not in names]
    point: dict[str, Any] = {}
    for param in space:
        if param.name in config:
            value, note = _fit_value(param, config[param.name])
            if note is not None:
                notes.append(note)
            if value is not None:
                point[param.name] = value
                continue
        if param.name not in defaults:
            notes.append(f"{param.name!r} has no usable value and no default: configuration dropped")
            return None, notes
        if param.name not in config:
            notes.append(f"{param.name!r} missing: default {defaults[param.name]!r}")
        point[param.name] = param.to_python(defaults[param.name])
    return point, notes


def _fit_value(param: SearchParam, value: Any) -> tuple[Any | None, str | None]:
    """(the value inside the parameter's range, a note when changed); None when unusable."""
    if param.kind == "cat":
        text = str(value)
        if text in (param.categories or []):
            return text, None
        return None, f"{param.name!r} {value!r} is not one of {param.categories}: default used"
    if param.kind == "bool":
        if isinstance(value, (bool, np.bool_)) or value in (0, 1):
            return bool(value), None
        return None, f"{param.name!r} {value!r} is not a boolean: default used"
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        return None, f"{param.name!r} {value!r} is not a finite number: default used"
    lb, ub = float(param.lb), float(param.ub)  # type: ignore[arg-type]
    fitted = min(max(float(value), lb), ub)
    if param.kind == "int":
        fitted = int(min(max(round(fitted), math.ceil(lb)), math.floor(ub)))
    if fitted != value:
        return fitted, f"{param.name!r} {value!r} -> {fitted!r} (space {param.lb:g}..{param.ub:g})"
    return param.to_python(fitted), None


def _same_point(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    if a.keys() != b.keys():
        return False
    return all(math.isclose(a[k], b[k], rel_tol=1e-9) if isinstance(a[k], float) and isinstance(b[k], (int, float))
               else a[k] == b[k] for k in a)


def warm_points(family: str, configs: Sequence[Mapping[str, Any]], space: Sequence[SearchParam],
                defaults: Mapping[str, Any], planned_trials: int, report: WarmReport) -> list[dict[str, Any]]:
    """The tuned family's warm configurations as HEBO's first points: fitted into the space, without
    repeats or the defaults (the race scored those already), at most WARM_TRIAL_SHARE of the plan."""
    room = max(1, int(WARM_TRIAL_SHARE * planned_trials))
    default_point = {p.name: p.to_python(defaults[p.name]) for p in space if p.name in defaults}
    points: list[dict[str, Any]] = []
    for config in configs:
        point, notes = fit_config(config, space, defaults)
        entry: dict[str, Any] = {"family": family, "config": dict(config)}
        if point is None:
            report.ignored.append({**entry, "reason": "; ".join(notes)})
        elif _same_point(point, default_point):
            report.ignored.append({**entry, "reason": "the family's defaults, which the race already scored"})
        elif any(_same_point(point, p) for p in points):
            report.ignored.append({**entry, "reason": "the same point as an earlier warm configuration"})
        elif len(points) >= room:
            report.ignored.append({**entry, "reason": f"beyond the warm share of the {planned_trials} planned trials"})
        else:
            points.append(point)
            report.used.append({**entry, "as": "HEBO trial", "params": point, "adjusted": notes})
    return points


def ignore_configs(warm: WarmStart, tuned: str | None, reason: str, report: WarmReport) -> None:
    """Record the configurations of every family but the tuned one (all of them when `tuned` is
    None) as ignored for `reason`."""
    for family, configs in warm.configs.items():
        if family == tuned or family not in BY_NAME:
            continue
        for config in configs:
            report.ignored.append({"family": family, "config": dict(config), "reason": reason})
