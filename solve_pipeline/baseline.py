"""The baseline solve: K-fold CV over a few candidate models, scored with the setup's metric.

Run as `python -m solve_pipeline.baseline WORKSPACE [--light] [--folds K] [--seed S]
[--time-budget SECONDS] [--out PATH]`. It imports the generated setup modules, so it must only
run as the sandboxed solver subprocess. Progress goes to stdout as JSON lines.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

# Must precede the first OpenMP load (numpy/sklearn/lightgbm): on a busy 2-core machine
# spin-waiting threads made LightGBM with num_threads=2 measured 7-50x slower than passive waits.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from solve_pipeline.baseline_models import Candidate, ModelOptions, default_candidates  # noqa: E402
from solve_pipeline.dataset import FeatureSet, build_features  # noqa: E402
from solve_pipeline.setup_modules import SetupArtifacts, TargetSpec  # noqa: E402
from solve_pipeline.submission_check import validate_submission  # noqa: E402

LIGHT_MAX_ROWS = 600
# Probabilities are floored so a class a fold never saw cannot make log loss infinite.
PROBA_FLOOR = 1e-6


@dataclass(frozen=True)
class SolveOptions:
    workspace: Path
    light: bool = False
    folds: int = 5
    seed: int = 0
    time_budget: float | None = None
    out: Path | None = None


@dataclass
class Predictions:
    """One candidate's outputs for one target: OOF over train rows and fold-averaged test."""

    model: str
    oof: np.ndarray
    test: np.ndarray | None


@dataclass
class SolveState:
    started: float
    best: dict[str, Predictions] = field(default_factory=dict)
    best_score: float = math.nan
    cv: dict[str, float | None] = field(default_factory=dict)
    first_submission_s: float | None = None
    submission_path: Path | None = None
    # One entry per candidate whose own formatted submission was written (for top-k submitting).
    candidates: list[dict[str, object]] = field(default_factory=list)

    def elapsed(self) -> float:
        return time.monotonic() - self.started


def emit(event: str, **fields: object) -> None:
    """One JSON line on stdout; NaN becomes null so every line is strict JSON."""
    clean = {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in fields.items()}
    print(json.dumps({"event": event, **clean}, default=str), flush=True)


def is_better(score: float, reference: float, higher_is_better: bool) -> bool:
    if not math.isfinite(score):
        return False
    if not math.isfinite(reference):
        return True
    return score > reference if higher_is_better else score < reference


def make_folds(n_rows: int, folds: int, seed: int, strata: np.ndarray | None) -> list[tuple]:
    """Stratified folds when the classes allow it; plain shuffled KFold otherwise."""
    from sklearn.model_selection import KFold, StratifiedKFold

    k = max(2, min(folds, n_rows))
    if strata is not None:
        counts = np.bincount(strata.astype(int))
        counts = counts[counts > 0]
        # StratifiedKFold only refuses when no class can fill k folds; rarer classes are merely
        # spread thinly (some folds' training then lacks them, which the models tolerate).
        if len(counts) > 1 and counts.max() >= k:
            splitter = StratifiedKFold(n_splits=k, shuffle=True, random_state=seed)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return list(splitter.split(np.zeros(n_rows), strata))
    return list(KFold(n_splits=k, shuffle=True, random_state=seed).split(np.zeros(n_rows)))


def prediction_frame(ids: Sequence[str], targets: list[TargetSpec], outputs: dict[str, np.ndarray],
                     artifacts: SetupArtifacts) -> pd.DataFrame:
    """The architecture's prediction frame: original labels/values plus per-class probabilities."""
    transformed = pd.DataFrame({"id": list(ids)})
    for spec in targets:
        out = outputs[spec.column]
        transformed[spec.column] = out.argmax(axis=1).astype(int) if spec.is_classification else out
    original = artifacts.transform.inverse(transformed.copy())
    if len(original) != len(transformed):
        raise ValueError("inverse() changed the number of rows")
    frame = pd.DataFrame({"id": list(ids)})
    for spec in targets:
        frame[spec.column] = np.asarray(original[spec.column])
        if spec.is_classification:
            for k, label in enumerate(spec.classes or []):
                frame[spec.proba_column(label)] = outputs[spec.column][:, k]
    return frame


