"""Rival (b): LightGBM with library defaults on the raw agent-visible train/test CSVs.

No tuning and no feature engineering: the raw columns that both train and test have (id and
targets dropped), string columns as pandas `category` (what LightGBM needs to use them at all),
`LGBMClassifier()` / `LGBMRegressor()` as shipped (only `random_state` and silence set). The
targets come from agentk's setup (its transformed target map and classes), and the submission from
its formatter, with probabilities wherever the formatter or metric uses them.

`run_lightgbm(...)` is the orchestrator side; `python -m agentk.bench.rivals.lightgbm_defaults`
is the sandboxed subprocess (it imports the generated setup modules).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from agentk.bench.rivals.common import (
    SystemResult,
    event_notes,
    failure_line,
    finish,
    measured,
    raw_inputs,
    rival_dir,
    tabular_inputs,
)
from agentk.bench.rivals.frames import enter_setup, normalise, prediction_frame, write_formatted
from agentk.core.sandbox.isolation import Mounts
from agentk.core.sandbox.sandbox import Limits, data_room_mb, run_python
from agentk.core.records.workspace import Workspace
from agentk.sources.base import Competition

SYSTEM = "lightgbm"
# Interpreter start, imports and formatting on top of the budget; defaults finish in seconds.
STARTUP_ALLOWANCE_S = 60.0


def run_lightgbm(workspace: Workspace, competition: Competition, time_budget_s: float, seed: int = 0) -> SystemResult:
    """Fit, predict and format in a sandboxed subprocess, then validate and grade its submission."""
    result = SystemResult(SYSTEM)
    inputs = tabular_inputs(workspace, result)
    if inputs is None:
        return result
    folder = rival_dir(workspace, SYSTEM)
    submission = folder / "submission.csv"
    submission.unlink(missing_ok=True)  # a stale file must not pass for this run's
    execution, seconds, peak = measured(lambda: run_python(
        ["-m", "agentk.bench.rivals.lightgbm_defaults", str(workspace.root), "--out", str(submission), "--seed", str(seed)],
        cwd=folder,
        limits=Limits(timeout_s=time_budget_s + STARTUP_ALLOWANCE_S, memory_mb=data_room_mb()),  # the data, as the solver
        log_prefix=folder / "run",
        mounts=Mounts.workspace(workspace.root, write=[]),
    ))
    result.total_s, result.peak_rss_mb = seconds, peak
    if not execution.ok:
        result.status = failure_line(execution)
        return result
    # One submission, written at the end: the first valid one is the only one.
    result.time_to_first_submission_s = seconds
    result.notes += event_notes(execution.stdout, "done")
    return finish(result, workspace, competition, submission)


# ---------------------------------------------------------------- the subprocess


def fit_predict(workspace: Path, out: Path, seed: int) -> dict[str, object]:
    # Passive OpenMP waits: spinning threads made LightGBM far slower on a busy 2-core box.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    import lightgbm as lgb
    import numpy as np
    import pandas as pd


    started = time.monotonic()
    ws = Workspace(workspace)
    inputs = raw_inputs(ws)  # read before enter_setup changes directory; paths are absolute
    artifacts = enter_setup(workspace)
    train = pd.read_csv(inputs.train_csv, dtype={inputs.train_id: str})
    test = pd.read_csv(inputs.test_csv, dtype={inputs.test_id: str})
    train[inputs.train_id] = train[inputs.train_id].astype(str).str.strip()
    test[inputs.test_id] = test[inputs.test_id].astype(str).str.strip()
    targets = {spec.column for spec in artifacts.targets}
    # Columns the test lacks (bike-sharing's casual/registered) cannot be used at prediction time.
    features = [c for c in train.columns if c not in targets and c != inputs.train_id and c in test.columns and c != inputs.test_id]
    if not features:
        raise ValueError("no feature column is shared by the raw train and test files")
    test = test.drop_duplicates(inputs.test_id).set_index(inputs.test_id)
    test_ids = artifacts.test_ids
    missing = [i for i in test_ids if i not in test.index]
    if missing:
        raise ValueError(f"{len(missing)} setup test ids are not in {inputs.test_csv.name}, e.g. {missing[:3]}")
    X_test = test.loc[test_ids, features].reset_index(drop=True)
    train = train.drop_duplicates(inputs.train_id).set_index(inputs.train_id)
    y_all = artifacts.target_map_transformed.drop_duplicates("id").set_index("id")
    usable = [i for i in artifacts.train_ids if i in train.index]
    if not usable:
        raise ValueError(f"no setup train id is in {inputs.train_csv.name}")
    X = train.loc[usable, features].reset_index(drop=True)
    categorical = [c for c in features if not pd.api.types.is_numeric_dtype(X[c])]
    for column in categorical:
        X[column] = X[column].astype(str).where(X[column].notna()).astype("category")
        seen = X[column].cat.categories
        # Test values unseen in train are missing to LightGBM either way; say so explicitly.
        values = X_test[column].astype(str).where(X_test[column].notna())
        X_test[column] = pd.Categorical(values.where(values.isin(seen)), categories=seen)

    outputs: dict[str, np.ndarray] = {}
    for spec in artifacts.targets:
        y = pd.to_numeric(y_all.loc[usable, spec.column], errors="coerce").to_numpy(dtype=float)
        rows = ~np.isnan(y)
        if spec.is_classification:
            model = lgb.LGBMClassifier(random_state=seed, verbose=-1)
            model.fit(X[rows], y[rows].astype(int))
            proba = np.zeros((len(X_test), spec.n_classes))
            proba[:, model.classes_.astype(int)] = model.predict_proba(X_test)
            outputs[spec.column] = normalise(proba)
        else:
            model = lgb.LGBMRegressor(random_state=seed, verbose=-1)
            model.fit(X[rows], y[rows])
            outputs[spec.column] = np.asarray(model.predict(X_test), dtype=float)
    write_formatted(artifacts, prediction_frame(artifacts, test_ids, outputs), out)
    return {"n_train": len(X), "n_test": len(X_test), "features": len(features), "categorical": len(categorical),
            "seconds": round(time.monotonic() - started, 2), "notes": []}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m agentk.bench.rivals.lightgbm_defaults", description=__doc__)
    parser.add_argument("workspace", type=Path)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    report = fit_predict(args.workspace.resolve(), args.out.resolve(), args.seed)
    print(json.dumps({"event": "done", **report}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
