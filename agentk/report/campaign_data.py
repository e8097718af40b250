"""What a campaign's report shows, read from the campaign folder: state.json, decisions.jsonl, each
task's workspace (result.json, solve/solve_result.json, logs/attempts.jsonl, setup/modalities.json),
leaderboards a task was placed on, and the sibling campaigns of an `agentk bench --campaign`.

The report sits beside `agentk.campaign` (which refreshes it), so it reads the campaign's files with
its own small readers rather than importing the campaign package. Every reader is lenient: a field
it does not know is ignored, a file it cannot read is left out, and the page says what is missing.
"""

from __future__ import annotations

import io
import os
import re
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
from pydantic import BaseModel, ConfigDict

from agentk.core.artifacts import SetupLayout
from agentk.core.records.campaign_record import BENCH_DIR, WORKSPACES_DIR, OrderRow, TaskState, seed_workspaces
from agentk.core.pass_at import pass_at_k as estimate_pass_at_k
from agentk.core.records.results import RunResult, SolveResult
from agentk.core.records.workspace import Workspace, json_lines, read_json_object
from agentk.grading import leaderboard_position
from agentk.report.bench_data import load as load_bench
from agentk.report.elo import Round
from agentk.report.page import REPORT_FILE, NotAvailable
from agentk.sources.base import LEADERBOARD_NAMES

PASS_AT = (1, 3, 10)
# How the runner names the stage a setup stopped at in result.json's error.
_FAILED_STAGE = re.compile(r"(?:setup stage|meta check) '([^']+)'")


# ---------------------------------------------------------------- the campaign's own files


class _Lenient(BaseModel):
    model_config = ConfigDict(extra="ignore")


class RankedRecord(_Lenient):
    task_id: str
    complexity: float | None = None
    score: float | None = None
    terms: dict[str, float] = {}
    rank: int = 0


class DecisionRecord(_Lenient):
    """One line of decisions.jsonl: a choice, its equation-7 terms and the candidates' ranking."""

    round: int = 0
    time: str | None = None
    chosen: str = ""
    order: str = ""
    score: float | None = None
    terms: dict[str, float] = {}
    reason: str = ""
    ranking: list[RankedRecord] = []
    memory: dict[str, int] = {}

    @property
    def complexity(self) -> float | None:
        mine = next((r for r in self.ranking if r.task_id == self.chosen), None)
        return mine.complexity if mine else None

    @property
    def candidates(self) -> int:
        return len(self.ranking)


def read_decisions(folder: Path) -> list[DecisionRecord]:
    """Every readable line of decisions.jsonl (a line torn by a kill is skipped)."""
    path = Path(folder) / "decisions.jsonl"
    if not path.is_file():
        return []
    found = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            found.append(DecisionRecord.model_validate_json(line))
        except ValueError:
            continue
    return found


# ---------------------------------------------------------------- one row per task


class StageRuns(BaseModel):
    passed: int = 0
    runs: int = 0


class TaskRow(BaseModel):
    """The task table's row, and what the figures draw from it."""

    key: str
    status: str
    taken: int | None = None  # the round of its first run (the curriculum's order), None: never run
    attempts: int = 0
    setup: str = "not run"  # passed | failed at <stage> | running | not run
    setup_ok: bool | None = None
    modality: str = "unknown"
    metric: str | None = None
    higher_is_better: bool | None = None
    model: str | None = None
    validation_score: float | None = None
    test_score: float | None = None
    leaderboard_score: float | None = None
    leaderboard_from: str | None = None  # where the leaderboard place comes from
    rank: int | None = None
    n_teams: int | None = None
    percentile: float | None = None
    medal: str | None = None
    elapsed_s: float | None = None
    tokens: int = 0
    report: str | None = None  # the task's own report.html, relative to the campaign folder
    note: str | None = None
    stage_runs: dict[str, StageRuns] = {}  # unit-test runs per setup stage and meta check
    family: str = ""  # the pool task: the key itself, or the task a seed of `--seeds` belongs to
    seed: int | None = None
    first_setup_ok: bool | None = None  # did the first run's setup pass every stage test (Pass@k)

    @property
    def setup_rate(self) -> float | None:
        runs = sum(s.runs for s in self.stage_runs.values())
        return sum(s.passed for s in self.stage_runs.values()) / runs if runs else None


