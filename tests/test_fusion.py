"""The late-fusion net on real data: titanic (tabular + categories), disaster tweets (text via
MiniLM, plus a keyword category), scikit-learn's scanned digits (images) and house prices
(regression). FeatureSets are built by hand from a few hundred rows so the file stays fast."""

from __future__ import annotations

import time
from dataclasses import replace
from functools import cache
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import load_digits
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.metrics import accuracy_score, log_loss

from curriculum.embedding import MINILM_DIM
from solve_pipeline.base.baseline_models import ConstantModel, ModelOptions
from solve_pipeline.base.dataset import CATEGORY, NUMERIC, FeatureSet
from solve_pipeline.fusion.fusion import FusionModel
from solve_pipeline.fusion.fusion_defaults import FUSION_DEFAULTS
from solve_pipeline.fusion.fusion_inputs import ModalityBlocks, fusion_matrices
from solve_pipeline.race.registry import FUSION_SPACE, NN_SPACE, family_candidate
from solve_pipeline.base.setup_modules import TargetSpec

pytestmark = pytest.mark.integration

COMPETITIONS = Path(__file__).resolve().parents[2] / "shared" / "competitions"
BINARY = TargetSpec("y", "binary", [0, 1])


def _feature_set(frame: pd.DataFrame, n_train: int, numeric: list[str], categories: list[str],
                 text: str | None = None) -> FeatureSet:
    """The first n_train rows as train, the rest as test, encoded the way build_features does."""
    columns, kinds = [], []
    for name in numeric:
        columns.append(pd.to_numeric(frame[name], errors="coerce").to_numpy(dtype=float))
        kinds.append(NUMERIC)
    for name in categories:
        values = frame[name].astype("string")
        codes = pd.Categorical(values, categories=sorted(values.dropna().unique())).codes.astype(float)
        columns.append(np.where(codes < 0, np.nan, codes))
        kinds.append(CATEGORY)
    matrix = np.column_stack(columns).astype(np.float32) if columns else np.zeros((len(frame), 0), np.float32)
    ids = frame.index.astype(str).tolist()
    features = FeatureSet(train_ids=ids[:n_train], test_ids=ids[n_train:], tab_train=matrix[:n_train],
                          tab_test=matrix[n_train:], tab_names=numeric + categories, tab_kinds=kinds)
    if text is not None:
        texts = frame[text].fillna("").astype(str).tolist()
        tfidf = TfidfVectorizer(min_df=2).fit(texts)
        features.text_train, features.text_test = tfidf.transform(texts[:n_train]), tfidf.transform(texts[n_train:])
        features.raw_text_train, features.raw_text_test = texts[:n_train], texts[n_train:]
        features.raw_text_columns_train = {text: texts[:n_train]}
        features.raw_text_columns_test = {text: texts[n_train:]}
    return features


@cache
def titanic() -> tuple[FeatureSet, np.ndarray, np.ndarray]:
    frame = pd.read_csv(COMPETITIONS / "titanic" / "data" / "train.csv")
    frame = frame.sample(frac=1.0, random_state=0).reset_index(drop=True)
    features = _feature_set(frame, 600, ["Pclass", "Age", "SibSp", "Parch", "Fare"], ["Sex", "Embarked"])
    y = frame["Survived"].to_numpy(dtype=int)
    return features, y[:600], y[600:]


@cache
def titanic_blocks() -> tuple[ModalityBlocks, ModalityBlocks]:
    blocks = fusion_matrices(titanic()[0], 0)
    assert blocks is not None
    return blocks


def _constant_log_loss(y_train: np.ndarray, y_test: np.ndarray, n_classes: int) -> float:
    prior = np.bincount(y_train, minlength=n_classes) / len(y_train)
    return log_loss(y_test, np.tile(prior, (len(y_test), 1)), labels=list(range(n_classes)))


def test_tabular_beats_constant_on_titanic() -> None:
    features, y_train, y_test = titanic()
    train, test = titanic_blocks()
    # Numerics: 5 standardised columns plus one NaN flag (Age); Sex and Embarked as codes.
    assert train.numeric.shape == (600, 6) and test.numeric.shape == (291, 6)
    assert train.cardinalities == (3, 4)  # missing + levels (Embarked has NaN rows)
    assert train.text is None and train.image is None
    model = FusionModel(BINARY, ModelOptions(seed=0), {"max_epochs": 15}).fit(train, y_train)
    proba = model.predict_proba(test)
    assert proba.shape == (291, 2) and proba.dtype == np.float64
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert log_loss(y_test, proba) < _constant_log_loss(y_train, y_test, 2) - 0.1
    assert accuracy_score(y_test, model.predict(test)) > 0.75


