"""Target encoding inside folds, on real competition data: the encoder sees only the training rows,
cross fitting hides each training row's own target, and binary, multiclass and regression targets
all train models that beat a constant."""

from __future__ import annotations

from pathlib import Path

import pytest

import numpy as np
import pandas as pd
from sklearn.preprocessing import TargetEncoder

from solve_pipeline.base.baseline_models import ConstantModel, LightGBMModel, ModelOptions
from solve_pipeline.base.dataset import CATEGORY, NUMERIC, ORDINAL_CODE, FeatureSet
from solve_pipeline.tables.families import ExtraTreesModel, RandomForestModel
from solve_pipeline.base.setup_modules import TargetSpec
from solve_pipeline.tables.target_encoding import TargetEncoded, high_cardinality_columns

pytestmark = pytest.mark.integration

COMPETITIONS = Path(__file__).resolve().parents[2] / "shared" / "competitions"
LIGHT = ModelOptions(seed=0, light=True, threads=2)

# Titanic columns: Pclass, Sex, Age, Fare, Embarked, Ticket, Cabin.
TITANIC_KINDS = [NUMERIC, CATEGORY, NUMERIC, NUMERIC, CATEGORY, ORDINAL_CODE, CATEGORY]
TICKET, CABIN = 5, 6
BINARY = TargetSpec(column="Survived", task="binary", classes=[0, 1])
REGRESSION = TargetSpec(column="SalePrice", task="regression")


def _codes(values: pd.Series) -> np.ndarray:
    codes, _ = pd.factorize(values)
    return np.where(codes < 0, np.nan, codes).astype(np.float32)


def _titanic() -> pd.DataFrame:
    return pd.read_csv(COMPETITIONS / "titanic" / "data" / "train.csv")


def _titanic_matrix(frame: pd.DataFrame) -> np.ndarray:
    return np.column_stack([
        frame["Pclass"], _codes(frame["Sex"]), frame["Age"], frame["Fare"],
        _codes(frame["Embarked"]), _codes(frame["Ticket"]), _codes(frame["Cabin"]),
    ]).astype(np.float32)


