"""K-fold cross-validation of candidate models, scored with the setup's own metric.

A `CandidateRun` holds one candidate's out-of-fold and test predictions as folds complete, so the
race can fit a single fold of every family first (successive halving's first rung) and finish the
survivors later without refitting anything.
"""

from __future__ import annotations

import json
import math
import time
import warnings
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
import pandas as pd

from agentk.core.metrics.direction import Direction
from agentk.core.metrics.functions import class_log_loss
from agentk.core.predictions import prediction_frame as build_prediction_frame
from solve_pipeline.base.baseline_models import ModelCandidate, ModelOptions
from solve_pipeline.base.dataset import FeatureSet
from solve_pipeline.base.decoding import Decoder
from solve_pipeline.base.replay import FoldModels, KeptModels, TargetReplay
from solve_pipeline.base.setup_modules import SetupArtifacts, TargetSpec
from solve_pipeline.base.table_inputs import InputReplay
from solve_pipeline.base.temperature import fit_temperature, tempered

# Probabilities are floored so a class a fold never saw cannot make log loss infinite.
PROBA_FLOOR = 1e-6
# A fold this big pays a second metric call (seconds each on a million rows) for a calibrated race
# score that rarely reorders big-data families: its raw score ranks it.
FOLD_CALIBRATION_MAX_ROWS = 50_000


def emit(event: str, **fields: object) -> None:
    """One JSON line on stdout; NaN becomes null so every line is strict JSON."""
    clean = {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in fields.items()}
    print(json.dumps({"event": event, **clean}, default=str), flush=True)


@dataclass
class Predictions:
    """One candidate's outputs for one target: OOF over train rows and fold-averaged test."""

    model: str
    oof: np.ndarray
    test: np.ndarray | None
    decoder: Decoder | None = None  # classification: how probabilities become labels (None: argmax)
    # How `test` is made again from unseen rows (base/replay.py); None where it cannot be.
    replay: TargetReplay | None = None


@dataclass
class CVContext:
    """Everything a fold fit needs that does not change between candidates."""

    artifacts: SetupArtifacts
    features: FeatureSet
    y: dict[str, np.ndarray]
    folds: list[tuple]
    priors: dict[str, Predictions]
    seed: int = 0
    light: bool = False
    truth: pd.DataFrame | None = field(default=None, repr=False)  # _truth()'s cache
    # Set when the setup's metric cannot score even the constant model: the solver then ranks
    # everything by a surrogate (log loss / squared error on transformed targets, lower is better).
    surrogate: bool = False
    # What taking a finished family in costs past its folds (calibrating, scoring and writing every
    # target's predictions): the race prices a family with it; six labels make it six times dearer.
    adopt_s: float = 0.0
    # What forecast_features.py added when setup found dated series (None: not a forecast).
    forecast: dict[str, Any] | None = None
    # Columns the metric reads beside each train row's answer (a scaled error's series, scale and
    # weight: forecast_features.scaled_error_context); empty for every other metric.
    truth_context: dict[str, np.ndarray] = field(default_factory=dict)
    # Keep every fold's fitted models on its run, for the predictor the solve leaves (export/);
    # off for light solves and big tables, whose fold models would crowd the memory.
    keep_models: bool = False
    kept: KeptModels = field(default_factory=KeptModels)  # shared by the contexts of one solve (replace)

    @property
    def targets(self) -> list[TargetSpec]:
        return self.artifacts.targets

    @property
    def higher_is_better(self) -> bool:
        return self.direction.higher_is_better

    @property
    def direction(self) -> Direction:
        return Direction(False) if self.surrogate else self.artifacts.direction