def task_row(campaign_dir: Path, task: TaskState) -> tuple[TaskRow, Round | None]:
    """The task's row, and its leaderboard as an Elo-MMR round when one is known."""
    workspace = task_workspace(campaign_dir, task)
    result = _run_result(workspace)
    last = task.attempts[-1] if task.attempts else None
    row = TaskRow(
        key=task.key, status=task.status, attempts=len(task.attempts),
        taken=min((a.round for a in task.attempts), default=None),
        elapsed_s=sum(a.elapsed_s or 0.0 for a in task.attempts) if task.attempts else (result.elapsed_s if result else None),
        tokens=sum(a.tokens for a in task.attempts),
        note=task.note or (last.error if last and last.ok is False else None),
        family=task.pool_key, seed=task.seed, first_setup_ok=_first_setup_ok(task),
        validation_score=last.validation_score if last else None, test_score=last.test_score if last else None,
    )
    if workspace is None:
        return row, None
    report = workspace / REPORT_FILE
    if report.is_file():
        row.report = os.path.relpath(report, campaign_dir)
    row.modality = _modality(workspace)
    row.stage_runs = _stage_runs(workspace, result)
    if result is not None:
        row.setup, row.setup_ok = _setup_outcome(result)
        row.metric, row.higher_is_better, row.model = result.metric, result.higher_is_better, result.model
        row.validation_score = result.validation_score if result.validation_score is not None else row.validation_score
        row.test_score = result.test_score if result.test_score is not None else row.test_score
    elif task.status == "running":
        row.setup = "running"
    if row.metric is None or row.higher_is_better is None:
        solve = SolveResult.read(workspace / "solve")
        row.metric = row.metric or solve.metric
        row.higher_is_better = row.higher_is_better if row.higher_is_better is not None else solve.higher_is_better
    return row, _place(row, task, workspace, result)


def _first_setup_ok(task: TaskState) -> bool | None:
    """The first finished run's setup outcome (a record from before `setup_ok` was kept: its
    success, which needs a passed setup, or None for a failure that may have been the solver's)."""
    first = next((a for a in task.attempts if a.ok is not None), None)
    if first is None:
        return None
    if first.setup_ok is not None:
        return first.setup_ok
    return True if first.ok else None


def task_workspace(campaign_dir: Path, task: TaskState) -> Path | None:
    """The task's workspace folder. The state records an absolute path, which goes stale when the
    campaign folder is moved or copied: then `<campaign>/workspaces/<its name>` is the one that
    belongs to this campaign (the driver always puts workspaces there)."""
    recorded = Path(task.workspace) if task.workspace else None
    campaign_dir = Path(campaign_dir).resolve()
    if recorded is not None and recorded.is_dir() and recorded.resolve().is_relative_to(campaign_dir):
        return recorded
    names = [recorded.name] if recorded is not None else []
    names += [task.key] if task.key not in names else []
    for name in names:
        local = seed_workspaces(campaign_dir / WORKSPACES_DIR, task.seed) / name
        if local.is_dir():
            return local
    return recorded


def _run_result(workspace: Path | None) -> RunResult | None:
    if workspace is None:
        return None
    try:
        return RunResult.read(workspace / "result.json")
    except ValueError:  # a record another version wrote: the row says what it can without it
        return None


def _setup_outcome(result: RunResult) -> tuple[str, bool]:
    """passed, or the stage that failed: the one the run's error names, else the first that ran and
    did not pass (a stage after the failing one is recorded as not passed with no attempts)."""
    ran = {**{n: r.attempts for n, r in result.setup.items()}, **{n: r.rounds for n, r in result.meta.items()}}
    passed = {**{n: r.passed for n, r in result.setup.items()}, **{n: r.passed for n, r in result.meta.items()}}
    failed = [name for name in ran if ran[name] > 0 and not passed[name]]
    if result.setup and all(passed.values()) and result.phase != "setup":
        return "passed", True
    named = _FAILED_STAGE.search(result.error or result.setup_failure or "")
    if named and named.group(1) in ran:
        return f"failed at {named.group(1)}", False
    if failed:
        return f"failed at {failed[0]}", False
    return f"stopped in {result.phase or 'setup'}", False


def _modality(workspace: Path) -> str:
    data = read_json_object(SetupLayout(workspace / "setup").modalities)
    found = data.get("input_modalities")
    return "+".join(sorted(str(m) for m in found)) if isinstance(found, list) and found else "unknown"


