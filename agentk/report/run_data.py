"""Everything a run's report shows, read from the run's workspace into plain records.

Each section is built on its own: a file that is missing, or written by an older agentk in a shape
this reader does not know, turns that section (only) into `NotAvailable(reason)`. The shapes read
here are the ones their writers produce: result.json (`agentk.runner`, `RunResult`),
logs/attempts.jsonl (`setup_pipeline.mdp`), setup/plan.json and the maps (the setup stages),
solve/solve_result.json (`solve_pipeline.solver`, `SolveResult`) and the solver's event lines in
logs/events.jsonl (per-fold scores, which solve_result.json does not keep).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict

from agentk.core.artifacts import RunResult, SetupLayout, SolveResult, llm_tokens, read_map
from agentk.core.errors import AgentKError
from agentk.core.metrics.direction import Direction, finite
from agentk.core.workspace import Workspace, json_lines
from agentk.report.page import NotAvailable
from agentk.report.run_selection import Missing as SelectionMissing
from agentk.report.run_selection import Selection, read_selection

T = TypeVar("T")

ATTEMPTS_LINK = Workspace(Path()).attempts_log.as_posix()  # logs/attempts.jsonl, relative to the page
EVENTS_FILE = "events.jsonl"
USAGE_FILE = "llm_usage.json"
# Rows read to decide a column's kind: enough to tell numbers, dates, labels and prose apart.
SAMPLE_ROWS = 2000
# A class chart beyond this many classes shows the most frequent ones and says how many it left out.
MAX_CLASSES = 30
HISTOGRAM_BINS = 30


class Missing(Exception):
    """A section's input is not there; the message is the reason the page shows."""


class _Record(BaseModel):
    model_config = ConfigDict(arbitrary_types_allowed=True)


def section(what: str, build: Callable[[], T]) -> T | NotAvailable:
    """`build()`, or why it could not be built: a report never fails because of its data."""
    try:
        return build()
    except Missing as exc:
        return NotAvailable(str(exc))
    except Exception as exc:  # noqa: BLE001 - any odd file becomes a note on the page, not an error
        return NotAvailable(f"{what} could not be read ({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})")


# ---- the header ------------------------------------------------------------------------------


class Leaderboard(_Record):
    rank: int | None = None
    n_teams: int | None = None
    percentile: float | None = None  # fraction of teams strictly worse
    medal: str | None = None
    public_score: float | None = None  # the score placed: Kaggle's public score, or the test score
    basis: str = "public score"  # which score that is
    submissions: int = 0


class Header(_Record):
    competition: str
    source: str | None = None
    metric: str | None = None
    direction: str = "direction not recorded"
    higher_is_better: bool | None = None
    validation_score: float | None = None
    test_score: float | NotAvailable = NotAvailable("not graded")
    test_metric: str | None = None
    model: str | None = None
    leaderboard: Leaderboard | NotAvailable = NotAvailable("not submitted to Kaggle (run with --submit)")
    elapsed_s: float | None = None
    policy: str | None = None
    tokens: int | NotAvailable = NotAvailable("no LLM was used")
    phase: str | None = None
    error: str | None = None
    submission: str | NotAvailable = NotAvailable("no validated submission")  # a link relative to the workspace
    result: NotAvailable | None = None  # set when result.json is missing: the run has not finished


def read_header(root: Path) -> Header:
    workspace = Workspace(root)
    result = RunResult.read(workspace.result_path)
    if result is None:
        state = _json_or_empty(workspace.state_path)
        unfinished = NotAvailable("result.json is missing: the run has not finished (or was stopped)")
        return Header(competition=root.name, phase=state.get("phase"), policy=state.get("policy"),
                      elapsed_s=state.get("elapsed_s"), error=state.get("error"),
                      submission=_submission_link(root, None), result=unfinished, test_score=unfinished,
                      leaderboard=unfinished, tokens=section("the LLM usage", lambda: _tokens(None, workspace.logs / USAGE_FILE)))
    direction = result.direction
    header = Header(
        competition=result.competition_id, source=result.source, metric=result.metric,
        higher_is_better=result.higher_is_better,
        direction="direction not recorded" if direction is None else ("higher is better" if direction.higher_is_better else "lower is better"),
        validation_score=result.validation_score, model=result.model, test_metric=result.test_metric,
        elapsed_s=result.elapsed_s, policy=result.policy, phase=result.phase, error=result.error,
        submission=_submission_link(root, result),
    )
    if result.test_score is not None:
        header.test_score = result.test_score
    elif result.test_score_note:
        header.test_score = NotAvailable(result.test_score_note)
    header.leaderboard = section("the leaderboard place", lambda: _leaderboard(result))
    header.tokens = section("the LLM usage", lambda: _tokens(result.llm_usage, workspace.logs / USAGE_FILE))
    return header


