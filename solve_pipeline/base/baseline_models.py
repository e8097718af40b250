"""Candidate models of the baseline solve and the feature matrices each one reads.

A model follows scikit-learn discipline over one feature matrix: `fit(X, y, X_val=, y_val=)`,
`predict_proba(X)` (classifiers; columns are class indices 0..K-1 of target_info, always all K
even when a fold lacks some classes) and `predict(X)` (class index or transformed value).
The optional validation split only drives early stopping.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, replace
from typing import Callable, Protocol

import numpy as np
from scipy import sparse

from solve_pipeline.base.dataset import BIG_ROWS, CATEGORY, ORDINAL_CODE, FeatureSet
from solve_pipeline.base.setup_modules import TargetSpec
from solve_pipeline.base.table_inputs import LinearTable, Matrices, TreeReplay, fit_dense_scaling, fit_linear_table

Matrix = np.ndarray | sparse.csr_matrix


def dense_if_full(X: Matrix, min_density: float = 0.5) -> Matrix:
    """`X` as a dense array when it is sparse in type only (an image embedding's block: every
    cell set): scipy's sparse product that RidgeCV's leave-one-out search builds on such a matrix
    took minutes per target (16 keypoint targets ran the solve far past its budget) where BLAS
    takes seconds. Callers bound the size (RidgeCV's matrices are at most 20000 x 3000)."""
    if sparse.issparse(X) and X.nnz >= min_density * X.shape[0] * X.shape[1]:
        return X.toarray()
    return X


class Model(Protocol):
    def fit(self, X: Matrix, y: np.ndarray, *, X_val: Matrix | None = None,
            y_val: np.ndarray | None = None) -> "Model": ...

    def predict_proba(self, X: Matrix) -> np.ndarray: ...

    def predict(self, X: Matrix) -> np.ndarray: ...


@dataclass(frozen=True)
class ModelOptions:
    seed: int = 0
    light: bool = False
    n_estimators: int = 2000
    early_stopping_rounds: int = 100
    learning_rate: float = 0.05
    threads: int = 2
    deadline: float | None = None  # time.monotonic() value after which boosting stops early


class ClassifierBase:
    """Shared predict for classifiers; subclasses fill `_proba`."""

    spec: TargetSpec

    def predict(self, X: Matrix) -> np.ndarray:
        if not self.spec.is_classification:
            return self._values(X)
        return self.predict_proba(X).argmax(axis=1)

    def _values(self, X: Matrix) -> np.ndarray:
        raise NotImplementedError


def _expand(proba: np.ndarray, present: np.ndarray, n_classes: int) -> np.ndarray:
    """Spread probabilities over fitted classes into all K columns (absent classes get 0)."""
    full = np.zeros((proba.shape[0], n_classes), dtype=np.float64)
    full[:, present.astype(int)] = proba
    return full


class ConstantModel(ClassifierBase):
    """Class frequencies or the mean: the floor every real model must beat."""

    def __init__(self, spec: TargetSpec, options: ModelOptions | None = None) -> None:
        self.spec = spec

    def fit(self, X: Matrix, y: np.ndarray, **_: object) -> "ConstantModel":
        if self.spec.is_classification:
            counts = np.bincount(y.astype(int), minlength=self.spec.n_classes).astype(float)
            self.prior_ = counts / max(counts.sum(), 1.0)
        else:
            self.mean_ = float(np.mean(y)) if len(y) else 0.0
        return self

    def predict_proba(self, X: Matrix) -> np.ndarray:
        return np.tile(self.prior_, (X.shape[0], 1))

    def _values(self, X: Matrix) -> np.ndarray:
        return np.full(X.shape[0], self.mean_)


LOGISTIC_CHUNK = 100  # lbfgs iterations between deadline checks
# Multiply-adds of one lbfgs iteration (stored entries x classes) above which the first chunk is
# short and timed, so the later ones end near the deadline: 3,000 rows x 2,000 columns x 120
# classes took 2.3 s an iteration on two busy cores (a 100-iteration chunk: minutes past a fold's
# deadline); thousands of photos' embeddings of 120 breeds are several times that.
TIMED_CHUNK_WORK = 1e8
TIMED_CHUNK = 5


class LinearModel(ClassifierBase):
    """LogisticRegression / Ridge: strong on TF-IDF and pixels, a sane reference on tables."""

    def __init__(self, spec: TargetSpec, options: ModelOptions | None = None, C: float = 1.0) -> None:
        self.spec = spec
        self.options = options or ModelOptions()
        self.C = C

    def fit(self, X: Matrix, y: np.ndarray, **_: object) -> "LinearModel":
        from sklearn.linear_model import LogisticRegression, Ridge, RidgeCV

        present = np.unique(y.astype(int)) if self.spec.is_classification else None
        if present is not None and len(present) < 2:
            self.fallback_ = ConstantModel(self.spec).fit(X, y)  # one class: nothing to separate
            return self
        self.fallback_ = None
        if self.spec.is_classification:
            self.estimator_ = LogisticRegression(C=self.C, max_iter=300 if self.options.light else 1000)
        elif X.shape[1] <= 3000 and X.shape[0] <= 20000:
            # Efficient leave-one-out choice of alpha is affordable on modest matrices only.
            X = dense_if_full(X)
            self.estimator_ = RidgeCV(alphas=np.logspace(-2, 3, 11))
        else:
            self.estimator_ = Ridge(alpha=3.0)
        target = y.astype(int) if present is not None else y
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # convergence chatter; the CV score is the judge
            if present is not None and self.options.deadline is not None:
                self._fit_until(X, target, self.options.deadline)
            else:
                self.estimator_.fit(X, target)
        return self

    def _fit_until(self, X: Matrix, y: np.ndarray, deadline: float) -> None:
        """lbfgs in chunks of iterations, warm-started, so the deadline ends it with the
        coefficients reached so far (a model that converges within the first chunk is exactly
        the one-call fit; 99 classes on a wide TF-IDF matrix can otherwise run for minutes)."""
        import time

        estimator = self.estimator_
        total = estimator.max_iter
        stored = X.nnz if sparse.issparse(X) else X.shape[0] * X.shape[1]
        work = stored * max(len(np.unique(y)), 2)
        first = TIMED_CHUNK if work > TIMED_CHUNK_WORK else LOGISTIC_CHUNK
        estimator.set_params(warm_start=True, max_iter=min(first, total))
        done = 0
        while True:
            began = time.monotonic()
            estimator.fit(X, y)
            ran = int(np.max(estimator.n_iter_))
            done += ran
            left = deadline - time.monotonic()
            if ran < estimator.max_iter or done >= total or left <= 0:
                break
            # Later chunks end near the deadline at the pace measured.
            per_iteration = (time.monotonic() - began) / max(ran, 1)
            estimator.set_params(max_iter=max(1, min(LOGISTIC_CHUNK, total - done, int(left / per_iteration))))

    def predict_proba(self, X: Matrix) -> np.ndarray:
        if self.fallback_ is not None:
            return self.fallback_.predict_proba(X)
        proba = self.estimator_.predict_proba(X)
        return _expand(proba, self.estimator_.classes_, self.spec.n_classes)

    def _values(self, X: Matrix) -> np.ndarray:
        return self.estimator_.predict(X)


class LightGBMModel(ClassifierBase):
    """Gradient boosting with early stopping on the validation split when one is given."""

    def __init__(self, spec: TargetSpec, options: ModelOptions | None = None,
                 categorical: list[int] | None = None, params: dict | None = None) -> None:
        self.spec = spec
        self.options = options or ModelOptions()
        self.categorical = categorical or []
        self.overrides = dict(params or {})

    def _params(self, n_rows: int) -> dict:
        params = {
            # Big folds converge in time only at the faster rate (1M rows: ~0.1 s a round on 2 cores).
            "learning_rate": 0.1 if self.options.light or n_rows >= BIG_ROWS else self.options.learning_rate,
            "num_leaves": 31,
            # Tiny folds (image toys, light mode) would otherwise forbid every split.
            "min_data_in_leaf": int(min(20, max(2, n_rows // 20))),
            "feature_fraction": 0.8,
            "bagging_fraction": 0.8,
            "bagging_freq": 1,
            "lambda_l2": 1.0,
            "num_threads": self.options.threads,
            "verbose": -1,
            "seed": self.options.seed,
            "deterministic": True,
            "force_col_wise": True,
        }
        params.update(lightgbm_objective(self.spec.task, self.spec.n_classes))
        overrides = dict(self.overrides)
        if "min_child_samples" in overrides:  # an alias: LightGBM warns when both spellings are set
            params["min_data_in_leaf"] = int(min(overrides.pop("min_child_samples"), max(2, n_rows // 4)))
        params.update(overrides)
        return params

    def fit(self, X: Matrix, y: np.ndarray, *, X_val: Matrix | None = None,
            y_val: np.ndarray | None = None) -> "LightGBMModel":
        import lightgbm as lgb

        self.fallback_ = None
        if self.spec.is_classification and len(np.unique(y)) < 2:
            self.fallback_ = ConstantModel(self.spec).fit(X, y)
            return self
        rounds = 50 if self.options.light else self.options.n_estimators
        train = lgb.Dataset(X, label=y, categorical_feature=self.categorical or "auto",
                            free_raw_data=False)
        callbacks, valid_sets = [], []
        if X_val is not None and y_val is not None and len(y_val):
            # Early stopping on the fold it is scored on makes CV a little optimistic; the usual
            # Kaggle trade for not wasting rows on an inner split.
            valid_sets = [lgb.Dataset(X_val, label=y_val, reference=train)]
            callbacks = [lgb.early_stopping(self.options.early_stopping_rounds, verbose=False)]
        if self.options.deadline is not None:
            callbacks.append(lightgbm_deadline(self.options.deadline))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.booster_ = lgb.train(self._params(X.shape[0]), train, num_boost_round=rounds,
                                      valid_sets=valid_sets, callbacks=callbacks)
        return self

    def _raw(self, X: Matrix) -> np.ndarray:
        iteration = self.booster_.best_iteration or None
        return np.asarray(self.booster_.predict(X, num_iteration=iteration))

    def predict_proba(self, X: Matrix) -> np.ndarray:
        if self.fallback_ is not None:
            return self.fallback_.predict_proba(X)
        raw = self._raw(X)
        if self.spec.task == "binary":
            return np.column_stack([1.0 - raw, raw])
        return raw.reshape(X.shape[0], self.spec.n_classes)

    def _values(self, X: Matrix) -> np.ndarray:
        return self._raw(X)


def lightgbm_objective(task: str, n_classes: int) -> dict:
    """LightGBM's objective for a task: binary, multiclass over `n_classes`, else regression."""
    if task == "binary":
        return {"objective": "binary"}
    if task == "multiclass":
        return {"objective": "multiclass", "num_class": n_classes}
    return {"objective": "regression"}


def lightgbm_deadline(deadline: float) -> Callable:
    """LightGBM callback: keep the trees built so far once the time budget is spent."""
    import time

    import lightgbm as lgb

    last: list[float | None] = [None]

    def callback(env: object) -> None:
        # Stop also when the next iteration, at the last one's pace, would end past the deadline
        # (one iteration grows a tree per class: 99 of them on leaf). The first call has no pace:
        # the time before it is mostly LightGBM building its Datasets, which a busy machine
        # slows enough to stop a fit after one tree.
        now = time.monotonic()
        step, last[0] = (0.0 if last[0] is None else now - last[0]), now
        if now + step > deadline:
            raise lgb.callback.EarlyStopException(env.iteration, env.evaluation_result_list)

    callback.order = 40  # after early stopping's own bookkeeping
    return callback


# ---- feature matrices: unsupervised transforms fitted on train+test rows, never on targets ----


def _text_svd(features: FeatureSet, seed: int, components: int = 32) -> tuple | None:
    """(train, test, the fitted TruncatedSVD) of the text block; fitted on train and test stacked,
    then applied, so that unseen rows get the same map (transform, not fit_transform's U·Σ)."""
    if features.text_train is None or features.text_train.shape[1] < 3:
        return None
    from sklearn.decomposition import TruncatedSVD

    stacked = sparse.vstack([features.text_train, features.text_test]).tocsr()
    k = min(components, stacked.shape[1] - 1, stacked.shape[0] - 1)
    if k < 1:
        return None
    svd = TruncatedSVD(n_components=k, random_state=seed).fit(stacked)
    reduced = svd.transform(stacked)
    return reduced[: features.n_train], reduced[features.n_train:], svd


def tree_matrices(features: FeatureSet, seed: int = 0) -> Matrices | None:
    """Tabular block (category codes kept, NaN kept) + pixels + an SVD summary of the text."""
    train, test = [features.tab_train], [features.tab_test]
    if features.image_train is not None:
        train.append(features.image_train)
        test.append(features.image_test)
    svd = _text_svd(features, seed)
    if svd is not None:
        train.append(svd[0])
        test.append(svd[1])
    X_train = np.hstack(train).astype(np.float32)
    if X_train.shape[1] == 0:
        return None
    replay = TreeReplay(svd[2] if svd is not None else None, pixels=features.image_train is not None)
    return Matrices(X_train, np.hstack(test).astype(np.float32), replay)


def scaled_dense(train: np.ndarray, test: np.ndarray, power: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Median-impute, log-compress skewed non-negative columns (or, with `power`, Yeo-Johnson
    every column towards a normal shape), standardize, add NaN flags (table_inputs.DenseScaling)."""
    _, both = fit_dense_scaling(np.vstack([train, test]), power=power)
    return both[: len(train)], both[len(train):]


def _linear_table(features: FeatureSet, power: bool = False) -> tuple[list[Matrix], list[Matrix], LinearTable]:
    kinds = features.tab_kinds
    dense_cols = [i for i, k in enumerate(kinds) if k not in (CATEGORY, ORDINAL_CODE)]
    cat_cols = [i for i, k in enumerate(kinds) if k == CATEGORY]
    return fit_linear_table(features.tab_train, features.tab_test, dense_cols, cat_cols, power=power)


def tabular_linear_blocks(features: FeatureSet, power: bool = False) -> tuple[list[Matrix], list[Matrix], LinearTable]:
    """Standardized numerics and one-hot categories (train blocks, test blocks), sparse, and the
    fitted maps that make the test blocks of unseen rows."""
    return _linear_table(features, power=power)


def linear_matrices(features: FeatureSet, seed: int = 0, power: bool = False) -> Matrices | None:
    """Standardized numerics + one-hot categories + TF-IDF + pixels, as one sparse matrix."""
    train, test, table = _linear_table(features, power=power)
    replay: LinearTable | None = table
    if features.text_train is not None:
        train.append(features.text_train)
        test.append(features.text_test)
        replay = replace(table, with_text=True)
    if features.image_train is not None:
        train.append(sparse.csr_matrix(features.image_train))
        test.append(sparse.csr_matrix(features.image_test))
        replay = replace(replay, with_pixels=True)
    if not train:
        return None
    return Matrices(sparse.hstack(train).tocsr(), sparse.hstack(test).tocsr(), replay)


def dense_numeric_columns(features: FeatureSet) -> list[int]:
    return [i for i, k in enumerate(features.tab_kinds) if k not in (CATEGORY, ORDINAL_CODE)]


def _linear_c(features: FeatureSet) -> float:
    """Sparse TF-IDF wants weak regularization (C~10 measured on spooky: log loss 0.52 vs 0.60
    at C=1); dense standardized tables are fine at the default."""
    return 10.0 if features.text_train is not None else 1.0


@dataclass(frozen=True)
class ModelCandidate:
    """A named model family with the matrix builder it reads."""

    name: str
    matrices: Callable[[FeatureSet, int], tuple | None]
    make: Callable[[TargetSpec, ModelOptions, FeatureSet], Model]


def constant_candidate() -> ModelCandidate:
    """Class frequencies or the mean: the solver's first submission, before any race family."""

    def constant_matrices(features: FeatureSet, seed: int) -> tuple:
        return np.zeros((features.n_train, 1)), np.zeros((features.n_test, 1))

    return ModelCandidate("constant", constant_matrices, lambda s, o, f: ConstantModel(s, o))