def metric_score(artifacts: SetupArtifacts, frame: pd.DataFrame) -> float:
    """The setup's metric against the raw target map; NaN when the metric cannot score."""
    y_true = artifacts.target_map.drop_duplicates("id").set_index("id").loc[frame["id"]]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            value = float(artifacts.metric.score(y_true.reset_index(), frame.copy()))
    except Exception:  # untrusted metric code: a failure disqualifies the frame, not the run
        return math.nan
    return value if math.isfinite(value) else math.nan


def _normalise(proba: np.ndarray) -> np.ndarray:
    proba = np.clip(np.nan_to_num(proba, nan=0.0), PROBA_FLOOR, 1.0)
    return proba / proba.sum(axis=1, keepdims=True)


def _predict(model: object, spec: TargetSpec, X: object) -> np.ndarray:
    """(n, K) probabilities for classifiers, (n,) transformed values for regressors."""
    if spec.is_classification:
        return _normalise(model.predict_proba(X))
    return np.asarray(model.predict(X), dtype=float)


def run_candidate(candidate: Candidate, features: FeatureSet, y: dict[str, np.ndarray],
                  folds: list[tuple], artifacts: SetupArtifacts, state: SolveState,
                  options: SolveOptions, priors: dict[str, Predictions]) -> dict[str, Predictions] | None:
    """Cross-validate one candidate for every target; None if it cannot run or runs out of time."""
    matrices = candidate.matrices(features, options.seed)
    if matrices is None:
        emit("skip", model=candidate.name, reason="no usable features")
        return None
    X, X_test = matrices
    deadline = None if options.time_budget is None else state.started + options.time_budget
    model_options = ModelOptions(seed=options.seed, light=options.light, deadline=deadline)
    results: dict[str, Predictions] = {}
    for spec in artifacts.targets:
        target = y[spec.column]
        width = (spec.n_classes,) if spec.is_classification else ()
        oof = np.zeros((len(target), *width))
        test = np.zeros((X_test.shape[0], *width))
        for i, (train_rows, valid_rows) in enumerate(folds):
            over = options.time_budget is not None and state.elapsed() > options.time_budget
            if over and state.submission_path is not None:
                emit("skip", model=candidate.name, reason="time budget exhausted")
                return None
            model = candidate.make(spec, model_options, features)
            model.fit(X[train_rows], target[train_rows], X_val=X[valid_rows], y_val=target[valid_rows])
            oof[valid_rows] = _predict(model, spec, X[valid_rows])
            # Averaging fold models' test predictions needs no refit, keeps each model's
            # early-stopped size honest, and lets every candidate submit as soon as its CV ends.
            test += _predict(model, spec, X_test) / len(folds)
            fold_outputs = {s.column: (state.best.get(s.column) or priors[s.column]).oof[valid_rows]
                            for s in artifacts.targets}
            fold_outputs[spec.column] = oof[valid_rows]
            ids = [features.train_ids[r] for r in valid_rows]
            score = metric_score(artifacts, prediction_frame(ids, artifacts.targets, fold_outputs, artifacts))
            emit("fold", model=candidate.name, target=spec.column, fold=i, score=score,
                 elapsed_s=round(state.elapsed(), 2))
        results[spec.column] = Predictions(candidate.name, oof, test)
    return results


