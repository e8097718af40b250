"""Run a model's feature-engineering code and check it before any family sees its columns.

The code defines `add_features(train, test) -> (train, test)` over the tabular input maps (train
with its raw target columns, so a leak can be seen). It is untrusted: it runs in a child process of
the already sandboxed solver, under a wall-clock cap, on copies of the frames written to parquet,
and its output comes back as parquet (never pickle). One child runs it four times: on the real
frames, twice on a sample (the same output both times, or it is not deterministic), and once on the
sample with the target columns permuted (any output that changes uses the target). Each check's
verdict is recorded; the first failure refuses the block with its reason.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

MAX_NEW_COLUMNS = 50
SAMPLE_TRAIN, SAMPLE_TEST = 200, 100
JOBS = ("full", "sample_a", "sample_b", "permuted")

# The child: exec the code in a fresh namespace per job, call add_features, write parquet. Object
# columns become text, so any value the code made round-trips through parquet.
_CHILD = r"""
import json, sys, traceback
from pathlib import Path
import numpy as np, pandas as pd
work = Path(sys.argv[1])
code = (work / "code.py").read_text(encoding="utf-8")
for job in json.loads((work / "jobs.json").read_text()):
    try:
        train = pd.read_parquet(work / f"{job}_train_in.parquet")
        test = pd.read_parquet(work / f"{job}_test_in.parquet")
        space = {"pd": pd, "np": np, "__name__": "agentk_features"}
        exec(compile(code, "add_features.py", "exec"), space)
        out = space["add_features"](train, test)
        if not (isinstance(out, tuple) and len(out) == 2 and all(isinstance(f, pd.DataFrame) for f in out)):
            raise TypeError(f"add_features must return (train, test) DataFrames, not {type(out).__name__}")
        for frame, side in zip(out, ("train", "test")):
            frame = frame.reset_index(drop=True)
            frame.columns = [str(c) for c in frame.columns]
            for column in frame.columns:
                if frame[column].dtype == object or str(frame[column].dtype) == "category":
                    frame[column] = frame[column].astype("string")
            frame.to_parquet(work / f"{job}_{side}_out.parquet", index=False)
    except BaseException:
        (work / "error.txt").write_text(traceback.format_exc(limit=-3), encoding="utf-8")
        sys.exit(1)
"""


@dataclass
class FeatureBlock:
    """The checked new columns, train and test rows in the frames' order."""

    train: pd.DataFrame
    test: pd.DataFrame


@dataclass
class CodeVerdict:
    block: FeatureBlock | None
    checks: dict[str, str] = field(default_factory=dict)
    refused: str | None = None
    seconds: float = 0.0


def check_feature_code(code: str, train: pd.DataFrame, test: pd.DataFrame, targets: list[str],
                       work: Path, cap_s: float, seed: int = 0) -> CodeVerdict:
    """Run `code` on the frames and check it; `train` holds the `targets` columns."""
    started = time.monotonic()
    verdict = CodeVerdict(block=None)
    work.mkdir(parents=True, exist_ok=True)
    (work / "code.py").write_text(code, encoding="utf-8")
    rng = np.random.default_rng(seed)
    train_rows = np.sort(rng.choice(len(train), min(SAMPLE_TRAIN, len(train)), replace=False))
    test_rows = np.sort(rng.choice(len(test), min(SAMPLE_TEST, len(test)), replace=False))
    sample_train = train.iloc[train_rows].reset_index(drop=True)
    sample_test = test.iloc[test_rows].reset_index(drop=True)
    permuted = sample_train.copy()
    for column in targets:
        permuted[column] = rng.permutation(permuted[column].to_numpy())
    inputs = {"full": (train, test), "sample_a": (sample_train, sample_test), "sample_b": (sample_train, sample_test),
              "permuted": (permuted, sample_test)}
    for job, (tr, te) in inputs.items():
        tr.to_parquet(work / f"{job}_train_in.parquet", index=False)
        te.to_parquet(work / f"{job}_test_in.parquet", index=False)
    (work / "jobs.json").write_text(json.dumps(list(JOBS)), encoding="utf-8")

    failure = _run_child(work, cap_s)
    verdict.seconds = round(time.monotonic() - started, 3)
    if failure == "timed out":
        verdict.checks["time"] = f"timed out after {cap_s:.0f} s"
        return _refuse(verdict, failure)
    verdict.checks["time"] = "passed"
    verdict.checks["runs"] = failure or "passed"
    if failure is not None:
        return _refuse(verdict, failure)
    outputs = {job: (pd.read_parquet(work / f"{job}_train_out.parquet"), pd.read_parquet(work / f"{job}_test_out.parquet"))
               for job in JOBS}
    steps = (("rows", lambda: _rows(outputs["full"], train, test)),
             ("columns", lambda: _columns(outputs["full"], train, test, targets)))
    for name, check in steps:
        problem = check()
        verdict.checks[name] = problem or "passed"
        if problem:
            return _refuse(verdict, problem)
    new = _new_columns(outputs["full"][0], train)
    same = _same(outputs["sample_a"], outputs["sample_b"], new)
    verdict.checks["deterministic"] = "passed" if same else "two runs on the same rows gave different values"
    if not same:
        return _refuse(verdict, "not deterministic")
    clean = _same(outputs["sample_a"], outputs["permuted"], new)
    verdict.checks["leakage"] = "passed" if clean else "outputs change when the target is permuted"
    if not clean:
        return _refuse(verdict, "uses the target")
    full_train, full_test = outputs["full"]
    verdict.block = FeatureBlock(full_train[new].reset_index(drop=True), full_test[new].reset_index(drop=True))
    return verdict


