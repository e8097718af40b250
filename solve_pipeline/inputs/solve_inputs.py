"""What a solve starts from: its options, and the setup's artifacts read into a CV context (the
train rows' features, targets and priors, on folds that match the test: validation.py)."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from agentk.core.artifacts import SetupLayout
from agentk.core.metrics import UnknownMetricError, get_metric
from agentk.core.records.config import Device, Fusion, SolveSettings, WarmStart
from solve_pipeline.base.choice_rule import DEFAULT_RULE, RuleName
from solve_pipeline.inputs.audio_windows import affordable_windows
from solve_pipeline.base.cv import CVContext, Predictions, emit, normalise_proba
from solve_pipeline.base.dataset import BIG_FOLDS
from solve_pipeline.inputs.features import aligned, build_features
from solve_pipeline.inputs.forecast_features import add_forecast_features, scaled_error_context, series_shape
from solve_pipeline.base.setup_modules import SetupArtifacts
from solve_pipeline.inputs.validation import RANDOM, Validation, choose_validation
from solve_pipeline.inputs.wide_features import feature_cap, screen

LIGHT_MAX_ROWS = 600
# The share of the budget the clips' featurisation may take before they are read shorter: the race,
# tuning and blending still need the rest.
AUDIO_SHARE = 0.3
# The setup's light solve has no budget but a timeout (10 minutes by default), and featurises every
# test clip: long clips are read shorter there when a probe says they would take longer than this.
LIGHT_AUDIO_SECONDS = 120.0

_DEFAULTS = SolveSettings()


@dataclass(frozen=True)
class SolveOptions:
    """One solve's settings: a run's `SolveSettings` (or their defaults) plus what is per call."""

    workspace: Path
    light: bool = False
    folds: int = _DEFAULTS.folds
    seed: int = _DEFAULTS.seed
    # None: no budget. A run's config.json always sets one; the setup's light solve never does.
    time_budget: float | None = None
    out: Path | None = None
    fusion: Fusion = _DEFAULTS.fusion
    tune: bool = _DEFAULTS.tune
    blend_after: int = _DEFAULTS.blend_after
    device: Device = _DEFAULTS.device
    # A campaign's suggestions from its nearest solved tasks; None: a cold start.
    warm_start: WarmStart | None = _DEFAULTS.warm_start
    # Ask the runner's LLM at the decision points (llm_loop.py); off: the expert's schedule alone.
    llm_solve: bool = False  # the runner resolved config.json's unset value before the solver started
    image_backbone: str | None = _DEFAULTS.image_backbone  # the user's own image model (a folder or repo id)
    # How the submission is chosen among candidates (choice_rule.py): the best CV, or within noise.
    choice: RuleName = DEFAULT_RULE



def read_plan(artifacts: SetupArtifacts) -> dict[str, Any]:
    try:
        plan = json.loads(SetupLayout(artifacts.setup_dir).plan.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return plan if isinstance(plan, dict) else {}


def _targets(artifacts: SetupArtifacts, ids: list[str]) -> dict[str, np.ndarray]:
    transformed = artifacts.target_map_transformed.drop_duplicates("id").set_index("id").loc[ids]
    y: dict[str, np.ndarray] = {}
    for spec in artifacts.targets:
        values = pd.to_numeric(transformed[spec.column]).to_numpy(dtype=float)
        if spec.is_classification:
            values = values.astype(int)
            if values.min() < 0 or values.max() >= spec.n_classes:
                raise ValueError(f"{spec.column}: class indices outside 0..{spec.n_classes - 1}")
        y[spec.column] = values
    return y


def _priors(artifacts: SetupArtifacts, y: dict[str, np.ndarray]) -> dict[str, Predictions]:
    """Class frequencies / means, standing in for targets no candidate has predicted yet."""
    priors = {}
    for spec in artifacts.targets:
        target = y[spec.column]
        if spec.is_classification:
            counts = np.bincount(target, minlength=spec.n_classes) / len(target)
            oof = np.tile(normalise_proba(counts[None, :]), (len(target), 1))
        else:
            oof = np.full(len(target), np.nanmean(target))  # a target may miss on rows
        priors[spec.column] = Predictions("prior", oof, None)
    return priors


def _per_series(metric: object) -> bool:
    """Whether the plan's metric scales each series' errors by its history (RMSSE)."""
    try:
        return isinstance(metric, str) and get_metric(metric).per_series
    except UnknownMetricError:
        return False


def _raw_targets(artifacts: SetupArtifacts, ids: list[str], columns: list[str]) -> dict[str, np.ndarray]:
    """The targets as the answers hold them (the metric's scale, not the model's)."""
    raw = artifacts.target_map.drop_duplicates("id").set_index("id").loc[ids]
    return {c: pd.to_numeric(raw[c], errors="coerce").to_numpy(dtype=float) for c in columns}


def _audio_seconds(options: SolveOptions) -> float | None:
    if options.light:
        return LIGHT_AUDIO_SECONDS
    return None if options.time_budget is None else AUDIO_SHARE * options.time_budget


def prepare(options: SolveOptions) -> tuple[SetupArtifacts, CVContext, int, Validation]:
    setup_dir = options.workspace / "setup"
    if setup_dir.is_dir():
        os.chdir(setup_dir)  # generated code's contract, imports included: it runs with cwd = setup/
    artifacts = SetupArtifacts.load(options.workspace)
    artifacts.require_solvable()
    ids = artifacts.train_ids
    n_total = len(ids)
    if options.light and len(ids) > LIGHT_MAX_ROWS:
        rng = np.random.default_rng(options.seed)
        keep = np.sort(rng.choice(len(ids), LIGHT_MAX_ROWS, replace=False))
        ids = [ids[i] for i in keep]
    # A windowed sound task (BirdCLEF) keeps the training windows the budget can read.
    ids, window_note = affordable_windows(artifacts, ids, _audio_seconds(options), options.seed)
    if window_note:
        emit("audio", message=window_note)
    features = build_features(artifacts, train_ids=ids,
                              max_text_features=5000 if options.light else 30000,
                              image_size=16 if options.light else 32,
                              audio_seconds=_audio_seconds(options))
    y = _targets(artifacts, ids)
    plan = read_plan(artifacts)
    shape = None if options.light else series_shape(plan)
    forecast, truth_context = None, {}
    if shape is not None:
        regression = [s.column for s in artifacts.targets if not s.is_classification]
        forecast = add_forecast_features(features, artifacts, y, regression, shape)
        if _per_series(plan.get("metric")) and "tab" in artifacts.train_maps:
            truth_context = scaled_error_context(shape, aligned(artifacts.train_maps["tab"], ids),
                                                 aligned(artifacts.test_maps["tab"], features.test_ids),
                                                 _raw_targets(artifacts, ids, regression))
            forecast["scored_by"] = (f"{plan['metric']}: each series' scale and weight from its training history up "
                                     f"to each row's origin" if truth_context else
                                     f"{plan['metric']} without each series' history (no timeline): as RMSE")
    cap = feature_cap(len(features.tab_names), options.time_budget, options.light)
    if cap is not None:
        emit("wide_table", **screen(features, [y[s.column] for s in artifacts.targets],
                                    [s.is_classification for s in artifacts.targets], cap))
    strata = next((y[s.column] for s in artifacts.targets if s.is_classification), None)
    validation = RANDOM if options.light else choose_validation(features)
    k = 2 if options.light else (min(options.folds, BIG_FOLDS) if features.big else options.folds)
    folds = validation.folds(len(ids), k, options.seed, strata)
    ctx = CVContext(artifacts, features, y, folds, _priors(artifacts, y), seed=options.seed, light=options.light,
                    forecast=forecast, keep_models=not options.light and not features.big, truth_context=truth_context)
    return artifacts, ctx, n_total, validation
