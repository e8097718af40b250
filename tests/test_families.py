"""CatBoost / ExtraTrees / RandomForest families on real competition data (titanic, house prices,
leaf classification): they beat a constant out of sample, keep all K probability columns, stop at
the deadline and leave no files behind."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import accuracy_score, log_loss

from solve_pipeline.base.baseline_models import ConstantModel, ModelOptions
from solve_pipeline.tables.families import (
    CatBoostModel,
    ExtraTreesModel,
    RandomForestModel,
)
from solve_pipeline.race.registry import CATBOOST_SPACE
from solve_pipeline.base.setup_modules import TargetSpec

pytestmark = pytest.mark.integration

COMPETITIONS = Path(__file__).resolve().parents[2] / "shared" / "competitions"
LIGHT = ModelOptions(seed=0, light=True, threads=2)
FAMILIES = ["catboost", "extra_trees", "random_forest"]


def _codes(values: pd.Series) -> np.ndarray:
    codes, _ = pd.factorize(values)
    return np.where(codes < 0, np.nan, codes).astype(np.float32)


def _titanic() -> tuple[np.ndarray, np.ndarray, list[int]]:
    frame = pd.read_csv(COMPETITIONS / "titanic" / "data" / "train.csv")
    X = np.column_stack([
        frame["Pclass"], _codes(frame["Sex"]), frame["Age"], frame["SibSp"], frame["Parch"],
        frame["Fare"], _codes(frame["Embarked"]),
    ]).astype(np.float32)
    return X, frame["Survived"].to_numpy(), [1, 6]


def _house() -> tuple[np.ndarray, np.ndarray, list[int]]:
    frame = pd.read_csv(COMPETITIONS / "house-prices-advanced-regression-techniques" / "data" / "train.csv")
    X = np.column_stack([
        frame["OverallQual"], frame["GrLivArea"], frame["GarageCars"], frame["TotalBsmtSF"],
        frame["YearBuilt"], frame["LotFrontage"], _codes(frame["Neighborhood"]),
        _codes(frame["MSZoning"]), _codes(frame["KitchenQual"]),
    ]).astype(np.float32)
    return X, np.log(frame["SalePrice"].to_numpy()), [6, 7, 8]


def _leaf() -> tuple[np.ndarray, np.ndarray, list[str]]:
    frame = pd.read_csv(COMPETITIONS / "leaf-classification" / "data" / "train.csv")
    species = sorted(frame["species"].unique())
    y = frame["species"].map({name: i for i, name in enumerate(species)}).to_numpy()
    columns = [f"margin{i}" for i in range(1, 11)] + [f"shape{i}" for i in range(1, 11)] + \
        [f"texture{i}" for i in range(1, 11)]
    return frame[columns].to_numpy(np.float32), y, species


def _make(name: str, spec: TargetSpec, options: ModelOptions, categorical: list[int]):
    if name == "catboost":
        return CatBoostModel(spec, options, categorical=categorical)
    if name == "extra_trees":
        return ExtraTreesModel(spec, options)
    return RandomForestModel(spec, options)


def _log_loss(y: np.ndarray, proba: np.ndarray) -> float:
    # Forests may give exact zeros; floor them the way a Kaggle scorer does.
    proba = np.clip(proba, 1e-6, 1.0)
    return log_loss(y, proba / proba.sum(axis=1, keepdims=True), labels=list(range(proba.shape[1])))


def _split(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    order = np.random.default_rng(seed).permutation(n)
    cut = int(n * 0.6)
    return order[:cut], order[cut:]


TITANIC_SPEC = TargetSpec(column="Survived", task="binary", classes=[0, 1])
HOUSE_SPEC = TargetSpec(column="SalePrice", task="regression")


@pytest.mark.parametrize("name", FAMILIES)
def test_beats_constant_on_titanic(name: str) -> None:
    X, y, categorical = _titanic()
    train, held = _split(len(y))
    model = _make(name, TITANIC_SPEC, LIGHT, categorical).fit(X[train], y[train])
    proba = model.predict_proba(X[held])
    floor = ConstantModel(TITANIC_SPEC).fit(X[train], y[train]).predict_proba(X[held])

    assert proba.shape == (len(held), 2)
    assert np.allclose(proba.sum(axis=1), 1.0)
    assert _log_loss(y[held], proba) < _log_loss(y[held], floor) - 0.1
    assert accuracy_score(y[held], model.predict(X[held])) > accuracy_score(y[held], floor.argmax(1)) + 0.1


@pytest.mark.parametrize("name", FAMILIES)
def test_beats_constant_on_house_prices(name: str) -> None:
    X, y, categorical = _house()
    train, held = _split(len(y))
    model = _make(name, HOUSE_SPEC, LIGHT, categorical).fit(X[train], y[train])
    rmse = np.sqrt(np.mean((model.predict(X[held]) - y[held]) ** 2))
    floor = np.sqrt(np.mean((y[train].mean() - y[held]) ** 2))
    assert rmse < 0.5 * floor, (rmse, floor)


def test_catboost_early_stops_on_validation_and_keeps_categories() -> None:
    X, y, categorical = _titanic()
    train, held = _split(len(y))
    options = ModelOptions(seed=0, n_estimators=2000, early_stopping_rounds=30, learning_rate=0.1)
    model = CatBoostModel(TITANIC_SPEC, options, categorical=categorical)
    model.fit(X[train], y[train], X_val=X[held], y_val=y[held])

    assert model.estimator_.get_cat_feature_indices() == categorical
    assert model.estimator_.tree_count_ < 2000  # use_best_model trimmed to the best iteration
    assert _log_loss(y[held], model.predict_proba(X[held])) < 0.5


@pytest.mark.parametrize("name", FAMILIES)
def test_all_classes_kept_when_the_fold_lacks_some(name: str) -> None:
    X, y, species = _leaf()
    spec = TargetSpec(column="species", task="multiclass", classes=species)
    for n_present in (2, 6):  # two present classes exercise CatBoost's binary loss path
        fold = np.flatnonzero(y < n_present)
        model = _make(name, spec, LIGHT, []).fit(X[fold], y[fold], X_val=X[:50], y_val=y[:50])
        proba = model.predict_proba(X[:40])

        assert proba.shape == (40, 99)
        assert np.allclose(proba.sum(axis=1), 1.0)
        assert np.all(proba[:, n_present:] == 0)
        assert np.mean(model.predict(X[fold]) == y[fold]) > 0.8


@pytest.mark.parametrize("name", FAMILIES)
def test_one_class_fold_falls_back_to_constant(name: str) -> None:
    X, y, categorical = _titanic()
    fold = np.flatnonzero(y == 1)[:100]
    model = _make(name, TITANIC_SPEC, LIGHT, categorical).fit(X[fold], y[fold])
    assert np.allclose(model.predict_proba(X[:5]), [[0.0, 1.0]] * 5)


@pytest.mark.parametrize("name", FAMILIES)
def test_past_deadline_still_yields_a_usable_model(name: str) -> None:
    X, y, categorical = _titanic()
    options = ModelOptions(seed=0, n_estimators=2000, deadline=time.monotonic() - 1.0)
    started = time.monotonic()
    model = _make(name, TITANIC_SPEC, options, categorical).fit(X, y)
    elapsed = time.monotonic() - started

    proba = model.predict_proba(X)
    assert np.allclose(proba.sum(axis=1), 1.0) and np.isfinite(proba).all()
    if name == "catboost":
        assert model.estimator_.tree_count_ == 1
    else:
        assert len(model.estimator_.estimators_) == model.first_chunk < 300
    assert elapsed < 3.0


def test_catboost_writes_no_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    X, y, categorical = _house()
    train, held = _split(len(y))
    CatBoostModel(HOUSE_SPEC, LIGHT, categorical=categorical).fit(
        X[train], y[train], X_val=X[held], y_val=y[held])
    CatBoostModel(TITANIC_SPEC, LIGHT).fit(*_titanic()[:2])
    assert list(tmp_path.iterdir()) == []


def test_catboost_space_bounds_are_trainable() -> None:
    X, y, categorical = _titanic()
    for bound in ("lb", "ub"):
        params = {p.name: p.to_python(getattr(p, bound)) for p in CATBOOST_SPACE}
        model = CatBoostModel(TITANIC_SPEC, LIGHT, categorical=categorical, params=params).fit(X, y)
        assert model.estimator_.get_params()["depth"] == params["depth"]
        assert np.isfinite(model.predict_proba(X)).all()


def test_forest_params_override_defaults() -> None:
    X, y, _ = _house()
    model = RandomForestModel(HOUSE_SPEC, LIGHT, params={"n_estimators": 10, "max_depth": 3}).fit(X, y)
    assert len(model.estimator_.estimators_) == 10
    assert max(tree.get_depth() for tree in model.estimator_.estimators_) <= 3
