"""Run a model's feature-engineering code and check it before any family sees its columns.

The code defines `add_features(train, test) -> (train, test)` over the tabular input maps (train
with its raw target columns, so a leak can be seen). It is untrusted, so it runs in rooms of its own
(agentk/core/sandbox/sandbox.py; from inside the solver's sandbox, a sandbox nested in it): a fresh temporary
folder holding a read-only copy of its input frames as parquet, one writable output folder, no view
of the workspace (its records, submissions, or the decision channel and its token), no process of
ours to see or signal, a memory cap sized from its inputs, and a wall-clock cap after which it and
everything it started die together. Its output comes back as parquet (never pickle).

Every check runs on the very frames whose output is kept: two fresh processes, each in its own room
(so no run can tell another's state), run the code on the full frames and on them with the target
columns permuted; any new column that differs uses the target, or is not deterministic (a third run
on the real frames tells which). Output that agrees came from two independent runs: deterministic. A new column that alone nearly determines the target, where no input
column does, is refused as a leak (feature_leaks.py). Each check's verdict is recorded; the first
failure refuses the block with its reason.
"""

from __future__ import annotations

import dataclasses
import os
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from agentk.core.sandbox.isolation import SANDBOXED_ENV, Mounts, isolation_status
from agentk.core.sandbox.sandbox import ExecutionResult, Limits, run_python
from solve_pipeline.llm.feature_leaks import determining_column

MAX_NEW_COLUMNS = 50
JOBS = ("kept", "again", "permuted")  # the run whose output is kept, its repeat (when needed), the permuted target
# The child's own address-space cap: the interpreter with pandas and pyarrow, plus room for a few
# copies of its inputs (the frames read, the frames returned, parquet's buffers).
ROOM_FLOOR_MB, ROOM_INPUT_COPIES = 2048, 8
# What it may write: its two output frames, a few times the inputs' size.
ROOM_FILE_FLOOR_MB, ROOM_FILE_COPIES = 64, 4
STOP_GRACE_S = 1.0  # after the cap: SIGINT, then SIGTERM, each this long, then SIGKILL
# One thread each for the numeric libraries: two children run at once.
_CHILD_ENV = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}