def _leaderboard(result: RunResult) -> Leaderboard | NotAvailable:
    """Kaggle's place for a submitted run; else the grader's place of the test score on the
    competition's leaderboard file."""
    kaggle = result.kaggle or {}
    board = kaggle.get("leaderboard")
    sent = len(kaggle.get("submissions") or [])
    if board:
        return Leaderboard(rank=board.get("rank"), n_teams=board.get("n_teams"), percentile=board.get("percentile"),
                           medal=board.get("medal"), public_score=kaggle.get("best_public"), submissions=sent)
    local = result.test_leaderboard
    if local is not None:
        return Leaderboard(rank=local.rank, n_teams=local.n_teams, percentile=local.percentile, medal=local.medal,
                           public_score=result.test_score, basis="test score")
    if not kaggle:
        return NotAvailable("not submitted to Kaggle (run with --submit), and the competition has no leaderboard.csv")
    reason = kaggle.get("stop_reason") or ("Kaggle has not scored the submission" if sent else "nothing was sent to Kaggle")
    return NotAvailable(f"no leaderboard place: {reason}")


def _tokens(usage: dict[str, Any] | None, usage_file: Path) -> int | NotAvailable:
    usage = usage or _json_or_empty(usage_file)
    if not usage:
        return NotAvailable("no LLM was used (no logs/llm_usage.json)")
    return llm_tokens(usage)


def _submission_link(root: Path, result: RunResult | None) -> str | NotAvailable:
    """The submission as a link relative to the workspace, so the page works wherever it is opened
    from (result.json keeps the absolute path of the machine that ran it)."""
    workspace = Workspace(root)
    if result is not None and not result.valid_submission:
        return NotAvailable("the run has no validated submission" + ("; its error is below" if result.error else ""))
    if workspace.submission_path.is_file():
        return workspace.submission_path.relative_to(root).as_posix()
    if result is not None and result.submission_path and Path(result.submission_path).is_file():
        return Path(os.path.relpath(result.submission_path, root)).as_posix()
    return NotAvailable("submissions/submission.csv is missing")


# ---- setup -----------------------------------------------------------------------------------


class Attempt(_Record):
    attempt: int
    passed: bool
    declined: bool = False
    seconds: float | None = None
    problems: list[str] = []
    plan: str = ""


class StageRow(_Record):
    name: str
    kind: str  # stage | meta
    attempts: int
    passed: bool
    seconds: float
    failures: list[Attempt] = []  # the attempts whose checks failed, with the checks' messages


class Decision(_Record):
    what: str
    value: str
    why: list[str] = []  # the evidence lines that mention the value


class SetupData(_Record):
    stages: list[StageRow] | NotAvailable
    decisions: list[Decision] | NotAvailable
    assumptions: list[str] | NotAvailable  # what the setup took without proof
    attempts_link: str | None = None


def read_setup(root: Path) -> SetupData:
    attempts = Workspace(root).attempts_log
    return SetupData(
        stages=section(ATTEMPTS_LINK, lambda: _stages(attempts)),
        decisions=section("setup/plan.json", lambda: _decisions(SetupLayout(root / "setup"))),
        assumptions=section("setup/plan.json", lambda: _assumptions(SetupLayout(root / "setup"))),
        attempts_link=ATTEMPTS_LINK if attempts.is_file() else None,
    )


