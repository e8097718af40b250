"""What every rival shares: its result record, the agent-visible inputs it reads, and grading.

The rivals run after agentk on the same workspace: the same split, the same raw files the agent
saw (`raw/`), the same test ids. They borrow only the task framing of agentk's setup (which
columns are targets, binary/multiclass/regression, the classes) and its submission formatter, so
that a difference in score is a difference in modelling, not in reading the competition. This
module reads JSON and file names only; the generated code is imported by the rivals' sandboxed
subprocesses, never here.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from agentk.bench.rivals.memory import PeakRss
from agentk.core.artifacts import SetupLayout, Task
from agentk.core.sandbox.sandbox import ExecutionResult
from agentk.core.records.workspace import Workspace, read_json_object
from agentk.grading import grade_file
from agentk.sources import common as source_files
from agentk.sources.base import Competition
from unit_tests_setup.submission_rules import validate_against_setup

NOT_INSTALLED = "not installed (make autogluon)"
NOT_TABULAR = "n/a: not tabular"


@dataclass
class SystemResult:
    """One system's outcome on one (competition, split): a bench table cell group."""

    system: str
    status: str = "ok"  # "ok", or why there is no score ("not installed ...", "n/a: ...", "error: ...")
    valid_submission: bool = False
    test_score: float | None = None
    time_to_first_submission_s: float | None = None
    total_s: float | None = None
    peak_rss_mb: float | None = None
    peak_breakdown: str | None = None  # the processes that made the peak, largest first
    submission_path: str | None = None
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class TargetFrame:
    column: str
    task: Task
    classes: list[Any] | None


@dataclass(frozen=True)
class RawInputs:
    """The agent-visible train/test CSVs and the setup's task framing, from its JSON files."""

    train_csv: Path
    test_csv: Path
    train_id: str
    test_id: str
    targets: list[TargetFrame]
    modalities: list[str]

    @property
    def tabular(self) -> bool:
        # Text columns live in the table (AutoGluon featurises them); image inputs do not.
        return "image" not in self.modalities

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["train_csv"], data["test_csv"] = str(self.train_csv), str(self.test_csv)
        return data


class RivalInputError(Exception):
    """The workspace lacks what a rival needs (agentk's setup did not finish, no train CSV)."""


def raw_inputs(workspace: Workspace) -> RawInputs:
    layout = SetupLayout(workspace.setup)
    plan = read_json_object(layout.plan)
    info = read_json_object(layout.target_info)
    modalities = read_json_object(layout.modalities).get("input_modalities") or ["tabular"]
    if not plan or not info.get("targets"):
        raise RivalInputError("agentk's setup did not finish (the rivals use its plan and target specs)")
    facts = plan.get("facts") if isinstance(plan.get("facts"), dict) else {}
    train = _raw_file(workspace, facts.get("train_file"), source_files.find_train_csv)
    test = _raw_file(workspace, facts.get("test_file"), source_files.find_test_csv)
    if train is None or test is None:
        raise RivalInputError(f"no train/test CSV found in {workspace.raw / 'data'}")
    id_column = plan.get("id_column")
    train_id = facts.get("train_id_column") or id_column
    test_id = facts.get("test_id_column") or id_column
    if not isinstance(train_id, str) or not isinstance(test_id, str):
        raise RivalInputError(f"{SetupLayout.PLAN} names no id column")
    targets = [TargetFrame(str(t["column"]), str(t["task"]), t.get("classes")) for t in info["targets"]]
    return RawInputs(train, test, train_id, test_id, targets, [str(m) for m in modalities])


def tabular_inputs(workspace: Workspace, result: SystemResult) -> RawInputs | None:
    """The rival's inputs, or None with `result.status` saying why it cannot run here."""
    modalities = read_json_object(SetupLayout(workspace.setup).modalities).get("input_modalities") or []
    if "image" in modalities:  # checked first: an image folder layout has no CSVs to report missing
        result.status = NOT_TABULAR
        return None
    try:
        inputs = raw_inputs(workspace)
    except RivalInputError as exc:
        result.status = f"n/a: {exc}"
        return None
    if not inputs.tabular:
        result.status = NOT_TABULAR
        return None
    return inputs


def _raw_file(workspace: Workspace, named: object, finder: Callable[[Path], Path | None]) -> Path | None:
    if isinstance(named, str) and named:
        path = (workspace.raw / named).resolve()
        # Only the agent's own view: a plan naming a file elsewhere is ignored.
        if path.is_file() and path.is_relative_to(workspace.raw.resolve()):
            return path
    return finder(workspace.raw / "data")


def event_notes(stdout: str, event_name: str) -> list[str]:
    """The `notes` of the last JSON event line named `event_name` a rival's subprocess printed."""
    for line in reversed(stdout.splitlines()):
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict) and event.get("event") == event_name:
            return [str(n) for n in event.get("notes", [])]
    return []


def rival_dir(workspace: Workspace, system: str) -> Path:
    """Each rival's outputs live beside agentk's, inside the same (per split) workspace."""
    folder = workspace.root / "bench" / system
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def measured(run: Callable[[], ExecutionResult]) -> tuple[ExecutionResult, float, float]:
    """Run a subprocess-starting callable; returns its result, wall seconds and peak RSS (MB)."""
    started = time.monotonic()
    with PeakRss() as peak:
        result = run()
    return result, round(time.monotonic() - started, 2), peak.mb


def finish(result: SystemResult, workspace: Workspace, competition: Competition, submission: Path) -> SystemResult:
    """Validate the rival's submission exactly as the runner validates agentk's, then grade it
    with the same grader."""

    if not submission.is_file():
        result.status = "error: no submission written"
        return result
    problems = validate_against_setup(workspace, submission, read_json_object(SetupLayout(workspace.setup).plan))
    if problems:
        result.status = f"error: invalid submission: {problems[0]}"
        return result
    result.valid_submission = True
    result.submission_path = str(submission)
    if competition.has_answers:
        report = grade_file(submission, competition)
        result.test_score = report.score
        if not report.valid:
            result.status = f"error: grader rejected the submission: {report.error}"
    return result


def failure_line(execution: ExecutionResult) -> str:
    """One line for the table: a timeout, or the last line of the traceback."""
    if execution.timed_out:
        return f"error: timed out after {execution.timeout_s or execution.elapsed_s:.0f} s"
    summary = execution.error_summary(max_lines=30).strip().splitlines()
    return "error: " + (summary[-1][:200] if summary else f"exit code {execution.returncode}")
