"""MiniLM fine-tuned end to end with the real bundled model on tiny made-up texts: it learns a
trivially separable sentiment task, fits a regression target, falls back to the constant model
with no time, slices like a matrix, and its cost probe projects a positive, growing time."""

from __future__ import annotations

import time
from functools import cache

import numpy as np
import pytest

from solve_pipeline.texts import text_finetune
from solve_pipeline.base.baseline_models import ConstantModel, ModelOptions
from solve_pipeline.base.dataset import FeatureSet
from solve_pipeline.base.setup_modules import TargetSpec
from solve_pipeline.texts.text_finetune import MiniLMFineTuneModel, estimate_finetune_seconds
from solve_pipeline.texts.text_tokens import TextInputs, text_finetune_matrices

pytestmark = pytest.mark.integration

BINARY = TargetSpec("y", "binary", [0, 1])
GOOD = ["good", "great", "lovely", "excellent", "wonderful", "superb"]
BAD = ["bad", "awful", "terrible", "poor", "horrible", "dreadful"]
NOUNS = ["film", "meal", "trip", "book", "show", "hotel", "concert", "game"]


@cache
def sentiment(n: int, seed: int) -> tuple[TextInputs, np.ndarray]:
    rng = np.random.RandomState(seed)
    y = rng.randint(0, 2, n)
    texts = [f"the {rng.choice(NOUNS)} was {rng.choice(GOOD if label else BAD)}" for label in y]
    return TextInputs(np.asarray(texts, dtype=object)), y


def _features(texts: list[str], n_train: int, **columns: list[str]) -> FeatureSet:
    ids = [str(i) for i in range(len(texts))]
    named = {"review": texts, **columns}
    return FeatureSet(
        train_ids=ids[:n_train], test_ids=ids[n_train:],
        tab_train=np.zeros((n_train, 0)), tab_test=np.zeros((len(texts) - n_train, 0)),
        raw_text_train=[" | ".join(row) for row in zip(*named.values())][:n_train],
        raw_text_test=[" | ".join(row) for row in zip(*named.values())][n_train:],
        raw_text_columns_train={k: v[:n_train] for k, v in named.items()},
        raw_text_columns_test={k: v[n_train:] for k, v in named.items()},
    )


def test_text_inputs_slice_like_a_matrix() -> None:
    X = TextInputs(np.asarray(["a", "b", "c"], dtype=object), np.asarray(["x", "y", "z"], dtype=object))
    assert len(X) == 3 and X.shape == (3, 1)
    part = X[np.array([2, 0])]
    assert list(part.first) == ["c", "a"] and list(part.second) == ["z", "x"] and part.shape == (2, 1)
    with pytest.raises(ValueError):
        TextInputs(np.asarray(["a"], dtype=object), np.asarray(["x", "y"], dtype=object))


def test_matrices_pair_the_first_column_with_the_rest() -> None:
    texts = ["q one", "q two", "q three"]
    single = text_finetune_matrices(_features(texts, 2))
    assert single is not None and single[0].second is None and list(single[1].first) == ["q three"]
    triple = text_finetune_matrices(_features(texts, 2, answer=["a1", "a2", "a3"], note=["n1", "n2", "n3"]))
    assert triple is not None
    assert list(triple[0].first) == ["q one", "q two"] and list(triple[0].second) == ["a1 | n1", "a2 | n2"]
    no_text = FeatureSet(train_ids=["0"], test_ids=["1"], tab_train=np.zeros((1, 1)), tab_test=np.zeros((1, 1)))
    assert text_finetune_matrices(no_text) is None


def test_learns_a_separable_sentiment_task() -> None:
    X, y = sentiment(64, 0)
    X_val, y_val = sentiment(40, 1)
    options = ModelOptions(seed=0, threads=2, deadline=time.monotonic() + 120)
    model = MiniLMFineTuneModel(BINARY, options, params={"max_epochs": 3}).fit(X, y, X_val=X_val, y_val=y_val)
    assert model.fallback_ is None and model.epochs_run_ == 3.0
    assert len(model.history_) == 3 and model.best_epoch_ is not None
    proba = model.predict_proba(X_val)
    assert proba.shape == (40, 2)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert (proba.argmax(axis=1) == y_val).mean() >= 0.8  # chance is ~0.5


def test_regression_on_the_standardised_target_is_deterministic() -> None:
    X, labels = sentiment(64, 2)
    y = np.where(labels == 1, 3.0, 1.0) + np.random.RandomState(0).normal(0, 0.1, len(labels))
    X_val, val_labels = sentiment(32, 3)
    spec = TargetSpec("score", "regression")
    params = {"max_epochs": 2, "head_learning_rate": 3e-3}
    first = MiniLMFineTuneModel(spec, ModelOptions(seed=1), params).fit(X, y)
    predictions = first.predict(X_val)
    y_val = np.where(val_labels == 1, 3.0, 1.0)
    assert np.sqrt(np.mean((predictions - y_val) ** 2)) < 0.8 * np.std(y_val)
    again = MiniLMFineTuneModel(spec, ModelOptions(seed=1), params).fit(X, y)
    np.testing.assert_allclose(again.predict(X_val), predictions, rtol=1e-5, atol=1e-6)


def test_no_time_left_falls_back_to_the_constant_model() -> None:
    X, y = sentiment(20, 4)
    threads = text_finetune.torch.get_num_threads()
    model = MiniLMFineTuneModel(BINARY, ModelOptions(deadline=time.monotonic() - 1.0)).fit(X, y)
    assert isinstance(model.fallback_, ConstantModel)
    prior = np.bincount(y, minlength=2) / len(y)
    np.testing.assert_allclose(model.predict_proba(X[np.arange(5)]), np.tile(prior, (5, 1)))
    assert text_finetune.torch.get_num_threads() == threads
    # A deadline that passes while the texts are tokenized and the transformer copied.
    late = MiniLMFineTuneModel(BINARY, ModelOptions(deadline=time.monotonic() + 1e-3)).fit(X, y)
    assert isinstance(late.fallback_, ConstantModel) and late.predict(X).shape == (20,)


def test_the_cost_estimate_is_positive_and_grows_with_rows() -> None:
    X, _ = sentiment(64, 5)
    features = _features(list(X.first), 48)
    small = estimate_finetune_seconds(features, 100, 1.0, 2)
    assert small > 0
    assert estimate_finetune_seconds(features, 1000, 1.0, 2) > small
    assert estimate_finetune_seconds(features, 100, 3.0, 2) > small
    no_text = FeatureSet(train_ids=["0"], test_ids=["1"], tab_train=np.zeros((1, 1)), tab_test=np.zeros((1, 1)))
    assert estimate_finetune_seconds(no_text, 100, 1.0, 2) == float("inf")
