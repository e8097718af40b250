"""The stacking level's learners (blending.py scores each out of fold and keeps the best).

Each reads a matrix of the solutions' out-of-fold predictions (log-odds for classes: they spread
out probabilities near 0 and 1, where ranking models differ most) and follows scikit-learn's
fit/predict discipline, predicting in the solutions' layout: (n,) for regression and binary
(P(class 1)), (n, K) probabilities for multiclass.

- `LinearStacker`: logistic regression (ridge for regression); it can sharpen and re-weigh per
  class, which a weighted average cannot.
- `MLPBlender`: a small MLP over the same inputs.
- `BoostedStacker`: LightGBM over the predictions beside the table's own columns, as AutoGluon's
  second layer reads the original features too. The predictions say what each model thinks; the
  columns say where each model is to be trusted (spooky-author-identification, out of fold: the
  logistic stacker 0.304; boosting over the same predictions and a dozen counts of punctuation
  and length 0.296; on the held-out rows 0.275 and 0.258).
"""

from __future__ import annotations

import warnings

import numpy as np

from agentk.core.artifacts import Task
from solve_pipeline.base.baseline_models import lightgbm_deadline, lightgbm_objective

_EPS = 1e-7
# The boosted stacker grows a tree per class each round, over (K - 1) columns per solution: beyond
# this many classes (leaf-classification's 99) it costs minutes for what the linear stacker does.
BOOSTED_MAX_CLASSES = 20
# ... and it reads the table's columns only up to this many (a wide table's columns are the first
# layer's business; the second layer wants the few that say where each model errs).
BOOSTED_MAX_TABLE_COLUMNS = 100
BOOSTED_ROUNDS = 2000
BOOSTED_EARLY_STOP = 50
BOOSTED_INNER_SHARE = 0.15  # rows each fit holds back to stop boosting early


def stack_features(preds: list[np.ndarray], task: Task) -> np.ndarray:
    """The solutions' predictions side by side: log-odds for classes, values for regression."""
    columns = [p[:, 1:] if task == "multiclass" else p[:, None] for p in preds]
    features = np.hstack(columns)
    if task != "regression":
        clipped = np.clip(features, _EPS, 1 - _EPS)
        features = np.log(clipped / (1 - clipped))
    return features


def _full_proba(proba: np.ndarray, classes: np.ndarray, n_classes: int, task: Task) -> np.ndarray:
    full = np.zeros((proba.shape[0], n_classes))
    full[:, classes.astype(int)] = proba  # a fold may lack a class
    return full[:, 1] if task == "binary" else full


class LinearStacker:
    """Logistic regression (ridge for regression) over the solutions' log-odds."""

    def __init__(self, task: Task, n_classes: int) -> None:
        self.task, self.n_classes = task, n_classes

    def fit(self, features: np.ndarray, y: np.ndarray) -> LinearStacker:
        from sklearn.linear_model import LogisticRegression, RidgeCV
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if self.task == "regression":
                self.model_ = RidgeCV(alphas=np.logspace(-3, 3, 13)).fit(features, y)
            else:
                # Standardized: clipped log-odds span about -16..16, and on them L-BFGS ran into its
                # 1000 iterations without converging (six times the time of the ~80 it needs scaled,
                # for the same log loss on playground-series-s3e5's six classes).
                self.model_ = make_pipeline(StandardScaler(), LogisticRegression(C=1.0, max_iter=1000))
                self.model_.fit(features, y.astype(int))
        return self

    def predict(self, features: np.ndarray) -> np.ndarray:
        if self.task == "regression":
            return np.asarray(self.model_.predict(features), dtype=np.float64)
        return _full_proba(self.model_.predict_proba(features), self.model_.classes_, self.n_classes, self.task)