def prediction_frame(ids: Sequence[str], targets: list[TargetSpec], outputs: dict[str, np.ndarray],
                     artifacts: SetupArtifacts, decoders: dict[str, Decoder | None] | None = None) -> pd.DataFrame:
    """The architecture's prediction frame of the solver's outputs, labels chosen by `decoders`."""
    chosen = {spec.column: decoder.labels(outputs[spec.column]) for spec in targets
              if spec.is_classification and (decoder := (decoders or {}).get(spec.column)) is not None}
    return build_prediction_frame(ids, targets, outputs, artifacts.transform.inverse, class_indices=chosen)


def _truth(ctx: CVContext) -> pd.DataFrame:
    """The raw target map in train-row order with `id` = the row's position, aligned once per solve.

    The solver's own scoring names rows by position on both sides: the metric aligns frames on
    `id`, and integer positions in the same order cost nothing to align, where a million string
    ids cost seconds on every call (a race makes hundreds)."""
    if ctx.truth is None or len(ctx.truth) != ctx.features.n_train:
        raw = ctx.artifacts.target_map.drop_duplicates("id").set_index("id").loc[list(ctx.features.train_ids)]
        raw = raw.reset_index(drop=True)
        raw.insert(0, "id", np.arange(len(raw)))
        for name, values in ctx.truth_context.items():
            raw[name] = values
        ctx.truth = raw
    return ctx.truth


def metric_score(ctx: CVContext, rows: np.ndarray, frame: pd.DataFrame) -> float:
    """The setup's metric on some train rows (a frame with positional ids); NaN when it cannot score."""
    y_true = _truth(ctx).iloc[rows].reset_index(drop=True)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            value = float(ctx.artifacts.metric.score(y_true, frame.copy()))
    except Exception:  # untrusted metric code: a failure disqualifies the frame, not the run
        return math.nan
    return value if math.isfinite(value) else math.nan


def score_outputs(ctx: CVContext, rows: np.ndarray | None, outputs: dict[str, np.ndarray],
                  decoders: dict[str, Decoder | None] | None = None) -> float:
    """Metric of transformed outputs on some train rows (None = all); missing targets use priors."""
    index = np.arange(ctx.features.n_train) if rows is None else rows
    full = {s.column: outputs[s.column] if s.column in outputs else ctx.priors[s.column].oof[index]
            for s in ctx.targets}
    if ctx.surrogate:
        return surrogate_loss(ctx, index, full)
    return metric_score(ctx, index, prediction_frame(index, ctx.targets, full, ctx.artifacts, decoders))


def surrogate_loss(ctx: CVContext, rows: np.ndarray, outputs: dict[str, np.ndarray]) -> float:
    """Mean over targets of log loss (classification) or squared error (transformed regression)."""
    losses = []
    for spec in ctx.targets:
        y, pred = ctx.y[spec.column][rows], outputs[spec.column]
        if spec.is_classification:
            # The solver's floor first (as every model's output gets), then the metrics' log loss.
            losses.append(class_log_loss(y, normalise_proba(pred)))
        else:
            losses.append(float(np.nanmean((np.asarray(pred, dtype=float) - y) ** 2)))
    value = float(np.mean(losses))
    return value if math.isfinite(value) else math.nan


def normalise_proba(proba: np.ndarray) -> np.ndarray:
    proba = np.clip(np.nan_to_num(np.asarray(proba, dtype=np.float64), nan=0.0), PROBA_FLOOR, 1.0)
    return proba / proba.sum(axis=1, keepdims=True)


def predict(model: Any, spec: TargetSpec, X: Any, floor: float | None = None) -> np.ndarray:
    """(n, K) probabilities for classifiers, (n,) transformed values for regressors (at least
    `floor` where one is given)."""
    if spec.is_classification:
        return normalise_proba(model.predict_proba(X))
    values = np.asarray(model.predict(X), dtype=float)
    return values if floor is None else np.maximum(values, floor)


def _floor(ctx: CVContext, spec: TargetSpec, target: np.ndarray) -> float | None:
    """0 for a regression target never negative in training (sales, counts) judged by an error:
    a prediction below zero can only be further from any such truth."""
    if spec.is_classification or ctx.higher_is_better or not len(target) or float(np.nanmin(target)) < 0:
        return None
    return 0.0