def _stages(path: Path) -> list[StageRow]:
    if not path.is_file():
        raise Missing("logs/attempts.jsonl is missing: no setup attempt was logged")
    rows: dict[tuple[str, str], StageRow] = {}
    for record in json_lines(path):
        name, kind = str(record.get("stage") or "?"), str(record.get("kind") or "stage")
        attempt = Attempt(attempt=int(record.get("attempt") or 0), passed=bool(record.get("passed")),
                          declined=bool(record.get("declined")), seconds=_number(record.get("elapsed_s")),
                          problems=[str(p) for p in record.get("problems") or []], plan=str(record.get("plan") or ""))
        row = rows.setdefault((kind, name), StageRow(name=name, kind=kind, attempts=0, passed=False, seconds=0.0))
        # A resumed run numbers its attempts on from the killed one's: the highest number is the count.
        row.attempts = max(row.attempts + 1, attempt.attempt)
        row.passed = attempt.passed  # the latest attempt decides
        row.seconds += attempt.seconds or 0.0
        if not attempt.passed:
            row.failures.append(attempt)
    if not rows:
        raise Missing("logs/attempts.jsonl is empty: no setup attempt was logged")
    return list(rows.values())


def _plan(layout: SetupLayout) -> dict[str, Any]:
    if not layout.plan.is_file():
        raise Missing("setup/plan.json is missing: the plan stage did not pass")
    data = json.loads(layout.plan.read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise Missing("setup/plan.json is not a JSON object")
    return data


def _decisions(layout: SetupLayout) -> list[Decision]:
    """What the setup decided about the data: the plan's facts, each with the evidence lines that
    name it (perception's notes and the metric's evidence)."""
    plan = _plan(layout)
    facts = plan.get("facts") if isinstance(plan.get("facts"), dict) else {}
    evidence = facts.get("evidence") if isinstance(facts.get("evidence"), dict) else {}
    lines = [str(n) for n in facts.get("notes") or []]
    lines += [part.strip() for key, text in evidence.items() if key != "metric" for part in str(text).split(";")]
    lines = list(dict.fromkeys(line for line in lines if line))

    def mentioning(*values: object) -> list[str]:
        names = [str(v) for v in values if v not in (None, "", [])]
        return [line for line in lines if any(name in line for name in names)]

    decisions: list[Decision] = []

    def add(what: str, value: object, why: list[str]) -> None:
        if value not in (None, "", [], {}):
            decisions.append(Decision(what=what, value=_text(value), why=why))

    train_files = (facts.get("train_table") or {}).get("files") or facts.get("train_file")
    test_files = (facts.get("test_table") or {}).get("files") or facts.get("test_file")
    add("training rows", train_files, mentioning(*_as_list(train_files)))
    add("test rows", test_files, mentioning(*_as_list(test_files)))
    sample = plan.get("sample_submission") or facts.get("sample_submission")
    add("sample submission", sample, mentioning(sample))
    id_column = plan.get("id_column") or facts.get("id_column")
    ids = [id_column, facts.get("train_id_column"), facts.get("test_id_column")]
    add("id column", " / ".join(dict.fromkeys(str(i) for i in ids if i)), mentioning(*(f"'{i}'" for i in ids if i)))
    targets = plan.get("target_columns") or [t.get("column") for t in facts.get("targets") or [] if isinstance(t, dict)]
    task = plan.get("task_type")
    add("target", f"{_text(targets)} ({task})" if task else targets, mentioning(*(f"'{t}'" for t in _as_list(targets))))
    metric = plan.get("metric")
    higher = plan.get("higher_is_better")
    direction = "" if higher is None else (", higher is better" if higher else ", lower is better")
    add("metric", f"{metric}{direction}" if metric else None, [str(evidence["metric"])] if evidence.get("metric") else [])
    add("submission", _submission_text(plan, facts), [])
    add("input modalities", facts.get("input_modalities") or _modalities(layout), [])
    dropped = facts.get("dropped_columns")
    if isinstance(dropped, dict) and dropped:
        add("dropped columns", ", ".join(dropped), [f"{column}: {why}" for column, why in dropped.items()])
    if not decisions:
        raise Missing("setup/plan.json records no decision about the files, ids, target or metric")
    return decisions


def _submission_text(plan: dict[str, Any], facts: dict[str, Any]) -> str | None:
    columns = plan.get("submission_columns") or facts.get("submission_columns")
    form = facts.get("submission_format")
    if not columns and not form:
        return None
    return f"{form or ''} {_text(columns) if columns else ''}".strip()


def _modalities(layout: SetupLayout) -> list[str]:
    data = _json_or_empty(layout.modalities)
    return [str(m) for m in data.get("input_modalities") or []]


def _assumptions(layout: SetupLayout) -> list[str]:
    return [_text(line) for line in _plan(layout).get("assumptions") or []]


# ---- solver ----------------------------------------------------------------------------------


class RaceRow(_Record):
    family: str
    status: str  # finished | pruned | failed | skipped | out_of_time
    first_fold_score: float | None = None
    fold_scores: list[float] = []  # from the solver's fold events, in fold order
    cv_score: float | None = None
    seconds: float = 0.0
    reason: str | None = None


class Trial(_Record):
    number: int  # 0 is the family's defaults when the race scored them, then HEBO's suggestions
    kind: str  # defaults | warm | portfolio | hebo
    score: float | None = None
    best_so_far: float | None = None
    seconds: float | None = None
    error: str | None = None
    params: dict[str, Any] = {}


class Tuning(_Record):
    family: str | None = None
    base_score: float | None = None
    planned_trials: int | None = None
    improved: bool | None = None
    trials: list[Trial] = []
    best: Trial | None = None


class Blend(_Record):
    target: str
    method: str | None = None  # what was kept: best_single, weighted or mlp
    score: float | None = None
    best_single: str | None = None
    best_single_score: float | None = None
    single_scores: dict[str, float | None] = {}
    blend_scores: dict[str, float | None] = {}
    weights: list[tuple[str, float]] = []  # heaviest first
    dropped: dict[str, str] = {}


class Decoding(_Record):
    target: str
    kind: str | None = None
    score: float | None = None
    argmax_score: float | None = None
    skipped: str | None = None
    detail: str = ""


class Candidate(_Record):
    rank: int
    model: str | None = None
    score: float | None = None
    link: str | None = None  # relative to the workspace; None when the file is gone


class TimelinePoint(_Record):
    seconds: float
    score: float
    model: str | None = None


class Timeline(_Record):
    points: list[TimelinePoint]
    end_s: float | None = None  # the solve's end, where the last score stands


class SolverData(_Record):
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
    candidates: list[Candidate] | NotAvailable
    timeline: Timeline | NotAvailable
    selection: Selection | NotAvailable
    finetune_notes: list[str] = []
    warm_start: dict[str, Any] | None = None
    device: dict[str, Any] | None = None  # where torch work ran (solve_pipeline/device.py's summary)


def read_solver(root: Path) -> SolverData | NotAvailable:
    path = SolveResult.path_in(root / "solve")
    if not path.is_file():
        return NotAvailable("solve/solve_result.json is missing: the solver has not finished")
    return section("solve/solve_result.json", lambda: _solver(root, SolveResult.model_validate(json.loads(path.read_text(encoding="utf-8")))))


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
        selection=section("the selection record", lambda: _selection(result)),
        finetune_notes=[str(n) for n in finetune.get("notes") or []] + ([str(finetune["skipped"])] if finetune.get("skipped") else []),
        warm_start=result.warm_start, device=result.device,
    )


