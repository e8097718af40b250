"""The run report's solver section, from solve/solve_result.json (`SolveResult`, written by
`solve_pipeline.solver`) and the solver's event lines in logs/events.jsonl (per-fold scores and
which model each improvement adopted, which the record does not keep): the race, HEBO's tuning,
the blend, the decoding, the kept candidates and the score over time."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentk.core.metrics.direction import Direction, finite
from agentk.core.records.results import SolveResult
from agentk.core.records.workspace import json_lines
from agentk.report.page import NotAvailable
from agentk.report.run_section import Missing, Record, as_text, number_or_none, section
from agentk.report.run_selection import Selection, read_selection

EVENTS_FILE = "events.jsonl"


class RaceRow(Record):
    family: str
    status: str  # finished | pruned | failed | skipped | out_of_time
    first_fold_score: float | None = None
    fold_scores: list[float] = []  # from the solver's fold events, in fold order
    cv_score: float | None = None
    seconds: float = 0.0
    reason: str | None = None


class TrialRow(Record):
    number: int  # 0 is the family's defaults when the race scored them, then HEBO's suggestions
    kind: str  # defaults | warm | portfolio | hebo
    score: float | None = None
    best_so_far: float | None = None
    seconds: float | None = None
    error: str | None = None
    params: dict[str, Any] = {}


class Tuning(Record):
    family: str | None = None
    base_score: float | None = None
    planned_trials: int | None = None
    improved: bool | None = None
    trials: list[TrialRow] = []
    best: TrialRow | None = None


class Blend(Record):
    target: str
    method: str | None = None  # what was kept: best_single or a blender (weighted, stack, mlp, boosted)
    score: float | None = None
    best_single: str | None = None
    best_single_score: float | None = None
    single_scores: dict[str, float | None] = {}
    blend_scores: dict[str, float | None] = {}
    weights: list[tuple[str, float]] = []  # heaviest first
    dropped: dict[str, str] = {}


class Decoding(Record):
    target: str
    kind: str | None = None
    score: float | None = None
    argmax_score: float | None = None
    skipped: str | None = None
    detail: str = ""


class CandidateRow(Record):
    rank: int
    model: str | None = None
    score: float | None = None
    link: str | None = None  # relative to the workspace; None when the file is gone


class TimelinePoint(Record):
    seconds: float
    score: float
    model: str | None = None


class Timeline(Record):
    points: list[TimelinePoint]
    end_s: float | None = None  # the solve's end, where the last score stands


class SolverData(Record):
    light: bool = False  # only the setup's light check ran
    ranked_by: str | None = None  # setup | surrogate
    higher_is_better: bool | None = None
    folds: int | None = None
    elapsed_s: float | None = None
    time_budget_s: float | None = None
    phases_s: dict[str, float] = {}
    race: list[RaceRow] | NotAvailable
    tuning: Tuning | NotAvailable
    blend: list[Blend] | NotAvailable
    decoding: list[Decoding] | NotAvailable
    candidates: list[CandidateRow] | NotAvailable
    timeline: Timeline | NotAvailable
    selection: Selection | NotAvailable
    finetune_notes: list[str] = []
    warm_start: dict[str, Any] | None = None
    device: dict[str, Any] | None = None  # where torch work ran (solve_pipeline/networks/device.py's summary)


def read_solver(root: Path, record: SolveResult | NotAvailable) -> SolverData | NotAvailable:
    """The solver's section from its record (`run_data.read_solve_result`), or why there is none."""
    if isinstance(record, NotAvailable):
        return record
    return section("solve/solve_result.json", lambda: _solver(root, record))


