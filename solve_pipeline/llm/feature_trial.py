"""A feature block earns its place in CV: the best tabular family (the best whose cross-validation
fits the time left), refitted with its default parameters on the same folds with the block
appended, must beat its own score by more than the noise of its fold scores (their standard error),
but not by far more: a gain far beyond that noise is a leak's (feature_leaks.py), never kept.
A kept block joins the features every later family reads, and its run is adopted through
`Solver.consider` like any other solution."""

from __future__ import annotations

import dataclasses
import math
import time
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from agentk.core.secrets import redact
from agentk.core.records.solve_decisions import FeatureRecord
from solve_pipeline.race.calibration import calibrate_run
from solve_pipeline.base.cv import CandidateRun, emit, finish_run, start_run
from solve_pipeline.base.dataset import CATEGORY, NUMERIC, FeatureSet
from solve_pipeline.llm.feature_code import FeatureBlock, check_feature_code
from solve_pipeline.llm.feature_leaks import cv_jump
from solve_pipeline.inputs.features import aligned
from solve_pipeline.race.registry import TABLE_FAMILIES, family_candidate

if TYPE_CHECKING:
    from solve_pipeline.phases.solve_state import Solver

# The code's wall-clock cap: CAP_SHARE of the time left, within [MIN_CAP_S, CAP_S] and never past the
# time left. The floor covers the child's own start (pandas and pyarrow imports) on a busy machine.
CAP_S, CAP_SHARE, MIN_CAP_S = 60.0, 0.1, 5.0


def code_cap(seconds_left: float) -> float:
    return max(1.0, min(CAP_S, max(MIN_CAP_S, CAP_SHARE * seconds_left), seconds_left))


def input_frames(solver: Solver) -> tuple[pd.DataFrame, pd.DataFrame, list[str]] | None:
    """The tabular maps in the features' row order, train with its raw targets; None without a table."""
    artifacts, features = solver.artifacts, solver.ctx.features
    if "tab" not in artifacts.train_maps or artifacts.target_map is None:
        return None
    train = aligned(artifacts.train_maps["tab"], features.train_ids)
    test = aligned(artifacts.test_maps["tab"], features.test_ids)
    raw = aligned(artifacts.target_map, features.train_ids)
    targets = [s.column for s in solver.ctx.targets if s.column in raw.columns]
    train = train.join(raw[targets], rsuffix="__target")
    return train.reset_index(names="id"), test.reset_index(names="id"), targets


def tabular_bases(solver: Solver) -> dict[str, CandidateRun]:
    """The race's finished tabular families by name: each one's run on the current features."""
    return {r.name: r for r in solver.state.complete
            if r.name in TABLE_FAMILIES and solver.state.cv.get(r.name) is not None}


def _best(solver: Solver, bases: dict[str, CandidateRun], seconds_left: float = math.inf) -> CandidateRun | None:
    """The best base whose own cross-validation took no longer than the time left (a block judged by a
    family that cannot finish is a window spent for nothing); the best of all when none fits."""
    ranked = solver.ctx.direction.ranked(list(bases.values()), key=lambda r: solver.state.cv[r.name])
    return next((r for r in ranked if r.seconds <= seconds_left), ranked[0] if ranked else None)


def with_block(features: FeatureSet, block: FeatureBlock) -> FeatureSet:
    """The features with the block's columns appended (text categories become shared codes)."""
    names, kinds, train_cols, test_cols = [], [], [], []
    for column in block.train.columns:
        left, right = block.train[column], block.test[column]
        if pd.api.types.is_numeric_dtype(left) or pd.api.types.is_bool_dtype(left):
            # Copies: parquet's arrays are read-only, and the infinities are masked in place below.
            train_values = pd.to_numeric(left, errors="coerce").to_numpy(np.float64, copy=True)
            test_values = pd.to_numeric(right, errors="coerce").to_numpy(np.float64, copy=True)
            kind = NUMERIC
        else:
            codes, _ = pd.factorize(pd.concat([left, right], ignore_index=True).astype("string"), use_na_sentinel=True)
            values = np.where(codes < 0, np.nan, codes).astype(np.float64)
            train_values, test_values = values[:len(left)], values[len(left):]
            kind = CATEGORY
        train_values[~np.isfinite(train_values)] = np.nan
        test_values[~np.isfinite(test_values)] = np.nan
        names.append(f"llm__{column}")
        kinds.append(kind)
        train_cols.append(train_values)
        test_cols.append(test_values)
    return dataclasses.replace(
        features,
        tab_train=np.column_stack([features.tab_train, *train_cols]).astype(np.float32),
        tab_test=np.column_stack([features.tab_test, *test_cols]).astype(np.float32),
        tab_names=[*features.tab_names, *names], tab_kinds=[*features.tab_kinds, *kinds])


