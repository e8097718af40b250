"""Rival (c): AutoGluon `TabularPredictor` (presets="medium_quality", time_limit = the bench budget).

AutoGluon's numpy/pandas/scikit-learn pins clash with ours, so it lives in its own venv
(`make autogluon` → `<repo>/.venv-autogluon`) and runs `autogluon_runner.py` under that venv's
interpreter, inside our sandbox (scrubbed environment, own process group, timeout). It gets the raw
agent-visible train table with the id column dropped, the label, and the competition's metric where
AutoGluon has it; its predictions come back as a file that a second sandboxed subprocess of ours
turns into a prediction frame and formats with agentk's setup formatter.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from agentk.bench.rivals.common import (
    NOT_INSTALLED,
    RawInputs,
    SystemResult,
    TargetFrame,
    event_notes,
    failure_line,
    finish,
    measured,
    rival_dir,
    tabular_inputs,
)
from agentk.core.artifacts import SetupLayout
from agentk.core.sandbox.isolation import Mounts
from agentk.core.metrics import UnknownMetricError, get_metric
from agentk.core.sandbox.sandbox import ExecutionResult, Limits, run_python
from agentk.sources.base import Competition
from agentk.core.records.workspace import Workspace

SYSTEM = "autogluon"
PRESETS = "medium_quality"
ENV_PYTHON = "AGENTK_AUTOGLUON_PYTHON"
REPO = Path(__file__).resolve().parents[3]
DEFAULT_PYTHON = REPO / ".venv-autogluon" / "bin" / "python"
RUNNER = Path(__file__).resolve().with_name("autogluon_runner.py")
# run_python starts our interpreter; this replaces it (same pid, limits kept) with AutoGluon's.
_EXEC = "import os, sys; os.execv(sys.argv[1], sys.argv[1:])"

# agentk metric (canonical name) -> AutoGluon eval_metric, for classification and regression.
_CLASSIFICATION = {
    "accuracy": "accuracy", "balanced_accuracy": "balanced_accuracy", "f1": "f1", "macro_f1": "f1_macro",
    "mcc": "mcc", "quadratic_weighted_kappa": "quadratic_kappa", "auc": "roc_auc",
    "logloss": "log_loss", "multiclass_logloss": "log_loss",
}
_REGRESSION = {
    "rmse": "root_mean_squared_error", "mse": "mean_squared_error", "mae": "mean_absolute_error",
    "medae": "median_absolute_error", "mape": "mean_absolute_percentage_error", "r2": "r2",
}
# Errors of logarithms: AutoGluon has no RMSLE; RMSE on log1p(target) optimises the same thing.
_LOG_TARGET = {"rmsle", "rmse_log"}


@dataclass(frozen=True)
class MetricChoice:
    eval_metric: str | None  # None: AutoGluon's default for the problem type
    log_target: bool
    note: str | None


def autogluon_python(override: Path | None = None) -> Path | None:
    """The AutoGluon venv's interpreter: the argument, $AGENTK_AUTOGLUON_PYTHON, or the repo's
    `.venv-autogluon`; None when it is not there."""
    candidate = override or (Path(os.environ[ENV_PYTHON]) if os.environ.get(ENV_PYTHON) else DEFAULT_PYTHON)
    return candidate if candidate.is_file() and os.access(candidate, os.X_OK) else None


def choose_metric(metric: str | None, target: TargetFrame) -> MetricChoice:
    """AutoGluon's eval_metric for the competition's metric and this target's problem type."""
    if not metric:
        return MetricChoice(None, False, "no metric known: AutoGluon's default")
    try:
        name = get_metric(metric).name
    except UnknownMetricError:
        return MetricChoice(None, False, f"metric {metric!r} unknown to agentk: AutoGluon's default")
    regression = target.task == "regression"
    if regression and name in _LOG_TARGET:
        return MetricChoice("root_mean_squared_error", True, f"{name}: rmse on log1p(target)")
    table = _REGRESSION if regression else _CLASSIFICATION
    if name == "auc" and target.task == "multiclass":
        return MetricChoice(None, False, "multiclass auc: AutoGluon's default")
    if name == "f1" and target.task == "multiclass":
        name = "macro_f1"
    if name in table:
        return MetricChoice(table[name], False, None)
    return MetricChoice(None, False, f"AutoGluon has no {name} for {target.task}: its default")