def _solver(root: Path, result: SolveResult) -> SolverData:
    events = section("logs/events.jsonl", lambda: _solve_events(root / "logs" / EVENTS_FILE, bool(result.light)))
    direction = Direction.recorded(result.higher_is_better)
    finetune = result.finetune or {}
    return SolverData(
        light=bool(result.light), ranked_by=result.metric, higher_is_better=result.higher_is_better,
        folds=result.folds, elapsed_s=result.elapsed_s, time_budget_s=result.time_budget_s,
        phases_s=dict(result.phases_s or {}),
        race=section("the race", lambda: _race(result, events)),
        tuning=section("the tuning record", lambda: _tuning(result.tuning, direction)),
        blend=section("the blend record", lambda: _blend(result.blend, direction)),
        decoding=section("the decoding record", lambda: _decoding(result.decoding)),
        candidates=section("the candidates", lambda: _candidates(root, result)),
        timeline=section("the timeline", lambda: _timeline(result, events)),
        selection=section("the selection record", lambda: read_selection(result)),
        finetune_notes=[str(n) for n in finetune.get("notes") or []] + ([str(finetune["skipped"])] if finetune.get("skipped") else []),
        warm_start=result.warm_start, device=result.device,
    )


def _solve_events(path: Path, light: bool) -> list[dict[str, Any]]:
    """The solver's events of the solve solve_result.json records: the last one started of its
    kind (the setup's light check runs the solver too, and a resumed solve starts again)."""
    if not path.is_file():
        raise Missing("logs/events.jsonl is missing")
    runs: list[tuple[list[dict[str, Any]], bool | None]] = []
    for record in json_lines(path):
        if record.get("event") != "solver":
            continue
        if record.get("kind") == "start":
            runs.append(([], None))
        if not runs:
            continue
        lines, kind = runs[-1]
        lines.append(record)
        if record.get("kind") == "done":
            runs[-1] = (lines, bool(record.get("light")))
    for lines, kind in reversed(runs):
        if kind is None or kind == light:
            return lines
    raise Missing("logs/events.jsonl holds no solver run of this solve")


def _race(result: SolveResult, events: list[dict[str, Any]] | NotAvailable) -> list[RaceRow]:
    if not result.race:
        raise Missing("the solve recorded no race" + (" (light check)" if result.light else ""))
    folds: dict[str, dict[int, float]] = {}
    for event in events if isinstance(events, list) else []:
        if event.get("kind") == "fold" and finite(event.get("score")):
            folds.setdefault(str(event.get("model")), {})[int(event.get("fold") or 0)] = float(event["score"])
    cv = result.cv or {}
    rows = []
    for entry in result.race:
        family = str(entry.get("family"))
        rows.append(RaceRow(family=family, status=str(entry.get("status") or "?"), first_fold_score=number_or_none(entry.get("first_fold_score")),
                            fold_scores=[score for _, score in sorted(folds.get(family, {}).items())],
                            cv_score=number_or_none(cv.get(family)), seconds=number_or_none(entry.get("seconds")) or 0.0,
                            reason=entry.get("reason")))
    return rows


def _tuning(tuning: dict[str, Any] | None, direction: Direction | None) -> Tuning:
    if not tuning:
        raise Missing("the solve recorded no tuning")
    if tuning.get("skipped"):
        raise Missing(f"HEBO did not tune: {tuning['skipped']}")
    raw = [t for t in tuning.get("trials") or [] if isinstance(t, dict)]
    if not raw:
        raise Missing("HEBO ran no trial")
    base = number_or_none(tuning.get("base_score"))
    # tune_family hands HEBO the defaults' race score as a known first trial when it was finite.
    has_defaults = base is not None and raw[0].get("score") == base and not raw[0].get("warm")
    trials: list[TrialRow] = []
    best: float | None = None
    for number, record in enumerate(raw, start=0 if has_defaults else 1):
        score = number_or_none(record.get("score"))
        if score is not None and record.get("error") is None and (best is None or (direction or Direction(True)).better(score, best)):
            best = score
        kind = "defaults" if has_defaults and number == 0 else \
            ("warm" if record.get("warm") else ("portfolio" if record.get("portfolio") else "hebo"))
        trials.append(TrialRow(number=number, kind=kind, score=score, best_so_far=best, seconds=number_or_none(record.get("seconds")),
                            error=record.get("error"), params=dict(record.get("params") or {})))
    scored = [t for t in trials if t.score is not None and t.error is None]
    best_trial = (direction.best(scored, key=lambda t: t.score) if direction is not None else None) if scored else None
    return Tuning(family=tuning.get("family"), base_score=base, planned_trials=tuning.get("planned_trials"),
                  improved=tuning.get("improved"), trials=trials, best=best_trial)