def _stage_runs(workspace: Path, result: RunResult | None) -> dict[str, StageRuns]:
    """Unit-test runs per stage: every attempt from logs/attempts.jsonl, else result.json's
    counts (each stage passes at most once there: its last attempt)."""
    runs: dict[str, StageRuns] = {}
    path = Workspace(workspace).attempts_log
    if path.is_file():
        for record in json_lines(path):
            if not record.get("stage") or record.get("declined"):
                continue
            entry = runs.setdefault(str(record["stage"]), StageRuns())
            entry.runs += 1
            entry.passed += bool(record.get("passed"))
        return runs
    if result is not None:
        for name, stage in result.setup.items():
            runs[name] = StageRuns(passed=int(stage.passed), runs=stage.attempts)
        for name, meta in result.meta.items():
            runs[name] = StageRuns(passed=int(meta.passed), runs=meta.rounds)
    return {name: entry for name, entry in runs.items() if entry.runs}


# ---------------------------------------------------------------- leaderboards


def _place(row: TaskRow, task: TaskState, workspace: Path, result: RunResult | None) -> Round | None:
    """Fills the row's leaderboard place: Kaggle's own (a submission's public score) first, else the
    test score placed on a leaderboard file. Returns the standings for Elo-MMR when a file is known."""
    kaggle = (result.kaggle if result else None) or {}
    board = kaggle.get("leaderboard") if isinstance(kaggle, dict) else None
    if isinstance(board, dict) and board.get("rank"):
        row.leaderboard_score = kaggle.get("best_public")
        row.rank, row.n_teams = int(board["rank"]), int(board.get("n_teams") or 0) or None
        row.percentile, row.medal = board.get("percentile"), board.get("medal")
        row.leaderboard_from = "Kaggle (public score)"
    local = result.test_leaderboard if result else None
    if row.rank is None and local is not None:
        row.leaderboard_score, row.rank, row.n_teams = row.test_score, local.rank, local.n_teams
        row.percentile, row.medal = local.percentile, local.medal
        row.leaderboard_from = "test score on the leaderboard file"
    table = _leaderboard_table(task, workspace)
    if table is None or row.higher_is_better is None:
        return None
    ours = row.leaderboard_score if row.leaderboard_score is not None else row.test_score
    if ours is None:
        return None
    if row.rank is None:  # a run graded before the grader placed scores itself
        position = leaderboard_position(ours, table, row.higher_is_better)
        row.leaderboard_score, row.rank, row.n_teams = ours, position.rank, position.n_teams
        row.percentile, row.medal = position.percentile, position.medal
        row.leaderboard_from = "test score on the leaderboard file"
    score_column = _column(table, "score")
    assert score_column is not None
    team_column = _column(table, "teamname") or _column(table, "teamid")
    scores = pd.to_numeric(table[score_column], errors="coerce")
    keep = scores.notna().to_numpy()
    teams = (table[team_column].astype(str) if team_column else pd.Series([f"{task.key} team {i + 1}" for i in range(len(table))]))
    return Round(name=task.key, teams=list(teams[keep]), scores=list(scores[keep].astype(float)),
                 ours=float(ours), higher_is_better=row.higher_is_better)


def _column(table: pd.DataFrame, name: str) -> str | None:
    return next((c for c in table.columns if str(c).strip().lower() == name), None)


def leaderboard_files(task: TaskState, workspace: Path) -> list[Path]:
    """Where a task's leaderboard may be: the one a Kaggle submit downloaded into submissions/
    (`<slug>.zip`), or the leaderboard file the grader reads beside the competition."""
    found = []
    if task.slug:
        found.append(workspace / "submissions" / f"{task.slug}.zip")
    if task.kind == "folder" and task.source:
        found += [Path(task.source) / name for name in LEADERBOARD_NAMES]
    return [p for p in found if p.is_file()]


def _leaderboard_table(task: TaskState, workspace: Path) -> pd.DataFrame | None:
    for path in leaderboard_files(task, workspace):
        try:
            table = _read_leaderboard(path)
        except (OSError, ValueError, zipfile.BadZipFile):
            continue
        if _column(table, "score") is not None and len(table):
            return table
    return None


def _read_leaderboard(path: Path) -> pd.DataFrame:
    data = path.read_bytes()
    if not zipfile.is_zipfile(io.BytesIO(data)):
        return pd.read_csv(io.BytesIO(data))
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        names = [n for n in archive.namelist() if n.lower().endswith(".csv")]
        if not names:
            raise ValueError(f"{path.name} holds no CSV")
        with archive.open(names[0]) as handle:
            return pd.read_csv(handle)