@dataclass
class CandidateRun:
    """A candidate's predictions as its folds complete (fold order is free)."""

    name: str
    candidate: ModelCandidate
    X: Any
    X_test: Any
    oof: dict[str, np.ndarray]
    test: dict[str, np.ndarray]
    done: list[int] = field(default_factory=list)
    fold_scores: dict[int, float] = field(default_factory=dict)
    seconds: float = 0.0
    # Per target, the temperature calibration tried on the complete OOF (calibration.py); None
    # until tried, so a run is never tempered twice.
    calibration: dict[str, object] | None = None
    # What the predictor needs to make `test` again: how the test matrix is made from the tabular
    # block, each fold's fitted model per target (with its floor, in the order they were added),
    # the temperature each calibrated target got; `replays` stands in for all of them where the
    # run combines others (a bag).
    inputs: InputReplay | None = None
    models: dict[str, list[tuple[Any, float | None]]] | None = None
    n_folds: int = 0
    temperatures: dict[str, float] = field(default_factory=dict)
    replays: dict[str, TargetReplay | None] | None = None
    target_specs: list[TargetSpec] = field(default_factory=list)

    def complete(self, n_folds: int) -> bool:
        return len(self.done) == n_folds

    def target_replay(self, target: str) -> TargetReplay | None:
        """How this run's test predictions of `target` are made again; None where they cannot be
        (its matrices have no replay, its models were not kept, or a fold is missing)."""
        if self.replays is not None:
            return self.replays.get(target)
        if self.inputs is None or self.models is None or len(self.models.get(target, [])) != self.n_folds:
            return None
        spec = next(s for s in self.target_specs if s.column == target)
        return FoldModels(spec, self.inputs, list(self.models[target]), self.n_folds, self.temperatures.get(target))

    def predictions(self) -> dict[str, Predictions]:
        return {t: Predictions(self.name, self.oof[t], self.test[t], replay=self.target_replay(t)) for t in self.oof}


def start_run(candidate: ModelCandidate, ctx: CVContext, name: str | None = None) -> CandidateRun | None:
    """Build the candidate's matrices; None when it has nothing to read."""
    matrices = candidate.matrices(ctx.features, ctx.seed)
    if matrices is None:
        return None
    X, X_test = matrices
    oof, test = {}, {}
    for spec in ctx.targets:
        width = (spec.n_classes,) if spec.is_classification else ()
        oof[spec.column] = np.zeros((ctx.features.n_train, *width))
        test[spec.column] = np.zeros((X_test.shape[0], *width))
    run = CandidateRun(name or candidate.name, candidate, X, X_test, oof, test, target_specs=list(ctx.targets))
    if ctx.keep_models:
        run.inputs = getattr(matrices, "replay", None)
        run.models = {spec.column: [] for spec in ctx.targets} if run.inputs is not None else None
    return run