def _refuse(verdict: CodeVerdict, reason: str) -> CodeVerdict:
    verdict.refused = reason
    return verdict


def _run_child(work: Path, cap_s: float) -> str | None:
    """None when every job ran; else "timed out" or the error's last line."""
    # The solver's environment is the sandbox's (no keys); the child gets it as it is.
    proc = subprocess.Popen([sys.executable, "-c", _CHILD, str(work)], cwd=work, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True, env=dict(os.environ))
    try:
        _, err = proc.communicate(timeout=cap_s)
    except subprocess.TimeoutExpired:
        # The whole group: code that started its own children must not outlive the cap.
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.communicate()
        return "timed out"
    if proc.returncode == 0:
        return None
    error = (work / "error.txt")
    text = error.read_text(encoding="utf-8") if error.is_file() else err.decode(errors="replace")
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return f"failed: {lines[-1].strip() if lines else f'exit code {proc.returncode}'}"


def _rows(full: tuple[pd.DataFrame, pd.DataFrame], train: pd.DataFrame, test: pd.DataFrame) -> str | None:
    for out, given, side in ((full[0], train, "train"), (full[1], test, "test")):
        if len(out) != len(given):
            return f"{side} has {len(out)} rows, expected {len(given)}"
        if "id" in out.columns and out["id"].astype(str).tolist() != given["id"].astype(str).tolist():
            return f"{side} rows were reordered or their ids changed"
    return None


def _new_columns(out: pd.DataFrame, given: pd.DataFrame) -> list[str]:
    return [c for c in out.columns if c not in given.columns]


def _columns(full: tuple[pd.DataFrame, pd.DataFrame], train: pd.DataFrame, test: pd.DataFrame,
             targets: list[str]) -> str | None:
    out_train, out_test = full
    new = _new_columns(out_train, train)
    if not new:
        return "no new column"
    if len(new) > MAX_NEW_COLUMNS:
        return f"{len(new)} new columns (at most {MAX_NEW_COLUMNS})"
    missing = [c for c in new if c not in out_test.columns]
    if missing:
        return f"test lacks the new columns {missing[:5]}"
    for out, given, side in ((out_train, train, "train"), (out_test, test, "test")):
        for column in given.columns:
            if column in out.columns and column not in targets and not _equal(out[column], given[column]):
                return f"changes the input column {column!r} in {side} (only new columns may be added)"
    for column in new:
        dtype = out_train[column].dtype
        if not (pd.api.types.is_numeric_dtype(dtype) or pd.api.types.is_bool_dtype(dtype)
                or pd.api.types.is_string_dtype(dtype)):
            return f"column {column!r} is neither numeric nor categorical ({dtype})"
    return None


def _equal(a: pd.Series, b: pd.Series) -> bool:
    left, right = a.reset_index(drop=True), b.reset_index(drop=True)
    if pd.api.types.is_numeric_dtype(left) and pd.api.types.is_numeric_dtype(right):
        return bool(np.allclose(left.to_numpy(float), right.to_numpy(float), equal_nan=True))
    return left.astype("string").fillna("<NA>").equals(right.astype("string").fillna("<NA>"))


def _same(a: tuple[pd.DataFrame, pd.DataFrame], b: tuple[pd.DataFrame, pd.DataFrame], columns: list[str]) -> bool:
    for left, right in zip(a, b):
        for column in columns:
            if column not in left.columns or column not in right.columns or len(left) != len(right):
                return False
            if not _equal(left[column], right[column]):
                return False
    return True