# ---------------------------------------------------------------- Figures 12/13 and Table 4


class StageRate(BaseModel):
    stage: str
    passed: int
    runs: int

    @property
    def rate(self) -> float:
        return self.passed / self.runs if self.runs else 0.0


def stage_rates(rows: list[TaskRow]) -> list[StageRate]:
    """Figure 12: each stage's unit-test success rate over every run of it in the campaign, stages
    in the order they first appear."""
    totals: dict[str, StageRuns] = {}
    for row in rows:
        for stage, runs in row.stage_runs.items():
            entry = totals.setdefault(stage, StageRuns())
            entry.passed += runs.passed
            entry.runs += runs.runs
    return [StageRate(stage=s, passed=r.passed, runs=r.runs) for s, r in totals.items()]


class PassAtK(BaseModel):
    """Table 4's row: one modality's tasks, each run under several seeds."""

    modality: str
    tasks: int
    seeds: int  # the fewest seeds a task of the modality finished (k above it is not estimated)
    at: dict[int, float | None]  # k → mean Pass@k over the modality's tasks; None: k > seeds
    passed: int  # seeds whose first run's setup passed
    runs: int  # seeds that finished a first run


def pass_at_k(rows: list[TaskRow], ks: tuple[int, ...] = PASS_AT) -> list[PassAtK] | NotAvailable:
    """Table 4: per modality, the mean over tasks of the unbiased Pass@k of the setup (Chen et al.,
    2021), each of a task's `--seeds` an independent sample: its first run's setup passed every
    stage test or not. Retries of one seed are not samples (they follow that seed's failure)."""
    if not any(r.seed is not None for r in rows):
        return NotAvailable("the campaign ran each task under one seed: Pass@k needs several "
                            "(agentk campaign --seeds 3, or 10 for Pass@10)")
    samples: dict[str, list[bool]] = {}
    modality: dict[str, str] = {}
    for row in rows:
        if row.seed is None or row.first_setup_ok is None:
            continue
        samples.setdefault(row.family, []).append(row.first_setup_ok)
        if row.modality != "unknown" or row.family not in modality:
            modality[row.family] = row.modality
    if not samples:
        return NotAvailable("no seed has finished a run yet")
    table: dict[str, list[str]] = {}
    for family in samples:
        table.setdefault(modality[family], []).append(family)
    entries = []
    for name, families in sorted(table.items()):
        at = {}
        for k in ks:
            values = [estimate_pass_at_k(len(samples[f]), sum(samples[f]), k) for f in families]
            at[k] = None if any(v is None for v in values) else sum(v for v in values if v is not None) / len(values)
        entries.append(PassAtK(modality=name, tasks=len(families), seeds=min(len(samples[f]) for f in families), at=at,
                               passed=sum(sum(samples[f]) for f in families), runs=sum(len(samples[f]) for f in families)))
    return entries


# ---------------------------------------------------------------- Figure 14


@dataclass(frozen=True)
class OrderCurves:
    """Figure 14 on a campaign's page: every order of its bench, and which one this campaign is."""

    orders: list[OrderRow]
    this: str | None  # the order this campaign ran (None: the bench's cold run, not an order)


def order_curves(campaign_dir: Path) -> OrderCurves | NotAvailable:
    """Figure 14's curves for a campaign that `agentk bench --campaign` ran: from the bench's record
    (bench.json), else recomputed from the campaigns beside it under `<root>/campaign-bench/`."""
    campaign_dir = Path(campaign_dir).resolve()
    if campaign_dir.parent.name != BENCH_DIR:
        return NotAvailable(f"this campaign was not run by `agentk bench --campaign` (its orders' campaigns "
                            f"sit in <root>/{BENCH_DIR}/<order>/): Figure 14 compares selection orders")
    bench = load_bench(campaign_dir.parent).bench
    if len(bench.orders) < 2:
        return NotAvailable(f"only one order under {campaign_dir.parent}: Figure 14 compares several")
    folders = {label: Path(folder) for label, folder in bench.folders.items()}
    this = next((label for label, folder in folders.items()
                 if folder.name == campaign_dir.name and any(r.order == label for r in bench.orders)), None)
    return OrderCurves(orders=list(bench.orders), this=this)