def known_rows(target: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Those of `rows` whose target is given (all of them for a class target, never missing)."""
    if target.dtype.kind != "f":
        return rows
    known = ~np.isnan(target[rows])
    return rows if known.all() else rows[known]


class FoldOutOfTime(Exception):
    """A fold given up between two of its targets: its deadline had passed."""


def fit_fold(run: CandidateRun, fold: int, ctx: CVContext, deadline: float | None,
             stop_between_targets: bool = False) -> float:
    """Fit every target on one fold, record its predictions, return the fold's metric score.

    `stop_between_targets`: raise FoldOutOfTime before the next target once the deadline has
    passed (a family started with no estimate of its cost: one linear fit per keypoint, 16 of
    them at minutes each, ran the solve past its budget until the solver was killed)."""
    started = time.monotonic()
    train_rows, valid_rows = ctx.folds[fold]
    options = ModelOptions(seed=ctx.seed, light=ctx.light, deadline=deadline)
    outputs = {}
    for done, spec in enumerate(ctx.targets):
        if stop_between_targets and done and deadline is not None and time.monotonic() > deadline:
            raise FoldOutOfTime(f"the deadline passed after {done} of {len(ctx.targets)} targets of fold {fold}")
        target = ctx.y[spec.column]
        # A target missing on some rows (several targets, each given where known) is learnt on
        # the rows that have it, and predicted on every row.
        fit_rows, check_rows = known_rows(target, train_rows), known_rows(target, valid_rows)
        model = run.candidate.make(spec, options, ctx.features)
        model.fit(run.X[fit_rows], target[fit_rows], X_val=run.X[check_rows], y_val=target[check_rows])
        floor = _floor(ctx, spec, target[fit_rows])
        run.oof[spec.column][valid_rows] = outputs[spec.column] = predict(model, spec, run.X[valid_rows], floor)
        # Averaging fold models' test predictions needs no refit, keeps each model's
        # early-stopped size honest, and lets every candidate submit as soon as its CV ends.
        run.test[spec.column] += predict(model, spec, run.X_test, floor) / len(ctx.folds)
        if run.models is not None:
            run.models[spec.column].append((model, floor))
    run.n_folds = len(ctx.folds)
    if run.models is not None and not ctx.kept.admit([m for m, _ in (pairs[-1] for pairs in run.models.values())]):
        run.models = None  # past the memory the kept models may take: this run is not exportable
    run.done.append(fold)
    run.seconds += time.monotonic() - started
    score = _fold_score(ctx, valid_rows, outputs)
    run.fold_scores[fold] = score
    emit("fold", model=run.name, fold=fold, score=score, elapsed_s=round(run.seconds, 2))
    return score


def _fold_score(ctx: CVContext, rows: np.ndarray, outputs: dict[str, np.ndarray]) -> float:
    """The fold's metric, or its calibrated metric when tempering the probabilities (one T per
    target, fitted on the fold itself) scores better: complete runs are calibrated later
    (calibration.py), so the race must not prune a family whose probabilities are merely timid
    (naive Bayes: log loss 0.92 raw, 0.38 tempered)."""
    score = score_outputs(ctx, rows, outputs)
    if ctx.light or len(rows) > FOLD_CALIBRATION_MAX_ROWS or \
            not any(s.is_classification and s.n_classes >= 2 for s in ctx.targets):
        return score
    tempered_outputs = dict(outputs)
    for spec in ctx.targets:
        if spec.is_classification and spec.n_classes >= 2:
            y = ctx.y[spec.column][rows].astype(int)
            tempered_outputs[spec.column] = tempered(outputs[spec.column], fit_temperature(outputs[spec.column], y))
    calibrated = score_outputs(ctx, rows, tempered_outputs)
    return calibrated if ctx.direction.better(calibrated, score) else score


def finish_run(run: CandidateRun, ctx: CVContext, deadline: float | None,
               fold_cap_s: float | None = None) -> bool:
    """Fit the folds still missing; False when the deadline passed before all were done.

    `fold_cap_s` bounds each fold's own time, so a family cut short on its first fold (the race's
    rung one) is not given unbounded folds afterwards: its folds stay alike in size and its cost
    stays close to the estimate the race made from that first fold."""
    for fold in range(len(ctx.folds)):
        if fold in run.done:
            continue
        if deadline is not None and time.monotonic() > deadline:
            return False
        fold_deadline = deadline
        if fold_cap_s is not None:
            capped = time.monotonic() + fold_cap_s
            fold_deadline = capped if deadline is None else min(deadline, capped)
        fit_fold(run, fold, ctx, fold_deadline)
    return True


def cv_score(run: CandidateRun, ctx: CVContext) -> float:
    """The whole OOF frame's score: the number every adoption, race and blend decision uses."""
    return score_outputs(ctx, None, run.oof)