# The child: exec the code, call add_features on the read-only inputs, write parquet into its own
# folder. Object columns become text, so any value the code made round-trips through parquet.
_CHILD = r"""
import sys, traceback
from pathlib import Path
import numpy as np, pandas as pd
inputs, out = Path(sys.argv[1]), Path.cwd()
try:
    code = (inputs / "code.py").read_text(encoding="utf-8")
    train = pd.read_parquet(inputs / "train.parquet")
    test = pd.read_parquet(inputs / "test.parquet")
    space = {"pd": pd, "np": np, "__name__": "agentk_features"}
    exec(compile(code, "add_features.py", "exec"), space)
    result = space["add_features"](train, test)
    if not (isinstance(result, tuple) and len(result) == 2 and all(isinstance(f, pd.DataFrame) for f in result)):
        raise TypeError(f"add_features must return (train, test) DataFrames, not {type(result).__name__}")
    for frame, side in zip(result, ("train", "test")):
        frame = frame.reset_index(drop=True)
        frame.columns = [str(c) for c in frame.columns]
        for column in frame.columns:
            if frame[column].dtype == object or str(frame[column].dtype) == "category":
                frame[column] = frame[column].astype("string")
        frame.to_parquet(out / f"{side}_out.parquet", index=False)
except BaseException:
    (out / "error.txt").write_text(traceback.format_exc(limit=-3), encoding="utf-8")
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
                       cap_s: float, seed: int = 0) -> CodeVerdict:
    """Run `code` on the frames and check it; `train` holds the `targets` columns."""
    started = time.monotonic()
    verdict = CodeVerdict(block=None)
    room = room_status()
    if room is not None:
        verdict.checks["room"] = room
        return _refuse(verdict, room)
    rng = np.random.default_rng(seed)
    permuted = train.copy()
    for column in targets:
        permuted[column] = rng.permutation(permuted[column].to_numpy())
    input_mb = int(train.memory_usage(deep=True).sum() + test.memory_usage(deep=True).sum()) >> 20
    written_mb = ROOM_FILE_FLOOR_MB + ROOM_FILE_COPIES * input_mb
    limits = Limits(timeout_s=cap_s, memory_mb=ROOM_FLOOR_MB + ROOM_INPUT_COPIES * input_mb, grace_s=STOP_GRACE_S,
                    max_file_mb=written_mb, max_written_mb=written_mb, max_processes=64)
    with tempfile.TemporaryDirectory(prefix="agentk_feature_") as folder:
        base = Path(folder)
        # Random names: nothing in a room's paths says which run it is.
        real, shuffled = (_inputs(base, code, frame, test) for frame in (train, permuted))
        sources = {"kept": real, "again": real, "permuted": shuffled}
        with ThreadPoolExecutor(max_workers=2) as pool:
            runs = dict(zip(JOBS[::2], pool.map(lambda job: _run_room(sources[job], base, limits), JOBS[::2])))
        if all(runs[job][1] is not None for job in JOBS[::2]) and not _same_output(runs["kept"][1], runs["permuted"][1], train):
            # Refused either way; the repeat tells the model which of the two it was.
            runs["again"] = _run_room(sources["again"], base, limits)
        verdict.seconds = round(time.monotonic() - started, 3)
        failure = next((runs[job][0] for job in JOBS if job in runs and runs[job][0] is not None), None)
        if failure == "timed out":
            verdict.checks["time"] = f"timed out after {cap_s:.0f} s"
            return _refuse(verdict, failure)
        verdict.checks["time"] = "passed"
        verdict.checks["runs"] = failure or "passed"
        if failure is not None:
            return _refuse(verdict, failure)
        outputs = {job: run[1] for job, run in runs.items() if run[1] is not None}
    return _judge(verdict, outputs, train, test, targets)


def room_status() -> str | None:
    """Why the code can have no room of its own here, or None when it can. Only a solver the user
    chose to run unsandboxed (--unsafe-no-sandbox, no bubblewrap) runs the code as a plain child."""
    status = isolation_status()
    if status.available or not os.environ.get(SANDBOXED_ENV):
        return None
    return f"no sandbox of its own can be made inside the solver's: {status.reason}"


def _inputs(base: Path, code: str, train: pd.DataFrame, test: pd.DataFrame) -> Path:
    folder = Path(tempfile.mkdtemp(dir=base))
    (folder / "code.py").write_text(code, encoding="utf-8")
    train.to_parquet(folder / "train.parquet", index=False)
    test.to_parquet(folder / "test.parquet", index=False)
    return folder


def _run_room(inputs: Path, base: Path, limits: Limits) -> tuple[str | None, tuple[pd.DataFrame, pd.DataFrame] | None]:
    """One run in a fresh room: (None, its output) or (why it failed, None)."""
    room = Path(tempfile.mkdtemp(dir=base))
    # Its /tmp is memory outside the address-space cap: no bigger than what it may write.
    mounts = dataclasses.replace(Mounts.of(read=[inputs]), tmp_mb=limits.max_written_mb)
    result = run_python(["-c", _CHILD, str(inputs)], cwd=room, limits=limits, env_extra=_CHILD_ENV, mounts=mounts)
    if result.timed_out:
        return "timed out", None
    if not result.ok:
        return f"failed: {_last_line(room / 'error.txt', result)}", None
    try:
        return None, (pd.read_parquet(room / "train_out.parquet"), pd.read_parquet(room / "test_out.parquet"))
    except Exception as error:  # noqa: BLE001 - whatever the room holds is the code's, not ours
        return f"failed: its output is unreadable ({type(error).__name__})", None


def _last_line(error: Path, result: ExecutionResult) -> str:
    try:
        text = error.read_text(encoding="utf-8", errors="replace")[-20_000:] if error.is_file() else ""
    except OSError:
        text = ""
    text = text or result.error_summary()
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1].strip()[:300] if lines else f"exit code {result.returncode}"


def _judge(verdict: CodeVerdict, outputs: dict[str, tuple[pd.DataFrame, pd.DataFrame]], train: pd.DataFrame,
           test: pd.DataFrame, targets: list[str]) -> CodeVerdict:
    kept = outputs["kept"]
    steps = (("rows", lambda: _rows(kept, train, test)),
             ("columns", lambda: _columns(kept, train, test, targets)))
    for name, check in steps:
        problem = check()
        verdict.checks[name] = problem or "passed"
        if problem:
            return _refuse(verdict, problem)
    new = _new_columns(kept[0], train)
    # Two fresh runs that agree (on different targets, or the same frames twice) are deterministic.
    same = _same(kept, outputs.get("again", outputs["permuted"]), new)
    verdict.checks["deterministic"] = "passed" if same else "two runs on the same rows gave different values"
    if not same:
        return _refuse(verdict, "not deterministic")
    clean = _same(kept, outputs["permuted"], new)
    verdict.checks["leakage"] = "passed" if clean else "outputs change when the target is permuted"
    if not clean:
        return _refuse(verdict, "uses the target")
    block = FeatureBlock(kept[0][new].reset_index(drop=True), kept[1][new].reset_index(drop=True))
    leak = determining_column(block.train, train, targets)
    verdict.checks["determines"] = leak or "passed"
    if leak:
        return _refuse(verdict, "leaks the target")
    verdict.block = block
    return verdict


def _refuse(verdict: CodeVerdict, reason: str) -> CodeVerdict:
    verdict.refused = reason
    return verdict


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


def _same_output(a: tuple[pd.DataFrame, pd.DataFrame], b: tuple[pd.DataFrame, pd.DataFrame], train: pd.DataFrame) -> bool:
    new = _new_columns(a[0], train)
    return not new or _same(a, b, new)  # without new columns the block is refused anyway


def _same(a: tuple[pd.DataFrame, pd.DataFrame], b: tuple[pd.DataFrame, pd.DataFrame], columns: list[str]) -> bool:
    for left, right in zip(a, b):
        for column in columns:
            if column not in left.columns or column not in right.columns or len(left) != len(right):
                return False
            if not _equal(left[column], right[column]):
                return False
    return True