def _selection(result: SolveResult) -> Selection:
    try:
        return read_selection(result)
    except SelectionMissing as exc:
        raise Missing(str(exc)) from exc


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
        rows.append(RaceRow(family=family, status=str(entry.get("status") or "?"), first_fold_score=_number(entry.get("first_fold_score")),
                            fold_scores=[score for _, score in sorted(folds.get(family, {}).items())],
                            cv_score=_number(cv.get(family)), seconds=_number(entry.get("seconds")) or 0.0,
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
    base = _number(tuning.get("base_score"))
    # tune_family hands HEBO the defaults' race score as a known first trial when it was finite.
    has_defaults = base is not None and raw[0].get("score") == base and not raw[0].get("warm")
    trials: list[Trial] = []
    best: float | None = None
    for number, record in enumerate(raw, start=0 if has_defaults else 1):
        score = _number(record.get("score"))
        if score is not None and record.get("error") is None and (best is None or (direction or Direction(True)).better(score, best)):
            best = score
        kind = "defaults" if has_defaults and number == 0 else \
            ("warm" if record.get("warm") else ("portfolio" if record.get("portfolio") else "hebo"))
        trials.append(Trial(number=number, kind=kind, score=score, best_so_far=best, seconds=_number(record.get("seconds")),
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
        singles = {str(k): _number(v) for k, v in (report.get("single_scores") or {}).items()}
        best = direction.best([(k, v) for k, v in singles.items() if v is not None], key=lambda kv: kv[1]) if direction else None
        weights = sorted(((str(k), float(v)) for k, v in (report.get("weights") or {}).items() if finite(v)), key=lambda kv: -kv[1])
        rows.append(Blend(target=str(target), method=report.get("method"), score=_number(report.get("score")),
                          best_single=best[0] if best else None, best_single_score=best[1] if best else None,
                          single_scores=singles, blend_scores={str(k): _number(v) for k, v in (report.get("blend_scores") or {}).items()},
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
        rows.append(Decoding(target=str(target), kind=decoder.get("kind"), score=_number(report.get("score")),
                             argmax_score=_number(report.get("argmax_score")), skipped=report.get("skipped"),
                             detail=_text(values) if values else ""))
    if not rows:
        raise Missing("the decoding record names no target")
    return rows


def _candidates(root: Path, result: SolveResult) -> list[Candidate]:
    if not result.candidates:
        raise Missing("the solve kept no candidate file" + (" (the light check keeps none)" if result.light else ""))
    rows = []
    for rank, candidate in enumerate(result.candidates, start=1):
        path = root / candidate.path if candidate.path else None
        inside = path is not None and path.resolve().is_relative_to(root.resolve())
        link = Path(candidate.path).as_posix() if inside and path.is_file() else None
        rows.append(Candidate(rank=rank, model=candidate.model, score=candidate.validation_score, link=link))
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


# ---- data ------------------------------------------------------------------------------------


class Feature(_Record):
    map: str  # the map file
    column: str
    kind: str  # numeric | categorical | date | text | boolean | image | empty


class TargetDistribution(_Record):
    column: str
    task: str
    rows: int
    missing: int = 0
    classes: list[tuple[str, int]] = []  # most frequent first, at most MAX_CLASSES
    other_classes: int = 0  # classes left out of `classes`
    bins: list[tuple[float, float, int]] = []  # (from, to, count) for a regression target
    mean: float | None = None


class DataData(_Record):
    n_train: int | NotAvailable
    n_test: int | NotAvailable
    n_train_total: int | None = None
    features: list[Feature] | NotAvailable
    targets: list[TargetDistribution] | NotAvailable


def read_data(root: Path) -> DataData:
    layout = SetupLayout(root / "setup")
    recorded = _json_or_empty(SolveResult.path_in(root / "solve"))
    return DataData(
        n_train=section("the training map", lambda: _size(recorded.get("n_train"), layout, "train")),
        n_test=section("the test map", lambda: _size(recorded.get("n_test"), layout, "test")),
        n_train_total=recorded.get("n_train_total"),
        features=section("the input maps", lambda: _features(layout)),
        targets=section("the target map", lambda: _targets(layout)),
    )


def _size(recorded: object, layout: SetupLayout, split: str) -> int:
    if isinstance(recorded, int):
        return recorded
    maps = layout.input_maps(split)  # type: ignore[arg-type]
    if not maps:
        raise Missing(f"no {split} input map under setup/: the setup did not write it")
    return len(pd.read_csv(maps[0], usecols=["id"], dtype=str))


def _features(layout: SetupLayout) -> list[Feature]:
    maps = layout.input_maps("train")
    if not maps:
        raise Missing("no training input map under setup/: the setup did not write one")
    features = []
    for path in maps:
        frame = pd.read_csv(path, nrows=SAMPLE_ROWS, dtype={"id": str}, low_memory=False)
        code = path.name.split("_")[1]
        for column in frame.columns:
            if column == "id":
                continue
            kind = {"img": "image", "txt": "text"}.get(code) or _column_kind(frame[column])
            features.append(Feature(map=path.name, column=str(column), kind=kind))
    if not features:
        raise Missing("the training maps hold no feature column")
    return features


def _column_kind(values: pd.Series) -> str:
    present = values.dropna()
    if present.empty:
        return "empty"
    if pd.api.types.is_bool_dtype(present) or set(present.astype(str).str.lower().unique()) <= {"true", "false"}:
        return "boolean"
    if pd.api.types.is_numeric_dtype(present):
        return "numeric"
    text = present.astype(str)
    if text.str.len().mean() > 30 and text.str.contains(" ").mean() > 0.5:
        return "text"
    if text.str.match(r"^\d{4}-\d{1,2}-\d{1,2}").mean() > 0.9:
        return "date"
    return "categorical"


def _targets(layout: SetupLayout) -> list[TargetDistribution]:
    """Each target's distribution over the training rows, from the map the setup wrote (raw labels
    or values), typed by target_info.json."""
    if not layout.target_map.is_file():
        raise Missing("setup/train_tab_target_map.csv is missing: the target stage did not pass")
    frame = read_map(layout.target_map)
    info = _json_or_empty(layout.target_info).get("targets") or []
    tasks = {str(t.get("column")): str(t.get("task")) for t in info if isinstance(t, dict)}
    rows = []
    for column in (c for c in frame.columns if c != "id"):
        values = frame[column]
        task = tasks.get(str(column)) or ("regression" if pd.api.types.is_float_dtype(values) else "classes")
        present = values.dropna()
        dist = TargetDistribution(column=str(column), task=task, rows=len(values), missing=int(values.isna().sum()))
        if task == "regression":
            numbers = pd.to_numeric(present, errors="coerce").dropna().to_numpy(dtype=float)
            numbers = numbers[np.isfinite(numbers)]
            if numbers.size:
                counts, edges = np.histogram(numbers, bins=min(HISTOGRAM_BINS, max(1, len(np.unique(numbers)))))
                dist.bins = [(float(a), float(b), int(n)) for a, b, n in zip(edges[:-1], edges[1:], counts, strict=True)]
                dist.mean = float(numbers.mean())
        else:
            counts = present.astype(str).value_counts()
            dist.classes = [(str(label), int(n)) for label, n in counts.head(MAX_CLASSES).items()]
            dist.other_classes = max(0, len(counts) - MAX_CLASSES)
        rows.append(dist)
    if not rows:
        raise Missing("setup/train_tab_target_map.csv has no target column")
    return rows


# ---- the whole page --------------------------------------------------------------------------


class RunData(_Record):
    root: Path
    header: Header | NotAvailable
    setup: SetupData
    solver: SolverData | NotAvailable
    data: DataData
    files: list[tuple[str, str]] = []  # (label, relative link) of the run's files that exist


def is_run_workspace(path: Path) -> bool:
    return (path / "result.json").is_file() or (path / "state.json").is_file()


def read_run(root: Path) -> RunData:
    """Everything the run report shows; an AgentKError only when `root` is not a run workspace."""
    root = Path(root)
    if not root.is_dir() or not is_run_workspace(root):
        raise AgentKError(f"{root} is not a run workspace (no result.json or state.json in it)")
    solver = read_solver(root)
    known = [("result.json", "result.json"), ("config.json", "config.json"), ("setup attempts", ATTEMPTS_LINK),
             ("events", f"logs/{EVENTS_FILE}"), ("solve record", "solve/solve_result.json"),
             ("setup plan", "setup/plan.json"), ("task summary", "setup/task_summary.md")]
    return RunData(
        root=root,
        header=section("result.json", lambda: read_header(root)),
        setup=read_setup(root),
        solver=solver,
        data=read_data(root),
        files=[(label, link) for label, link in known if (root / link).is_file()],
    )


# ---- small readers ---------------------------------------------------------------------------


def _json_or_empty(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def _as_list(value: object) -> list[Any]:
    if value is None:
        return []
    return list(value) if isinstance(value, list | tuple) else [value]


def _text(value: object) -> str:
    if isinstance(value, list | tuple):
        return ", ".join(str(v) for v in value)
    if isinstance(value, dict):
        return ", ".join(f"{k}: {v}" for k, v in value.items())
    return str(value)
