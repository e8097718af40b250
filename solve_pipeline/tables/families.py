"""More model families for the tabular race: CatBoost and two scikit-learn forests.

Each follows the protocol of baseline_models: `fit(X, y, X_val=, y_val=)`, `predict_proba(X)` with
all K class columns, `predict(X)`; a one-class training fold falls back to ConstantModel, and
`options.deadline` ends training early while keeping what was built.
"""

from __future__ import annotations

import time

import numpy as np
from sklearn import ensemble

from solve_pipeline.base.baseline_models import (
    ConstantModel,
    Matrix,
    ModelOptions,
    ClassifierBase,
    _expand,
)
from solve_pipeline.base.setup_modules import TargetSpec


def _dense(X: Matrix) -> np.ndarray:
    return X.toarray() if hasattr(X, "toarray") else np.asarray(X)


class _Deadline:
    """CatBoost callback: returning False after an iteration ends training with the trees so far.

    An iteration cannot be interrupted, and with many classes one is dear (99 classes, depth 6:
    ~5 s on 2 cores for a few hundred rows), so training also stops when the next iteration, at
    the pace of the last one, would end past the deadline."""

    def __init__(self, deadline: float) -> None:
        self.deadline = deadline
        self.last = time.monotonic()

    def after_iteration(self, info: object) -> bool:
        now = time.monotonic()
        step, self.last = now - self.last, now
        return now + step < self.deadline


class CatBoostModel(ClassifierBase):
    """CatBoost with native categorical handling and early stopping on the validation split."""

    def __init__(self, spec: TargetSpec, options: ModelOptions | None = None,
                 categorical: list[int] | None = None, params: dict | None = None) -> None:
        self.spec = spec
        self.options = options or ModelOptions()
        self.categorical = list(categorical or [])
        self.params = dict(params or {})

    def _params(self, n_classes_present: int) -> dict:
        light = self.options.light
        if not self.spec.is_classification:
            loss = "RMSE"
        else:
            loss = "Logloss" if n_classes_present == 2 else "MultiClass"
        params = {
            "iterations": 50 if light else self.options.n_estimators,
            "learning_rate": 0.15 if light else 0.08,
            "depth": 6,
            "l2_leaf_reg": 3.0,
            # Measured on house prices (40 categorical columns, one fold): feature-combination CTRs
            # cost 11 s for no gain; without them, and one-hot for small categories, 1.1 s and a
            # better RMSE (0.125 vs 0.130).
            "max_ctr_complexity": 1,
            "one_hot_max_size": 10,
            "loss_function": loss,
            "thread_count": self.options.threads,
            "random_seed": self.options.seed,
            "verbose": 0,
            # Never leave a catboost_info folder behind in the working directory.
            "allow_writing_files": False,
        }
        params.update(self.params)
        return params

    def _pool(self, X: Matrix, y: np.ndarray | None = None):
        import pandas as pd
        from catboost import Pool

        frame = pd.DataFrame(_dense(X))
        for j in self.categorical:
            # CatBoost refuses float categories: integer codes as strings, missing as its own level.
            codes = frame[j].to_numpy(dtype=np.float64)
            labels = np.where(np.isnan(codes), "nan", np.nan_to_num(codes).astype(np.int64).astype(str))
            frame[j] = labels
        return Pool(frame, label=y, cat_features=self.categorical or None)

    def fit(self, X: Matrix, y: np.ndarray, *, X_val: Matrix | None = None,
            y_val: np.ndarray | None = None) -> CatBoostModel:
        from catboost import CatBoostClassifier, CatBoostRegressor

        self.fallback_ = None
        if self.spec.is_classification:
            self.present_ = np.unique(y.astype(int))
            if len(self.present_) < 2:
                self.fallback_ = ConstantModel(self.spec).fit(X, y)
                return self
            # Train on the classes this fold has; predict_proba spreads them over all K columns.
            y = np.searchsorted(self.present_, y.astype(int))
            if X_val is not None and y_val is not None:
                known = np.isin(y_val.astype(int), self.present_)
                X_val, y_val = _dense(X_val)[known], np.searchsorted(self.present_, y_val[known].astype(int))
            estimator = CatBoostClassifier(**self._params(len(self.present_)))
        else:
            estimator = CatBoostRegressor(**self._params(0))
        fit_kwargs: dict = {}
        if X_val is not None and y_val is not None and len(y_val):
            fit_kwargs.update(eval_set=self._pool(X_val, y_val), use_best_model=True,
                              early_stopping_rounds=self.options.early_stopping_rounds)
        if self.options.deadline is not None:
            fit_kwargs["callbacks"] = [_Deadline(self.options.deadline)]
        estimator.fit(self._pool(X, y), **fit_kwargs)
        self.estimator_ = estimator
        return self

    def predict_proba(self, X: Matrix) -> np.ndarray:
        if self.fallback_ is not None:
            return self.fallback_.predict_proba(X)
        proba = self.estimator_.predict_proba(self._pool(X))
        return _expand(proba, self.present_, self.spec.n_classes)

    def _values(self, X: Matrix) -> np.ndarray:
        return np.asarray(self.estimator_.predict(self._pool(X)), dtype=np.float64)


