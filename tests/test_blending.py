"""Blending tool on real data: OOF predictions of diverse models from cross_val_predict."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import load_breast_cancer, load_diabetes
from sklearn.ensemble import RandomForestClassifier, RandomForestRegressor
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.metrics import log_loss, roc_auc_score
from sklearn.model_selection import (
    KFold,
    StratifiedKFold,
    cross_val_predict,
    train_test_split,
)
from sklearn.naive_bayes import GaussianNB
from sklearn.neighbors import KNeighborsClassifier, KNeighborsRegressor
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from solve_pipeline.blend.blending import Solution, blend, fit_weights

pytestmark = pytest.mark.integration

S3E5 = Path("/work/shared/competitions/playground-series-s3e5/data/train.csv")


def _solutions(models: dict, X: np.ndarray, y: np.ndarray, X_test: np.ndarray,
               task: str) -> list[Solution]:
    cv = KFold(5, shuffle=True, random_state=0) if task == "regression" else \
        StratifiedKFold(5, shuffle=True, random_state=0)
    out = []
    for name, model in models.items():
        if task == "regression":
            oof = cross_val_predict(model, X, y, cv=cv)
            test = model.fit(X, y).predict(X_test)
        else:
            oof = cross_val_predict(model, X, y, cv=cv, method="predict_proba")
            test = model.fit(X, y).predict_proba(X_test)
            if task == "binary":
                oof, test = oof[:, 1], test[:, 1]
        out.append(Solution(name, oof, test))
    return out


@pytest.fixture(scope="module")
def cancer() -> tuple[list[Solution], np.ndarray, int]:
    X, y = load_breast_cancer(return_X_y=True)
    X, X_test, y, _ = train_test_split(X, y, test_size=0.2, random_state=0, stratify=y)
    models = {
        "logreg": make_pipeline(StandardScaler(), LogisticRegression(C=0.05, max_iter=500)),
        "nb": GaussianNB(),
        "forest": RandomForestClassifier(n_estimators=60, max_depth=4, random_state=0),
        "knn": make_pipeline(StandardScaler(), KNeighborsClassifier(15)),
    }
    return _solutions(models, X, y, X_test, "binary"), y, len(X_test)


def test_binary_blend_not_worse_than_best_single(cancer) -> None:
    solutions, y, n_test = cancer
    result = blend(solutions, y, "binary", roc_auc_score, higher_is_better=True, seed=0)
    best_single = max(result.single_scores.values())
    print(f"breast cancer AUC: singles {result.single_scores}, blenders {result.blend_scores}, "
          f"chosen {result.method} {result.score:.4f}")
    assert set(result.single_scores) == {s.name for s in solutions}
    assert set(result.blend_scores) == {"weighted", "stack", "mlp", "boosted"}
    assert result.method == "best_single" or result.score > best_single
    assert result.score >= best_single
    assert result.test.shape == (n_test,) and result.oof.shape == y.shape
    assert np.all((result.test >= 0) & (result.test <= 1))
    weights = np.array(list(result.weights.values()))
    assert np.all(weights >= 0) and weights.sum() == pytest.approx(1.0)


def test_fewer_than_blend_after_is_best_single(cancer) -> None:
    solutions, y, _ = cancer
    result = blend(solutions[:2], y, "binary", roc_auc_score, higher_is_better=True,
                   blend_after=3)
    assert result.method == "best_single" and result.weights is None
    best = max(solutions[:2], key=lambda s: roc_auc_score(y, s.oof))
    assert result.score == pytest.approx(roc_auc_score(y, best.oof))
    np.testing.assert_array_equal(result.test, best.test)


def test_bad_solution_gets_no_weight(cancer) -> None:
    solutions, y, n_test = cancer
    rng = np.random.default_rng(0)
    noise = Solution("noise", rng.uniform(size=len(y)), rng.uniform(size=n_test))
    result = blend(solutions[:3] + [noise], y, "binary", roc_auc_score,
                   higher_is_better=True)
    assert result.weights["noise"] < 0.02
    assert result.method != "best_single" or result.score >= max(result.single_scores.values())
    direct = fit_weights([s.oof for s in solutions[:3]] + [noise.oof], y, "binary")
    assert direct[-1] < 0.02 and direct.sum() == pytest.approx(1.0)


def test_regression_blend_lower_is_better() -> None:
    X, y = load_diabetes(return_X_y=True)
    X, X_test, y, _ = train_test_split(X, y, test_size=0.2, random_state=0)
    models = {
        "ridge": Ridge(alpha=1.0),
        "forest": RandomForestRegressor(n_estimators=60, max_depth=5, random_state=0),
        "knn": make_pipeline(StandardScaler(), KNeighborsRegressor(20)),
    }
    solutions = _solutions(models, X, y, X_test, "regression")

    def rmse(y_true: np.ndarray, pred: np.ndarray) -> float:
        return float(np.sqrt(np.mean((y_true - pred) ** 2)))

    result = blend(solutions, y, "regression", rmse, higher_is_better=False, seed=0)
    print(f"diabetes RMSE: singles {result.single_scores}, blenders {result.blend_scores}, "
          f"chosen {result.method}")
    assert result.score <= min(result.single_scores.values())
    assert result.test.shape == (len(X_test),)
    assert rmse(y, result.oof) == pytest.approx(result.score)


@pytest.mark.skipif(not S3E5.exists(), reason="s3e5 data not available")
def test_multiclass_blend_on_s3e5() -> None:
    frame = pd.read_csv(S3E5)
    # Every class kept, the common ones cut to 150 rows: the blenders (the MLP's 400 epochs above
    # all) cost in proportion to the rows, and a few hundred still make a six-class blend.
    frame = frame.sample(frac=1.0, random_state=0).groupby("quality").head(150)
    classes = np.sort(frame["quality"].unique())
    y_all = np.searchsorted(classes, frame["quality"].to_numpy())
    X_all = frame.drop(columns=["Id", "quality"], errors="ignore").to_numpy(float)
    X, X_test, y, _ = train_test_split(X_all, y_all, test_size=0.2, random_state=0, stratify=y_all)
    models = {
        "logreg": make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000)),
        "forest": RandomForestClassifier(n_estimators=60, max_depth=6, random_state=0),
        "knn": make_pipeline(StandardScaler(), KNeighborsClassifier(25)),
    }
    solutions = _solutions(models, X, y, X_test, "multiclass")
    k = len(classes)

    def mlogloss(y_true: np.ndarray, proba: np.ndarray) -> float:
        proba = np.clip(proba, 1e-7, 1)
        return float(log_loss(y_true, proba / proba.sum(axis=1, keepdims=True),
                              labels=np.arange(k)))

    result = blend(solutions, y, "multiclass", mlogloss, higher_is_better=False, seed=0)
    print(f"s3e5 log loss: singles {result.single_scores}, blenders {result.blend_scores}, "
          f"chosen {result.method}")
    assert result.score <= min(result.single_scores.values())
    assert result.test.shape == (len(X_test), k) and result.oof.shape == (len(y), k)
    np.testing.assert_allclose(result.test.sum(axis=1), 1.0, atol=1e-6)


def test_mismatched_shapes_rejected(cancer) -> None:
    solutions, y, _ = cancer
    broken = Solution("short", solutions[0].oof[:-1], solutions[0].test)
    with pytest.raises(ValueError):
        blend(solutions + [broken], y, "binary", roc_auc_score, higher_is_better=True)


def test_blender_is_scored_out_of_fold() -> None:
    """On pure noise an in-sample MLP looks good; the nested score must stay near chance."""
    from solve_pipeline.blend.stackers import MLPBlender, stack_features

    rng = np.random.default_rng(1)
    y = rng.integers(0, 2, size=150)
    noise = [Solution(f"noise{i}", rng.uniform(size=150), rng.uniform(size=30))
             for i in range(10)]
    features = stack_features([s.oof for s in noise], "binary")
    in_sample = roc_auc_score(y, MLPBlender("binary", 2, 0).fit(features, y).predict(features))
    result = blend(noise, y, "binary", roc_auc_score, higher_is_better=True, seed=0)
    assert in_sample > 0.75
    assert max(result.blend_scores.values()) < 0.62
    assert result.test.shape == (30,)



def test_boosted_stacker_reads_the_table_to_know_whom_to_trust() -> None:
    """Two models, each right on its own half of the rows, and a table column that says which half
    a row is in: only a stacker that reads the column can take the better one row by row."""
    rng = np.random.default_rng(5)
    n, n_test = 900, 300
    side = rng.integers(0, 2, size=n + n_test)
    truth = rng.integers(0, 3, size=n + n_test)

    def guesses(good_side: int) -> np.ndarray:
        # As sure on its bad half as on its good one, but of a class drawn at random there.
        # Right four times in five on its good half (a floor that stops boosting early).
        right = (side == good_side) & (rng.uniform(size=n + n_test) < 0.8)
        drawn = np.where(right, truth, rng.integers(0, 3, size=n + n_test))
        sure = np.full((n + n_test, 3), 0.05)
        sure[np.arange(n + n_test), drawn] = 0.9
        return sure

    a, b = guesses(0), guesses(1)
    solutions = [Solution("a", a[:n], a[n:]), Solution("b", b[:n], b[n:]), Solution("mean", (a[:n] + b[:n]) / 2,
                                                                                    (a[n:] + b[n:]) / 2)]
    table = side[:n, None].astype(float), side[n:, None].astype(float)

    def mlogloss(y_true: np.ndarray, proba: np.ndarray) -> float:
        return float(log_loss(y_true, np.clip(proba, 1e-7, 1), labels=np.arange(3)))

    y = truth[:n]
    with_table = blend(solutions, y, "multiclass", mlogloss, higher_is_better=False, seed=0, table=table)
    without = blend(solutions, y, "multiclass", mlogloss, higher_is_better=False, seed=0)
    print(f"blenders with the table {with_table.blend_scores}, without {without.blend_scores}")
    assert with_table.method == "boosted"
    assert with_table.blend_scores["boosted"] < 0.7 * without.blend_scores["boosted"]
    assert with_table.blend_scores["boosted"] < 0.7 * min(without.blend_scores.values())
    assert mlogloss(truth[n:], with_table.test) < 0.8 * mlogloss(truth[n:], without.test)
    # Rows that do not line up with the predictions are not read.
    short = blend(solutions, y, "multiclass", mlogloss, higher_is_better=False, seed=0,
                  table=(table[0][:-1], table[1]))
    assert short.blend_scores["boosted"] == pytest.approx(without.blend_scores["boosted"])


def test_boosted_stacker_stays_out_of_many_classes() -> None:
    rng = np.random.default_rng(2)
    k = 30
    y = np.arange(300) % k
    solutions = [Solution(f"s{i}", rng.dirichlet(np.ones(k), size=300), rng.dirichlet(np.ones(k), size=20))
                 for i in range(3)]
    # Two nested folds: whether the boosted stacker applies does not depend on them, and the other
    # blenders' fits on 30 classes cost several times as much at five.
    result = blend(solutions, y, "multiclass", lambda t, p: float(log_loss(t, np.clip(p, 1e-7, 1), labels=np.arange(k))),
                   higher_is_better=False, seed=0, folds=2)
    assert "boosted" not in result.blend_scores and "boosted" not in result.dropped