def run_autogluon(workspace: Workspace, competition: Competition, time_budget_s: float,
                  python: Path | None = None) -> SystemResult:
    result = SystemResult(SYSTEM)
    interpreter = autogluon_python(python)
    if interpreter is None:
        result.status = NOT_INSTALLED
        return result
    inputs = tabular_inputs(workspace, result)
    if inputs is None:
        return result
    metric = competition.grading.metric if competition.grading else _plan_metric(workspace)
    folder = rival_dir(workspace, SYSTEM)
    predictions, submission = folder / "predictions", folder / "submission.csv"
    for stale in (predictions / "predictions.csv", predictions / "predictions.json", submission):
        stale.unlink(missing_ok=True)
    targets = []
    for target in inputs.targets:
        choice = choose_metric(metric, target)
        if choice.note:
            result.notes.append(f"{target.column}: {choice.note}")
        if choice.log_target and not _non_negative(inputs, target.column):
            choice = MetricChoice("root_mean_squared_error", False, None)
            result.notes.append(f"{target.column}: negative values, plain rmse instead of log1p")
        targets.append({"column": target.column, "problem_type": target.task, "eval_metric": choice.eval_metric,
                        "log_target": choice.log_target})
    job = {"train_csv": str(inputs.train_csv), "test_csv": str(inputs.test_csv), "train_id": inputs.train_id,
           "test_id": inputs.test_id, "targets": targets, "time_limit": time_budget_s, "presets": PRESETS,
           "out_dir": str(predictions)}
    job_path = folder / "job.json"
    job_path.write_text(json.dumps(job, indent=2), encoding="utf-8")

    def both() -> ExecutionResult:
        fitted = run_python(
            ["-c", _EXEC, str(interpreter), "-u", str(RUNNER), str(job_path)],
            cwd=folder,
            # AutoGluon stops itself at time_limit; this is only a backstop for a hang. No address
            # space cap: it runs library code, not generated code, and torch reserves a lot of it.
            limits=Limits(timeout_s=time_budget_s * 1.5 + 120, memory_mb=None),
            # The runtime knob agentk's solver sets for itself: spinning OpenMP threads made
            # LightGBM/XGBoost many times slower on a busy 2-core machine. No model setting changes.
            env_extra={"OMP_WAIT_POLICY": "PASSIVE"},
            log_prefix=folder / "fit",
            # Its own venv, read-only; it reads the maps the job names and writes beside the job.
            mounts=Mounts.workspace(workspace.root, write=[], read=[Path(interpreter).absolute().parent.parent]),
        )
        if not fitted.ok:
            return fitted
        return run_python(
            ["-m", "agentk.bench.rivals.frames", str(workspace.root), str(predictions), "--out", str(submission)],
            cwd=folder, limits=Limits(timeout_s=300), log_prefix=folder / "format",
            mounts=Mounts.workspace(workspace.root, write=[]),
        )

    execution, seconds, peak = measured(both)
    result.total_s, result.peak_rss_mb = seconds, peak
    if not execution.ok:
        result.status = failure_line(execution)
        return result
    result.time_to_first_submission_s = seconds
    result.notes += event_notes(execution.stdout, "formatted") + _fit_notes(predictions / "predictions.json")
    return finish(result, workspace, competition, submission)


def _plan_metric(workspace: Workspace) -> str | None:
    try:
        metric = json.loads(SetupLayout(workspace.setup).plan.read_text(encoding="utf-8")).get("metric")
    except (OSError, ValueError, AttributeError):
        return None
    return metric if isinstance(metric, str) else None


def _non_negative(inputs: RawInputs, column: str) -> bool:
    import pandas as pd

    values = pd.to_numeric(pd.read_csv(inputs.train_csv, usecols=[column])[column], errors="coerce")
    return bool((values.dropna() >= 0).all())


def _fit_notes(path: Path) -> list[str]:
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    return [f"{t}: best {e.get('best_model')} ({e.get('eval_metric')})" for t, e in meta.get("targets", {}).items()]