class _ForestModel(ClassifierBase):
    """A scikit-learn forest (missing values handled natively by the trees, sklearn >= 1.6)."""

    classifier: type
    regressor: type
    min_samples_leaf: int
    chunk = 25
    first_chunk = 5

    def __init__(self, spec: TargetSpec, options: ModelOptions | None = None,
                 params: dict | None = None) -> None:
        self.spec = spec
        self.options = options or ModelOptions()
        self.params = dict(params or {})

    def _estimator(self, n_rows: int):
        classify = self.spec.is_classification
        params = {
            "n_estimators": 30 if self.options.light else 300,
            # Single-row leaves give 0/1 probabilities that log loss punishes (titanic, 3 seeds:
            # RF 0.50 at 1 row vs 0.42 at 3, ExtraTrees 0.62 vs 0.42 at 2; house RMSE flat).
            # Tiny folds must still be able to split.
            "min_samples_leaf": int(min(self.min_samples_leaf, max(1, n_rows // 50))),
            "max_features": "sqrt" if classify else 0.5,
            "n_jobs": self.options.threads,
            "random_state": self.options.seed,
        }
        params.update(self.params)
        return (self.classifier if classify else self.regressor)(**params)

    def fit(self, X: Matrix, y: np.ndarray, **_: object) -> _ForestModel:
        self.fallback_ = None
        if self.spec.is_classification:
            y = y.astype(int)
            if len(np.unique(y)) < 2:
                self.fallback_ = ConstantModel(self.spec).fit(X, y)
                return self
        X = _dense(X)
        estimator = self._estimator(X.shape[0])
        target = estimator.n_estimators
        deadline = self.options.deadline
        # Grow in chunks so a spent deadline keeps the trees built so far (the first chunk always).
        # With a deadline the first chunk is small and later ones are sized by the measured time
        # per tree, so a chunk never runs far past it (big data: 25 trees can take minutes).
        # Warm-started forests draw the same per-tree seeds whatever the chunks: same trees.
        estimator.set_params(warm_start=True, n_estimators=0)
        per_tree: float | None = None
        while estimator.n_estimators < target:
            step = self.chunk if deadline is None else self.first_chunk
            if deadline is not None and per_tree is not None:
                step = min(self.chunk, int((deadline - time.monotonic()) / per_tree))
                if step < 1:
                    break
            built = estimator.n_estimators
            began = time.monotonic()
            estimator.set_params(n_estimators=min(target, built + step))
            estimator.fit(X, y)
            per_tree = (time.monotonic() - began) / max(estimator.n_estimators - built, 1)
            if deadline is not None and time.monotonic() > deadline:
                break
        self.estimator_ = estimator
        return self

    def predict_proba(self, X: Matrix) -> np.ndarray:
        if self.fallback_ is not None:
            return self.fallback_.predict_proba(X)
        proba = self.estimator_.predict_proba(_dense(X))
        return _expand(proba, self.estimator_.classes_, self.spec.n_classes)

    def _values(self, X: Matrix) -> np.ndarray:
        return self.estimator_.predict(_dense(X))


class RandomForestModel(_ForestModel):
    classifier = ensemble.RandomForestClassifier
    regressor = ensemble.RandomForestRegressor

    min_samples_leaf = 3


class ExtraTreesModel(_ForestModel):
    classifier = ensemble.ExtraTreesClassifier
    regressor = ensemble.ExtraTreesRegressor

    min_samples_leaf = 2


class NaiveBayesModel(ClassifierBase):
    """Multinomial naive Bayes over TF-IDF: the classic text-classification partner of the
    logistic model (spooky-author-identification, word 1-2 grams: log loss 0.38 out of fold in
    under a second, against the logistic model's 0.41 in a minute), and a diverse one to blend.
    `complement`: complement naive Bayes, which weighs each class by the others' counts and makes
    other errors (on spooky's word counts it lowers a stack of four text models by 0.002)."""

    def __init__(self, spec: TargetSpec, options: ModelOptions | None = None, alpha: float = 0.05,
                 complement: bool = False) -> None:
        self.spec = spec
        self.options = options or ModelOptions()
        self.alpha = alpha
        self.complement = complement

    def fit(self, X: Matrix, y: np.ndarray, **_: object) -> NaiveBayesModel:
        from sklearn.naive_bayes import ComplementNB, MultinomialNB

        y = y.astype(int)
        self.fallback_ = ConstantModel(self.spec).fit(X, y) if len(np.unique(y)) < 2 else None
        if self.fallback_ is None:
            self.estimator_ = (ComplementNB if self.complement else MultinomialNB)(alpha=self.alpha).fit(X, y)
        return self

    def predict_proba(self, X: Matrix) -> np.ndarray:
        if self.fallback_ is not None:
            return self.fallback_.predict_proba(X)
        return _expand(self.estimator_.predict_proba(X), self.estimator_.classes_, self.spec.n_classes)


class NBSVMModel(ClassifierBase):
    """NB-SVM (Wang and Manning, 2012) in its logistic form: per class, word-presence features
    scaled by their naive Bayes log-count ratio, then a logistic model one class against the rest;
    the classes' scores are normalised to probabilities. Between naive Bayes and the logistic
    model, and a strong stacking partner of both (spooky: a stack of seven text models goes from
    0.297 to 0.292 out of fold with it)."""

    def __init__(self, spec: TargetSpec, options: ModelOptions | None = None, C: float = 4.0) -> None:
        self.spec = spec
        self.options = options or ModelOptions()
        self.C = C

    def fit(self, X: Matrix, y: np.ndarray, **_: object) -> NBSVMModel:
        import warnings

        from sklearn.linear_model import LogisticRegression

        y = y.astype(int)
        present = np.unique(y)
        self.fallback_ = ConstantModel(self.spec).fit(X, y) if len(present) < 2 else None
        if self.fallback_ is not None:
            return self
        # Two classes need one model (its probability of the second class); more need one each.
        self.classes_ = present[1:] if len(present) == 2 else present
        self.models_: list[tuple[np.ndarray, object]] = []
        for k in self.classes_:
            positive = y == k
            # Each word's presence rate in the class against the rest (add-one smoothed).
            p = (np.asarray(X[positive].sum(axis=0)).ravel() + 1.0) / (positive.sum() + 1.0)
            q = (np.asarray(X[~positive].sum(axis=0)).ravel() + 1.0) / ((~positive).sum() + 1.0)
            ratio = np.log(p / q).astype(np.float32)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # convergence chatter; the CV score is the judge
                # No deadline inside: a model missing a class is no model (the family is capped
                # at NBSVM_MAX_CLASSES classes, each a few seconds on spooky's 14,000 texts).
                model = LogisticRegression(C=self.C, max_iter=1000).fit(_scaled(X, ratio), positive)
            self.models_.append((ratio, model))
        self.present_ = present
        return self

    def predict_proba(self, X: Matrix) -> np.ndarray:
        if self.fallback_ is not None:
            return self.fallback_.predict_proba(X)
        scores = np.column_stack([model.predict_proba(_scaled(X, ratio))[:, 1] for ratio, model in self.models_])
        if len(self.present_) == 2:
            proba = np.column_stack([1.0 - scores[:, 0], scores[:, 0]])
        else:
            proba = np.clip(scores, 1e-9, None)
            proba /= proba.sum(axis=1, keepdims=True)
        return _expand(proba, self.present_, self.spec.n_classes)


def _scaled(X: Matrix, ratio: np.ndarray) -> Matrix:
    return X.multiply(ratio).tocsr() if hasattr(X, "multiply") else np.asarray(X) * ratio