def write_csv_atomic(frame: pd.DataFrame, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    frame.to_csv(temporary, index=False)
    os.replace(temporary, path)


def formatted_submission(artifacts: SetupArtifacts, features: FeatureSet,
                         predictions: dict[str, Predictions]) -> pd.DataFrame:
    """The setup's formatter applied to the test predictions: the one path every submission takes."""
    outputs = {t: p.test for t, p in predictions.items()}
    pred = prediction_frame(features.test_ids, artifacts.targets, outputs, artifacts)
    formatted = artifacts.submission.format_submission(pred.copy())
    if not isinstance(formatted, pd.DataFrame) or formatted.empty:
        raise ValueError("format_submission did not return a non-empty DataFrame")
    return formatted


def write_submission(artifacts: SetupArtifacts, features: FeatureSet, state: SolveState,
                     path: Path) -> None:
    write_csv_atomic(formatted_submission(artifacts, features, state.best), path)
    if state.first_submission_s is None:
        state.first_submission_s = state.elapsed()
    state.submission_path = path
    models = sorted({p.model for p in state.best.values()})
    emit("submission", path=str(path), model="+".join(models), validation_score=state.best_score,
         elapsed_s=round(state.elapsed(), 2))
    # The formatter's own dummy output names the columns Kaggle expects; a mismatch is reported,
    # while the orchestrator's validation against the sample stays the real gate.
    reference = artifacts.setup_dir / "submission_format_check.csv"
    if reference.is_file():
        columns = pd.read_csv(reference, nrows=0).columns.tolist()
        problems = validate_submission(path, sample_path=None, expected_columns=columns)
        if problems:
            emit("submission_problems", problems=problems)


def _save_predictions(artifacts: SetupArtifacts, features: FeatureSet,
                      results: dict[str, Predictions], name: str) -> None:
    """OOF and test prediction frames per candidate, for later blending and inspection."""
    folder = artifacts.workspace / "solve" / "predictions"
    oof = prediction_frame(features.train_ids, artifacts.targets,
                           {t: p.oof for t, p in results.items()}, artifacts)
    test = prediction_frame(features.test_ids, artifacts.targets,
                            {t: p.test for t, p in results.items()}, artifacts)
    write_csv_atomic(oof, folder / f"{name}_oof.csv")
    write_csv_atomic(test, folder / f"{name}_test.csv")


def candidates_dir(artifacts: SetupArtifacts) -> Path:
    return artifacts.workspace / "submissions" / "candidates"


def _clear_candidates(artifacts: SetupArtifacts) -> None:
    """Files left by an earlier solve would otherwise pass for this solve's candidates."""
    folder = candidates_dir(artifacts)
    if folder.is_dir():
        for stale in folder.glob("*.csv"):
            stale.unlink()


def _write_candidate(artifacts: SetupArtifacts, features: FeatureSet, state: SolveState,
                     results: dict[str, Predictions], name: str) -> None:
    """The candidate's own submission, so the orchestrator can send more than the single best."""
    score = state.cv.get(name)
    if score is None or not math.isfinite(score):
        return  # without a validation score it cannot be ranked against the others
    path = candidates_dir(artifacts) / f"{name}.csv"
    try:
        write_csv_atomic(formatted_submission(artifacts, features, results), path)
    except Exception as error:  # noqa: BLE001 - untrusted formatter: one lost candidate file must not sink the run
        emit("skip_candidate", model=name, reason=f"{type(error).__name__}: {error}")
        return
    state.candidates.append({"model": name, "validation_score": score,
                             "path": path.relative_to(artifacts.workspace).as_posix()})


def ranked_candidates(candidates: list[dict[str, object]], higher_is_better: bool) -> list[dict[str, object]]:
    """Best first by validation; the sort is stable, so ties keep the order the solver adopted them in."""
    return sorted(candidates, key=lambda c: float(c["validation_score"]), reverse=higher_is_better)


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
            oof = np.tile(_normalise(counts[None, :]), (len(target), 1))
        else:
            oof = np.full(len(target), target.mean())
        priors[spec.column] = Predictions("prior", oof, None)
    return priors


def _adopt(results: dict[str, Predictions], own_score: float, state: SolveState,
           artifacts: SetupArtifacts, features: FeatureSet) -> bool:
    """Take a candidate's targets into the best set where they improve the whole frame's score."""
    if not state.best:
        state.best, state.best_score = dict(results), own_score
        return True
    improved = False
    # One target at a time with the others held at their best (one target: plain comparison).
    for spec in artifacts.targets:
        trial = {**state.best, spec.column: results[spec.column]}
        frame = prediction_frame(features.train_ids, artifacts.targets,
                                 {t: p.oof for t, p in trial.items()}, artifacts)
        score = metric_score(artifacts, frame)
        if is_better(score, state.best_score, artifacts.higher_is_better):
            state.best, state.best_score, improved = trial, score, True
    return improved


def solve(options: SolveOptions) -> dict:
    state = SolveState(started=time.monotonic())
    setup_dir = options.workspace / "setup"
    if setup_dir.is_dir():
        os.chdir(setup_dir)  # generated code's contract, imports included: it runs with cwd = setup/
    artifacts = SetupArtifacts.load(options.workspace)
    artifacts.require_solvable()
    out = options.out or artifacts.workspace / "submissions" / "submission.csv"
    ids = artifacts.train_ids
    n_total = len(ids)
    if options.light and len(ids) > LIGHT_MAX_ROWS:
        rng = np.random.default_rng(options.seed)
        keep = np.sort(rng.choice(len(ids), LIGHT_MAX_ROWS, replace=False))
        ids = [ids[i] for i in keep]
    folds_wanted = 2 if options.light else options.folds
    features = build_features(artifacts, train_ids=ids,
                              max_text_features=5000 if options.light else 30000,
                              image_size=16 if options.light else 32)
    y = _targets(artifacts, ids)
    strata = next((y[s.column] for s in artifacts.targets if s.is_classification), None)
    folds = make_folds(len(ids), folds_wanted, options.seed, strata)
    emit("start", n_train=len(ids), n_train_total=n_total, n_test=features.n_test, folds=len(folds),
         targets=[s.column for s in artifacts.targets], tab_features=len(features.tab_names),
         text_features=0 if features.text_train is None else features.text_train.shape[1],
         image_features=0 if features.image_train is None else features.image_train.shape[1])

    priors = _priors(artifacts, y)
    higher = artifacts.higher_is_better
    if not options.light:
        _clear_candidates(artifacts)
    for candidate in default_candidates():
        started = time.monotonic()
        try:
            results = run_candidate(candidate, features, y, folds, artifacts, state, options, priors)
        except Exception as error:  # one broken model family must not sink the run
            emit("skip", model=candidate.name, reason=f"{type(error).__name__}: {error}")
            continue
        if results is None:
            continue
        own = prediction_frame(features.train_ids, artifacts.targets,
                               {t: p.oof for t, p in results.items()}, artifacts)
        state.cv[candidate.name] = metric_score(artifacts, own)
        emit("model", model=candidate.name, score=state.cv[candidate.name],
             seconds=round(time.monotonic() - started, 2))
        _save_predictions(artifacts, features, results, candidate.name)
        if not options.light:
            _write_candidate(artifacts, features, state, results, candidate.name)
        improved = _adopt(results, state.cv[candidate.name], state, artifacts, features)
        if improved:
            write_submission(artifacts, features, state, out)

    if state.submission_path is None:
        raise RuntimeError("no candidate produced a submission")
    chosen = {t: p.model for t, p in state.best.items()}
    names = sorted(set(chosen.values()))
    result = {
        "validation_score": state.best_score if math.isfinite(state.best_score) else None,
        "higher_is_better": higher,
        "model": names[0] if len(names) == 1 else ",".join(f"{t}={m}" for t, m in chosen.items()),
        "models_per_target": chosen,
        "cv": {k: (v if v is not None and math.isfinite(v) else None) for k, v in state.cv.items()},
        "folds": len(folds),
        "n_train": len(ids),
        "n_train_total": n_total,
        "n_test": features.n_test,
        "light": options.light,
        "seed": options.seed,
        "submission_path": str(state.submission_path),
        "candidates": ranked_candidates(state.candidates, higher),
        "elapsed_s": round(state.elapsed(), 3),
        "time_to_first_submission_s": round(state.first_submission_s or 0.0, 3),
    }
    result_path = artifacts.workspace / "solve" / "solve_result.json"
    result_path.parent.mkdir(parents=True, exist_ok=True)
    temporary = result_path.with_name(".solve_result.json.tmp")
    temporary.write_text(json.dumps(result, indent=2))
    os.replace(temporary, result_path)
    emit("done", **{k: v for k, v in result.items() if k != "cv"}, cv=result["cv"])
    return result


def parse_args(argv: Sequence[str] | None = None) -> SolveOptions:
    parser = argparse.ArgumentParser(prog="python -m solve_pipeline.baseline", description=__doc__)
    parser.add_argument("workspace", type=Path)
    parser.add_argument("--light", action="store_true", help="<= 600 rows, 2 folds, ~50 trees")
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--time-budget", type=float, default=None, help="seconds")
    parser.add_argument("--out", type=Path, default=None, help="submission path")
    args = parser.parse_args(argv)
    return SolveOptions(
        workspace=args.workspace.resolve(), light=args.light, folds=max(2, args.folds),
        seed=args.seed, time_budget=args.time_budget,
        out=args.out.resolve() if args.out is not None else None,
    )


def main(argv: Sequence[str] | None = None) -> int:
    from threadpoolctl import threadpool_limits

    options = parse_args(argv)
    try:
        # Multi-threaded BLAS/OpenMP inside sklearn spin-waits badly on a busy 2-core machine
        # (lbfgs measured 50x slower); LightGBM still applies its own num_threads per call.
        with threadpool_limits(limits=1):
            solve(options)
    except Exception as error:
        emit("error", message=f"{type(error).__name__}: {error}")
        print(f"solve failed: {type(error).__name__}: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