def _split(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    order = np.random.default_rng(seed).permutation(n)
    return order[: int(n * 0.6)], order[int(n * 0.6):]


class Recording:
    """A real model that also keeps the matrices TargetEncoded handed it."""

    def __init__(self, inner) -> None:
        self.inner = inner

    def fit(self, X, y, *, X_val=None, y_val=None):
        self.X_, self.X_val_ = X.copy(), None if X_val is None else X_val.copy()
        self.inner.fit(X, y, X_val=X_val, y_val=y_val)
        return self

    def predict_proba(self, X):
        return self.inner.predict_proba(X)

    def predict(self, X):
        return self.inner.predict(X)


def test_high_cardinality_columns_picks_code_columns_with_many_levels() -> None:
    frame = _titanic()
    X = _titanic_matrix(frame)
    features = FeatureSet(train_ids=[str(i) for i in frame["PassengerId"]], test_ids=[],
                          tab_train=X, tab_test=X[:0], tab_names=list("PSAFETC"),
                          tab_kinds=TITANIC_KINDS)
    # Fare has hundreds of values but is numeric; Sex (2) and Embarked (3 + NaN) are too few.
    assert high_cardinality_columns(features) == [TICKET, CABIN]
    assert high_cardinality_columns(features, min_levels=3) == [4, TICKET, CABIN]


def test_encoder_sees_only_the_training_rows() -> None:
    frame = _titanic()
    X, y = _titanic_matrix(frame), frame["Survived"].to_numpy()
    train, val = _split(len(y))
    columns = [TICKET, CABIN]

    recorded = []
    for y_val in (y[val], 1 - y[val]):
        model = TargetEncoded(Recording(LightGBMModel(BINARY, LIGHT)), columns, BINARY, seed=0)
        model.fit(X[train], y[train], X_val=X[val], y_val=y_val)
        recorded.append(model.inner)
    assert recorded[0].X_.shape == (len(train), X.shape[1] + 2)
    assert np.array_equal(recorded[0].X_, recorded[1].X_, equal_nan=True)
    assert np.array_equal(recorded[0].X_val_, recorded[1].X_val_, equal_nan=True)

    # Validation rows are encoded by an encoder fitted on the training rows alone.
    codes = np.nan_to_num(X[:, columns], nan=-1.0)
    alone = TargetEncoder(target_type="binary").fit(codes[train], y[train])
    assert np.allclose(recorded[0].X_val_[:, -2:], alone.transform(codes[val]), atol=1e-6)


def test_cross_fitting_hides_each_rows_own_target() -> None:
    frame = _titanic()
    X, y = _titanic_matrix(frame), frame["Survived"].to_numpy()
    train, _ = _split(len(y))
    model = TargetEncoded(Recording(LightGBMModel(BINARY, LIGHT)), [TICKET], BINARY, seed=0)
    model.fit(X[train], y[train])
    cross_fitted = model.inner.X_[:, -1]

    # A naive mean encoding over the same rows: tickets are nearly unique, so it echoes y.
    tickets = pd.Series(X[train, TICKET])
    naive = pd.Series(y[train]).groupby(tickets).transform("mean").to_numpy()
    assert not np.allclose(cross_fitted, naive, atol=0.05)
    naive_corr = np.corrcoef(naive, y[train])[0, 1]
    cross_corr = np.corrcoef(cross_fitted, y[train])[0, 1]
    assert naive_corr > 0.8 and cross_corr < naive_corr - 0.3, (naive_corr, cross_corr)


def test_binary_model_beats_constant_and_unseen_tickets_get_the_prior() -> None:
    frame = _titanic()
    X, y = _titanic_matrix(frame), frame["Survived"].to_numpy()
    train, held = _split(len(y))
    model = TargetEncoded(RandomForestModel(BINARY, LIGHT), [TICKET, CABIN], BINARY, seed=0)
    model.fit(X[train], y[train])

    encoded = model.transform(X[held])[:, -2:]
    unseen = ~np.isin(X[held, TICKET], X[train, TICKET])
    assert unseen.sum() > 50  # real tickets: most held-out ones never appear in training
    assert np.isfinite(encoded).all()
    assert np.allclose(encoded[unseen, 0], model.encoder_.target_mean_)

    accuracy = np.mean(model.predict(X[held]) == y[held])
    floor = np.mean(y[held] == np.bincount(y[train]).argmax())
    assert accuracy > floor + 0.1


def test_multiclass_gets_one_column_per_class_and_feature() -> None:
    frame = _titanic()
    X, y = _titanic_matrix(frame), frame["Pclass"].to_numpy() - 1
    X[:, 0] = np.nan  # Pclass is now the target
    spec = TargetSpec(column="Pclass", task="multiclass", classes=[1, 2, 3])
    train, held = _split(len(y))
    model = TargetEncoded(Recording(LightGBMModel(spec, LIGHT)), [TICKET, CABIN], spec, seed=0)
    model.fit(X[train], y[train], X_val=X[held], y_val=y[held])

    assert model.inner.X_.shape[1] == X.shape[1] + 2 * 3
    proba = model.predict_proba(X[held])
    assert proba.shape == (len(held), 3) and np.allclose(proba.sum(axis=1), 1.0)
    floor = np.mean(y[held] == np.bincount(y[train]).argmax())
    assert np.mean(proba.argmax(axis=1) == y[held]) > floor + 0.2


def test_multiclass_fold_with_two_classes_and_with_one_class() -> None:
    frame = _titanic()
    X, y = _titanic_matrix(frame), frame["Pclass"].to_numpy() - 1
    spec = TargetSpec(column="Pclass", task="multiclass", classes=[1, 2, 3])

    two = np.flatnonzero(y < 2)
    model = TargetEncoded(ExtraTreesModel(spec, LIGHT), [TICKET, CABIN], spec, seed=0)
    proba = model.fit(X[two], y[two]).predict_proba(X[:30])
    assert model.encoder_.target_type_ == "binary"
    assert proba.shape == (30, 3) and np.allclose(proba[:, 2], 0.0)

    one = np.flatnonzero(y == 2)
    model = TargetEncoded(ExtraTreesModel(spec, LIGHT), [TICKET, CABIN], spec, seed=0)
    proba = model.fit(X[one], y[one]).predict_proba(X[:30])
    assert model.encoder_ is None
    assert np.allclose(proba, [[0.0, 0.0, 1.0]] * 30)


def test_leaf_multiclass_encodes_all_99_classes() -> None:
    frame = pd.read_csv(COMPETITIONS / "leaf-classification" / "data" / "train.csv")
    species = sorted(frame["species"].unique())
    y = frame["species"].map({name: i for i, name in enumerate(species)}).to_numpy()
    shape_bins = pd.qcut(frame["shape1"], 15, labels=False).to_numpy(np.float32)
    X = np.column_stack([frame[[f"margin{i}" for i in range(1, 9)]], shape_bins]).astype(np.float32)
    spec = TargetSpec(column="species", task="multiclass", classes=species)
    model = TargetEncoded(Recording(RandomForestModel(spec, LIGHT)), [8], spec, seed=0)
    model.fit(X, y)

    assert model.inner.X_.shape[1] == X.shape[1] + 99
    proba = model.predict_proba(X[:20])
    assert proba.shape == (20, 99) and np.allclose(proba.sum(axis=1), 1.0)


def test_regression_on_house_prices_beats_constant() -> None:
    frame = pd.read_csv(COMPETITIONS / "house-prices-advanced-regression-techniques" / "data" / "train.csv")
    X = np.column_stack([
        frame["GrLivArea"], frame["YearBuilt"], frame["LotFrontage"], _codes(frame["Neighborhood"]),
        _codes(frame["Exterior1st"]), _codes(frame["MSSubClass"]),
    ]).astype(np.float32)
    y = np.log(frame["SalePrice"].to_numpy())
    train, held = _split(len(y))
    model = TargetEncoded(Recording(ExtraTreesModel(REGRESSION, LIGHT)), [3, 4, 5], REGRESSION, seed=0)
    model.fit(X[train], y[train])

    assert model.encoder_.target_type_ == "continuous"
    assert model.inner.X_.shape[1] == X.shape[1] + 3
    rmse = np.sqrt(np.mean((model.predict(X[held]) - y[held]) ** 2))
    floor = ConstantModel(REGRESSION).fit(X[train], y[train]).predict(X[held])
    assert rmse < 0.6 * np.sqrt(np.mean((floor - y[held]) ** 2))