class MLPBlender:
    """A small MLP over the solutions' predictions."""

    max_iter = 400

    def __init__(self, task: Task, n_classes: int, seed: int, max_iter: int | None = None) -> None:
        self.task, self.n_classes, self.seed = task, n_classes, seed
        if max_iter is not None:
            self.max_iter = max_iter

    def fit(self, features: np.ndarray, y: np.ndarray) -> MLPBlender:
        from sklearn.compose import TransformedTargetRegressor
        from sklearn.neural_network import MLPClassifier, MLPRegressor
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler

        net_args = {"hidden_layer_sizes": (16,), "alpha": 1e-2, "max_iter": self.max_iter,
                    "random_state": self.seed}
        if self.task == "regression":
            net = TransformedTargetRegressor(MLPRegressor(**net_args), transformer=StandardScaler())
        else:
            net = MLPClassifier(**net_args)
        self.model_ = make_pipeline(StandardScaler(), net)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # convergence warnings on tiny folds
            self.model_.fit(features, y)
        return self

    def predict(self, features: np.ndarray) -> np.ndarray:
        if self.task == "regression":
            return np.asarray(self.model_.predict(features), dtype=np.float64)
        return _full_proba(self.model_.predict_proba(features), self.model_.classes_, self.n_classes, self.task)


def boosted_applies(task: Task, n_classes: int) -> bool:
    return task == "regression" or n_classes <= BOOSTED_MAX_CLASSES


class BoostedStacker:
    """LightGBM over the solutions' predictions and the table's columns, shallow and slow-learning,
    stopped early on a share of its own training rows. Past `deadline` (time.monotonic()) it keeps
    the trees it has."""

    def __init__(self, task: Task, n_classes: int, seed: int, deadline: float | None = None,
                 threads: int = 2) -> None:
        self.task, self.n_classes, self.seed = task, n_classes, seed
        self.deadline, self.threads = deadline, threads

    def _params(self, n_rows: int) -> dict:
        params = {"learning_rate": 0.03, "num_leaves": 8, "min_data_in_leaf": int(min(40, max(2, n_rows // 20))),
                  "feature_fraction": 0.6, "bagging_fraction": 0.8, "bagging_freq": 1, "lambda_l2": 1.0,
                  "num_threads": self.threads, "verbose": -1, "seed": self.seed, "deterministic": True,
                  "force_col_wise": True}
        return {**params, **lightgbm_objective(self.task, self.n_classes)}

    def fit(self, features: np.ndarray, y: np.ndarray) -> BoostedStacker:
        import lightgbm as lgb


        order = np.random.default_rng(self.seed).permutation(len(y))
        held = max(1, int(len(y) * BOOSTED_INNER_SHARE))
        inner, rest = order[:held], order[held:]
        train = lgb.Dataset(features[rest], label=y[rest], free_raw_data=False)
        valid = lgb.Dataset(features[inner], label=y[inner], reference=train)
        callbacks = [lgb.early_stopping(BOOSTED_EARLY_STOP, verbose=False)]
        if self.deadline is not None:
            callbacks.append(lightgbm_deadline(self.deadline))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.booster_ = lgb.train(self._params(len(rest)), train, num_boost_round=BOOSTED_ROUNDS,
                                      valid_sets=[valid], callbacks=callbacks)
        return self

    def predict(self, features: np.ndarray) -> np.ndarray:
        raw = np.asarray(self.booster_.predict(features, num_iteration=self.booster_.best_iteration or None))
        if self.task == "multiclass":
            return raw.reshape(features.shape[0], self.n_classes)
        return raw


def table_columns(train: np.ndarray | None, test: np.ndarray | None) -> tuple[np.ndarray, np.ndarray] | None:
    """The table's columns for the boosted stacker, or None when there are none, or too many (the
    blender itself checks that their rows line up with the predictions')."""
    if train is None or test is None or train.ndim != 2 or not 0 < train.shape[1] <= BOOSTED_MAX_TABLE_COLUMNS:
        return None
    return np.asarray(train, dtype=np.float64), np.asarray(test, dtype=np.float64)