def test_text_uses_minilm_and_beats_constant_on_tweets() -> None:
    frame = pd.read_csv(COMPETITIONS / "nlp-getting-started" / "data" / "train.csv")
    frame = frame.sample(n=700, random_state=0).reset_index(drop=True)
    features = _feature_set(frame, 500, [], ["keyword"], text="text")
    started = time.monotonic()
    train, test = fusion_matrices(features, 0)
    embed_seconds = time.monotonic() - started
    assert train.text_source == "minilm" and train.text.shape == (500, MINILM_DIM)
    assert test.text.shape == (200, MINILM_DIM) and train.cardinalities[0] > 100
    y = frame["target"].to_numpy(dtype=int)

    def held_out_log_loss(train: ModalityBlocks, test: ModalityBlocks) -> float:
        model = FusionModel(BINARY, ModelOptions(seed=0), {"max_epochs": 10}).fit(
            train[np.arange(400)], y[:400], X_val=train[np.arange(400, 500)], y_val=y[400:500])
        return log_loss(y[500:], model.predict_proba(test))

    minilm = held_out_log_loss(train, test)
    assert minilm < _constant_log_loss(y[:500], y[500:], 2) - 0.1
    # The sentence encoder earns its cost: measured 0.45 against 0.61 for the TF-IDF projection.
    svd = held_out_log_loss(*fusion_matrices(features, 0, max_embed_rows=0))
    assert minilm < svd - 0.05
    print(f"MiniLM: {len(frame)} texts in {embed_seconds:.1f} s (model load included)")


def test_text_falls_back_to_tfidf_svd_when_embedding_is_too_costly() -> None:
    frame = pd.read_csv(COMPETITIONS / "spooky-author-identification" / "data" / "train.csv").head(400)
    features = _feature_set(frame, 300, [], [], text="text")
    train, test = fusion_matrices(features, 0, max_embed_rows=100)
    assert train.text_source == "tfidf_svd"
    # Over the time cap: the first chunk's rate projects past it, and the projection stands in.
    assert fusion_matrices(features, 0, max_embed_seconds=0.01)[0].text_source == "tfidf_svd"
    assert train.text.shape[0] == 300 and test.text.shape[0] == 100 and 1 < train.text.shape[1] <= 256
    without_raw_text = replace(features, raw_text_train=None, raw_text_test=None,
                               raw_text_columns_train=None, raw_text_columns_test=None)
    assert fusion_matrices(without_raw_text, 0)[0].text_source == "tfidf_svd"


def test_small_cnn_learns_digit_images() -> None:
    digits = load_digits()
    images = (digits.images / 16.0).reshape(len(digits.images), -1).astype(np.float32)
    n_train, n_test = 500, 300
    ids = [str(i) for i in range(n_train + n_test)]
    features = FeatureSet(train_ids=ids[:n_train], test_ids=ids[n_train:],
                          tab_train=np.zeros((n_train, 0), np.float32), tab_test=np.zeros((n_test, 0), np.float32),
                          image_train=images[:n_train], image_test=images[n_train:n_train + n_test],
                          image_shape=(1, 8, 8))
    train, test = fusion_matrices(features, 0)
    assert train.image.shape == (n_train, 1, 8, 8) and train.numeric.shape == (n_train, 0)
    spec = TargetSpec("digit", "multiclass", list(range(10)))
    model = FusionModel(spec, ModelOptions(seed=0), {"max_epochs": 10}).fit(train, digits.target[:n_train])
    assert model.backbone_ == "small_cnn"  # no torchvision / no local resnet18 weights here
    proba = model.predict_proba(test)
    assert proba.shape == (n_test, 10)
    assert accuracy_score(digits.target[n_train:n_train + n_test], proba.argmax(axis=1)) > 0.8


def test_regression_on_house_prices_beats_the_mean() -> None:
    frame = pd.read_csv(COMPETITIONS / "house-prices-advanced-regression-techniques" / "data" / "train.csv")
    frame = frame.sample(frac=1.0, random_state=0).reset_index(drop=True).head(900)
    numeric = [c for c in frame.columns if c not in ("Id", "SalePrice") and pd.api.types.is_numeric_dtype(frame[c])]
    categories = [c for c in frame.columns if frame[c].dtype == object]
    features = _feature_set(frame, 600, numeric, categories)
    train, test = fusion_matrices(features, 0)
    y = np.log1p(frame["SalePrice"].to_numpy(dtype=float))
    spec = TargetSpec("SalePrice", "regression")
    model = FusionModel(spec, ModelOptions(seed=0), {"max_epochs": 25}).fit(
        train[np.arange(500)], y[:500], X_val=train[np.arange(500, 600)], y_val=y[500:600])
    predicted = model.predict(test)
    assert predicted.shape == (300,) and np.isfinite(predicted).all()
    rmse = np.sqrt(np.mean((predicted - y[600:]) ** 2))
    baseline = np.sqrt(np.mean((y[:600].mean() - y[600:]) ** 2))
    assert rmse < 0.6 * baseline  # predictions are back on the log-price scale, not standardised


def test_early_stopping_restores_the_best_epoch() -> None:
    _, y_train, _ = titanic()
    train, _ = titanic_blocks()
    fit_rows, val_rows = np.arange(150), np.arange(150, 600)
    # Few rows, a wide net and a high learning rate: validation loss turns up within a few epochs.
    params = {"learning_rate": 1e-2, "hidden_size": 512, "dropout": 0.0, "batch_size": "32",
              "max_epochs": 40, "patience": 3}
    model = FusionModel(BINARY, ModelOptions(seed=0), params).fit(
        train[fit_rows], y_train[fit_rows], X_val=train[val_rows], y_val=y_train[val_rows])
    history = model.history_
    assert model.epochs_run_ == len(history) < 40  # stopped early ...
    assert model.best_epoch_ == int(np.argmin(history)) == len(history) - 1 - 3  # ... after `patience` misses
    restored = log_loss(y_train[val_rows], model.predict_proba(train[val_rows]))
    assert restored == pytest.approx(min(history), rel=1e-6)
    assert restored < history[-1]