def noise_margin(run: CandidateRun) -> float:
    """The standard error of the run's fold scores (0 with fewer than two)."""
    scores = [s for s in run.fold_scores.values() if math.isfinite(s)]
    if len(scores) < 2:
        return 0.0
    return float(np.std(scores, ddof=1) / math.sqrt(len(scores)))


def try_feature(solver: Solver, code: str, n: int, until: float, bases: dict[str, CandidateRun]) -> FeatureRecord:
    """Check the code, then keep its block only on a CV gain beyond noise; the record says why.

    `bases` holds, per family, its run on the current features (the race's runs at first): a block
    is judged against the best of them, so a second block never takes credit for a first one's
    gain. Keeping a block leaves its own run as the one base (the others read older features)."""
    # The record is stored and shown, so it is redacted; the code runs exactly as the model wrote it.
    record = FeatureRecord(code=redact(code))
    frames = input_frames(solver)
    base = _best(solver, bases)
    if frames is None or base is None:
        record.refused = record.verdict = "no tabular input map" if frames is None else "no tabular family finished"
        return record
    train, test, targets = frames
    left = until - time.monotonic()
    if left < MIN_CAP_S:
        # A child stopped before its imports end says nothing of the code: it is not run, not blamed.
        record.verdict = f"dropped: no time to run it ({max(left, 0):.1f} s left)"
        return record
    cap = code_cap(left)
    verdict = check_feature_code(code, train, test, targets, cap, seed=solver.ctx.seed)
    record.checks = verdict.checks
    if verdict.block is None:
        record.refused = verdict.refused
        record.verdict = f"refused: {verdict.refused}"
        emit("feature_refused", n=n, reason=verdict.refused)
        return record
    record.columns = list(verdict.block.train.columns)
    base = _best(solver, bases, until - time.monotonic()) or base
    features = with_block(solver.ctx.features, verdict.block)
    ctx = dataclasses.replace(solver.ctx, features=features)
    family = base.candidate.name  # a kept block's run is named <family>_fe<n>
    record.family, record.cv_before = family, solver.state.cv[base.name]
    record.margin = noise_margin(base)
    run = start_run(family_candidate(family, solver.options.time_budget), ctx, name=f"{family}_fe{n}")
    if run is None or not finish_run(run, ctx, until):
        record.verdict = "dropped: no time to cross-validate it"
        return record
    record.cv_after = calibrate_run(run, ctx)
    better = solver.ctx.direction.better(record.cv_after, record.cv_before)
    gain = abs(record.cv_after - record.cv_before) if math.isfinite(record.cv_after) else 0.0
    if not (better and gain > record.margin):
        record.verdict = "dropped: no gain" if not better else \
            f"dropped: no gain beyond noise ({gain:.5f} <= {record.margin:.5f})"
        emit("feature_dropped", n=n, family=family, before=record.cv_before, after=record.cv_after)
        return record
    jump = cv_jump(gain, record.margin)
    record.checks["cv_jump"] = jump or "passed"
    if jump is not None:
        record.refused = "leaks the target"
        record.verdict = f"refused: leaks the target ({jump})"
        emit("feature_refused", n=n, reason=record.verdict)
        return record
    record.kept, record.verdict = True, "kept: CV improved beyond noise"
    # Later families, tuning and bags read the block too; runs already made keep their own matrices.
    solver.ctx.features = features
    solver.on_finished(run)
    bases.clear()
    bases[family] = run
    emit("feature_kept", n=n, family=family, before=record.cv_before, after=record.cv_after)
    return record
