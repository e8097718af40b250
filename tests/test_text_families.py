"""The text families' own models and views on small real texts: NB-SVM, complement naive Bayes,
naive Bayes over character n-grams, and the word-presence and character-count views they read."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from sklearn.metrics import log_loss

from solve_pipeline.base.baseline_models import ModelOptions
from solve_pipeline.base.dataset import FeatureSet
from solve_pipeline.tables.families import NaiveBayesModel, NBSVMModel
from solve_pipeline.race.registry import NBSVM_MAX_CLASSES, family_candidate, race_candidates
from solve_pipeline.base.setup_modules import TargetSpec
from solve_pipeline.texts.text_views import text_view

# Three "authors" with their own words and spellings, and words they share.
VOICES = {
    0: ["the raven sat upon the bust", "nevermore quoth the raven", "the chamber door and the raven"],
    1: ["the eldritch horror of the deep", "cyclopean ruins beneath the sea", "the horror lurked in ruins"],
    2: ["the creature beheld its maker", "my hideous progeny wandered", "the maker fled the creature"],
}


def _texts(n: int, seed: int) -> tuple[list[str], np.ndarray]:
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 3, size=n)
    texts = [" ".join(rng.choice(VOICES[int(k)], size=2)) + " " + rng.choice(["and so", "it was", "the end"])
             for k in labels]
    return texts, labels


def _features(train: list[str], test: list[str]) -> FeatureSet:
    ids = [str(i) for i in range(len(train) + len(test))]
    empty = np.zeros((0, 0))
    return FeatureSet(ids[: len(train)], ids[len(train):], empty.reshape(len(train), 0), empty.reshape(len(test), 0),
                      raw_text_train=train, raw_text_test=test)


@pytest.mark.parametrize("n_classes", [2, 3])
def test_nbsvm_learns_voices_and_gives_probabilities(n_classes: int) -> None:
    texts, labels = _texts(300, seed=n_classes)
    keep = labels < n_classes
    texts, labels = [t for t, k in zip(texts, keep) if k], labels[keep]
    cut = 2 * len(texts) // 3
    features = _features(texts[:cut], texts[cut:])
    train, test = text_view(features, "word_binary")
    assert set(np.unique(train.data)) == {1.0}  # presence, not counts
    spec = TargetSpec("author", "binary" if n_classes == 2 else "multiclass", list(range(n_classes)))
    model = NBSVMModel(spec).fit(train, labels[:cut])
    proba = model.predict_proba(test)
    assert proba.shape == (len(texts) - cut, n_classes)
    assert np.allclose(proba.sum(axis=1), 1.0) and (proba >= 0).all()
    prior = np.bincount(labels[:cut], minlength=n_classes) / cut
    constant = log_loss(labels[cut:], np.tile(prior, (len(proba), 1)), labels=range(n_classes))
    assert log_loss(labels[cut:], proba, labels=range(n_classes)) < 0.5 * constant
    assert (model.predict(test) == labels[cut:]).mean() > 0.9


def test_nbsvm_with_one_class_and_many_classes() -> None:
    texts, _ = _texts(120, seed=5)
    features = _features(texts[:90], texts[90:])
    train, test = text_view(features, "word_binary")
    spec = TargetSpec("author", "multiclass", [0, 1, 2])
    one = NBSVMModel(spec).fit(train, np.zeros(90, dtype=int)).predict_proba(test)
    assert np.allclose(one[:, 0], 1.0)  # nothing to separate: the class it saw
    # One logistic model per class: beyond NBSVM_MAX_CLASSES it stays out of the race.
    features = replace(features, text_train=train, text_test=test)  # the solver's TF-IDF block
    many = [TargetSpec("author", "multiclass", list(range(NBSVM_MAX_CLASSES + 1)))]
    few = [TargetSpec("author", "multiclass", list(range(NBSVM_MAX_CLASSES)))]
    assert "nbsvm" not in {c.name for c in race_candidates(features, targets=many)}
    assert "nbsvm" in {c.name for c in race_candidates(features, targets=few)}


def test_complement_and_character_naive_bayes_read_their_views() -> None:
    texts, labels = _texts(240, seed=7)
    features = _features(texts[:180], texts[180:])
    spec = TargetSpec("author", "multiclass", [0, 1, 2])
    counts, _ = text_view(features, "char_counts")
    tfidf, _ = text_view(features, "char_tfidf")
    assert counts.shape == tfidf.shape and float(counts.max()) >= 2.0  # counts, where TF-IDF rows are unit length
    for name in ("complement_nb", "naive_bayes_chars", "naive_bayes_char_counts", "nbsvm"):
        candidate = family_candidate(name)
        train, test = candidate.matrices(features, 0)
        model = candidate.make(spec, ModelOptions(), features).fit(train, labels[:180])
        accuracy = (model.predict(test) == labels[180:]).mean()
        assert accuracy > 0.9, (name, accuracy)
    complement = NaiveBayesModel(spec, complement=True).fit(text_view(features, "word_counts")[0], labels[:180])
    assert type(complement.estimator_).__name__ == "ComplementNB"


def test_word_views_read_punctuation_and_the_cased_view_reads_capitals() -> None:
    # Two writers with the same words: one puts semicolons where the other puts commas, and one
    # capitalises where the other does not. Only the marks and the capitals tell them apart.
    rng = np.random.default_rng(3)
    labels = rng.integers(0, 2, size=200)
    words = ["raven", "door", "night", "dream", "shadow", "lamp"]
    texts = []
    for k in labels:
        chosen = list(rng.choice(words, size=4))
        mark = ";" if k == 0 else ","
        first = chosen[0].capitalize() if k == 0 else chosen[0]
        texts.append(f"{first} {chosen[1]}{mark} {chosen[2]} {chosen[3]}")
    features = _features(texts[:150], texts[150:])
    spec = TargetSpec("writer", "binary", [0, 1])
    for name in ("naive_bayes", "naive_bayes_cased", "naive_bayes_counts", "nbsvm"):
        train, test = family_candidate(name).matrices(features, 0)
        model = family_candidate(name).make(spec, ModelOptions(), features).fit(train, labels[:150])
        assert (model.predict(test) == labels[150:]).mean() > 0.95, name
    # Lower-cased views see the same words either way; the cased one holds both spellings.
    lower, _ = text_view(features, "word_tfidf")
    cased, _ = text_view(features, "word_tfidf_cased")
    assert cased.shape[1] > lower.shape[1]