def _blend(blend: dict[str, Any] | None, direction: Direction | None) -> list[Blend]:
    if not blend:
        raise Missing("the solve recorded no blend")
    if blend.get("skipped"):
        raise Missing(f"no blend: {blend['skipped']}")
    rows = []
    for target, report in blend.items():
        if not isinstance(report, dict):
            continue
        singles = {str(k): number_or_none(v) for k, v in (report.get("single_scores") or {}).items()}
        best = direction.best([(k, v) for k, v in singles.items() if v is not None], key=lambda kv: kv[1]) if direction else None
        weights = sorted(((str(k), float(v)) for k, v in (report.get("weights") or {}).items() if finite(v)), key=lambda kv: -kv[1])
        rows.append(Blend(target=str(target), method=report.get("method"), score=number_or_none(report.get("score")),
                          best_single=best[0] if best else None, best_single_score=best[1] if best else None,
                          single_scores=singles, blend_scores={str(k): number_or_none(v) for k, v in (report.get("blend_scores") or {}).items()},
                          weights=weights, dropped={str(k): str(v) for k, v in (report.get("dropped") or {}).items()}))
    if not rows:
        raise Missing("the blend record names no target")
    return rows


def _decoding(decoding: dict[str, Any] | None) -> list[Decoding]:
    if not decoding:
        raise Missing("the solve recorded no decoding (regression, or nothing to decode)")
    if isinstance(decoding.get("skipped"), str):
        raise Missing(f"no decoding: {decoding['skipped']}")
    rows = []
    for target, report in decoding.items():
        if not isinstance(report, dict):
            continue
        decoder = report.get("decoder") if isinstance(report.get("decoder"), dict) else {}
        values = decoder.get("values") or decoder.get("class_values") or []
        rows.append(Decoding(target=str(target), kind=decoder.get("kind"), score=number_or_none(report.get("score")),
                             argmax_score=number_or_none(report.get("argmax_score")), skipped=report.get("skipped"),
                             detail=as_text(values) if values else ""))
    if not rows:
        raise Missing("the decoding record names no target")
    return rows


def _candidates(root: Path, result: SolveResult) -> list[CandidateRow]:
    if not result.candidates:
        raise Missing("the solve kept no candidate file" + (" (the light check keeps none)" if result.light else ""))
    rows = []
    for rank, candidate in enumerate(result.candidates, start=1):
        path = root / candidate.path if candidate.path else None
        inside = path is not None and path.resolve().is_relative_to(root.resolve())
        link = Path(candidate.path).as_posix() if inside and path.is_file() else None
        rows.append(CandidateRow(rank=rank, model=candidate.model, score=candidate.validation_score, link=link))
    return rows


def _timeline(result: SolveResult, events: list[dict[str, Any]] | NotAvailable) -> Timeline:
    points = [TimelinePoint(seconds=float(s), score=float(v)) for s, v in result.timeline if finite(v)]
    if not points:
        raise Missing("the solve recorded no timeline (written by agentk since campaigns)")
    # Each timeline point is one adoption, and each adoption is one submission event, in order.
    adopted = [e for e in (events if isinstance(events, list) else []) if e.get("kind") in ("submission", "submission_kept")
               and finite(e.get("validation_score"))]
    if len(adopted) == len(points):
        for point, event in zip(points, adopted, strict=True):
            point.model = str(event.get("model")) if event.get("model") else None
    return Timeline(points=points, end_s=result.elapsed_s)