def test_deadline_in_the_past_returns_a_usable_model_quickly() -> None:
    _, y_train, _ = titanic()
    train, test = titanic_blocks()
    started = time.monotonic()
    model = FusionModel(BINARY, ModelOptions(seed=0, deadline=time.monotonic() - 1.0)).fit(train, y_train)
    proba = model.predict_proba(test)
    assert time.monotonic() - started < 1.0
    prior = np.bincount(y_train, minlength=2) / len(y_train)
    np.testing.assert_allclose(proba, np.tile(prior, (len(test), 1)))


def test_same_seed_gives_identical_predictions() -> None:
    _, y_train, _ = titanic()
    train, test = titanic_blocks()

    def fitted(seed: int) -> np.ndarray:
        model = FusionModel(BINARY, ModelOptions(seed=seed, light=True), {"optimizer": "SGD", "batch_size": 64})
        return model.fit(train, y_train).predict_proba(test)

    first = fitted(0)
    np.testing.assert_array_equal(first, fitted(0))
    assert not np.allclose(first, fitted(1))


def test_slicing_blocks_keeps_every_modality_aligned() -> None:
    train, _ = titanic_blocks()
    rows = np.array([5, 0, 599, 5])
    part = train[rows]
    assert isinstance(part, ModalityBlocks)
    assert part.shape == (4, train.shape[1]) and len(part) == 4
    np.testing.assert_array_equal(part.numeric, train.numeric[rows])
    np.testing.assert_array_equal(part.categories, train.categories[rows])
    assert part.cardinalities == train.cardinalities
    assert train[train.categories[:, 0] == 1].shape[0] == int((train.categories[:, 0] == 1).sum())
    with pytest.raises(ValueError):
        ModalityBlocks(train.numeric, train.categories[:3], train.cardinalities)


def test_category_unseen_in_training_is_read_as_missing() -> None:
    _, y_train, _ = titanic()
    train, test = titanic_blocks()
    embarked = train.categories[:, 1]
    level = 1 + np.argmax(np.bincount(embarked)[1:] > 0)  # some real Embarked level
    fit_rows = np.flatnonzero(embarked != level)
    model = FusionModel(BINARY, ModelOptions(seed=0, light=True)).fit(train[fit_rows], y_train[fit_rows])
    probe = train[np.flatnonzero(embarked == level)[:5]]
    as_missing = ModalityBlocks(probe.numeric, np.column_stack([probe.categories[:, 0], np.zeros(5, np.int64)]),
                                probe.cardinalities)
    out_of_table = ModalityBlocks(probe.numeric, np.column_stack([probe.categories[:, 0], np.full(5, 99)]),
                                  probe.cardinalities)
    proba = model.predict_proba(probe)
    assert np.isfinite(proba).all()
    np.testing.assert_allclose(proba, model.predict_proba(as_missing))
    np.testing.assert_allclose(proba, model.predict_proba(out_of_table))


def test_one_class_fold_falls_back_to_the_prior() -> None:
    train, test = titanic_blocks()
    spec = TargetSpec("y", "multiclass", ["a", "b", "c"])
    model = FusionModel(spec, ModelOptions()).fit(train[np.arange(50)], np.full(50, 2))
    assert isinstance(model.fallback_, ConstantModel)
    np.testing.assert_array_equal(model.predict_proba(test), np.tile([0.0, 0.0, 1.0], (len(test), 1)))


def test_candidate_wiring_and_search_space() -> None:
    features, y_train, _ = titanic()
    candidate = family_candidate("fusion", params={**FUSION_DEFAULTS, "hidden_size": 32})
    assert candidate.name == "fusion"
    X, X_test = candidate.matrices(features, 0)
    assert X.shape[0] == features.n_train and X_test.shape[0] == features.n_test
    assert candidate.matrices(features, 0)[0] is X  # HEBO trials reuse the blocks, text embeddings included
    model = candidate.make(BINARY, ModelOptions(light=True), features)
    model.fit(X[np.arange(300)], y_train[:300], X_val=X[np.arange(300, 600)], y_val=y_train[300:])
    assert model.settings.hidden_size == 32 and model.epochs_run_ == 2
    names = [p.name for p in FUSION_SPACE]
    assert names == [p.name for p in NN_SPACE] + ["hidden_size"] and set(FUSION_DEFAULTS) == set(names)
    with pytest.raises(ValueError):
        FusionModel(BINARY, ModelOptions(), {"hiden_size": 64})
    empty = FeatureSet(["a"], ["b"], np.zeros((1, 0), np.float32), np.zeros((1, 0), np.float32))
    assert fusion_matrices(empty, 0) is None
