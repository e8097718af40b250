"""Metric-aware decoding on real competitions' out-of-fold probabilities: a tuned threshold for F1
(nlp-getting-started), ordinal cut points for quadratic weighted kappa (playground-series-s3e5),
and argmax kept where it is already right."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import accuracy_score, cohen_kappa_score, f1_score
from sklearn.model_selection import cross_val_predict

from solve_pipeline.base.decoding import ARGMAX, Decoder, choose_decoder, numeric_classes

pytestmark = pytest.mark.integration

COMPETITIONS = Path(__file__).resolve().parents[2] / "shared" / "competitions"


def scorer_for(metric, proba: np.ndarray, y: np.ndarray, class_values: np.ndarray | None = None):
    """What the solver's scorer does with the setup's metric, here with scikit-learn's."""
    def score(decoder: Decoder, rows: np.ndarray) -> float:
        labels = decoder.labels(proba[rows])
        if class_values is not None:
            return metric(class_values[y[rows]], class_values[labels])
        return metric(y[rows], labels)
    return score


@pytest.fixture(scope="module")
def tweets() -> tuple[np.ndarray, np.ndarray]:
    frame = pd.read_csv(COMPETITIONS / "nlp-getting-started/data/train.csv").sample(3000, random_state=0)
    X = TfidfVectorizer(min_df=2, ngram_range=(1, 2)).fit_transform(frame["text"])
    y = frame["target"].to_numpy()
    # Strong regularisation leaves probabilities shy of 0.5 for the minority class: argmax under-calls it.
    proba = cross_val_predict(LogisticRegression(C=0.3, max_iter=1000), X, y, cv=5, method="predict_proba")
    return proba, y


@pytest.fixture(scope="module")
def wine() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    frame = pd.read_csv(COMPETITIONS / "playground-series-s3e5/data/train.csv")
    classes = np.sort(frame["quality"].unique())
    y = np.searchsorted(classes, frame["quality"].to_numpy())
    X = frame.drop(columns=["Id", "quality"]).to_numpy()
    proba = cross_val_predict(LogisticRegression(max_iter=3000, C=1.0), (X - X.mean(0)) / X.std(0), y, cv=5,
                              method="predict_proba")
    return proba, y, classes.astype(float)


def test_threshold_raises_f1_on_tweets(tweets: tuple[np.ndarray, np.ndarray]) -> None:
    proba, y = tweets
    choice = choose_decoder(proba, [0, 1], scorer_for(f1_score, proba, y), higher=True)
    assert choice.decoder.kind == "threshold"
    threshold = choice.decoder.values[0]
    assert 0.2 < threshold < 0.5  # the minority class needs a lower bar than argmax's 0.5
    everything = np.arange(len(y))
    fitted = f1_score(y, choice.decoder.labels(proba))
    assert fitted > choice.argmax_score + 0.01
    # The reported score is the cross-fitted gain on top of argmax, never the in-sample fit.
    assert choice.argmax_score < choice.score <= fitted + 1e-9
    assert choice.argmax_score == pytest.approx(scorer_for(f1_score, proba, y)(ARGMAX, everything))


def test_cut_points_raise_kappa_on_wine(wine: tuple[np.ndarray, np.ndarray, np.ndarray]) -> None:
    proba, y, classes = wine
    qwk = lambda a, b: cohen_kappa_score(a, b, weights="quadratic")  # noqa: E731
    assert numeric_classes(classes.tolist()) == tuple(classes)
    choice = choose_decoder(proba, classes.tolist(), scorer_for(qwk, proba, y, classes), higher=True)
    assert choice.decoder.kind == "cutpoints"
    cuts = choice.decoder.values
    assert list(cuts) == sorted(cuts) and len(cuts) == len(classes) - 1
    assert choice.score > choice.argmax_score + 0.02
    labels = choice.decoder.labels(proba)
    assert set(labels) <= set(range(len(classes)))


def test_argmax_stays_when_nothing_is_gained(tweets: tuple[np.ndarray, np.ndarray]) -> None:
    proba, y = tweets
    # Accuracy on balanced-enough classes: argmax is already the Bayes rule for calibrated probabilities.
    choice = choose_decoder(proba, [0, 1], scorer_for(accuracy_score, proba, y), higher=True)
    if choice.decoder.kind == "threshold":
        assert choice.score > choice.argmax_score  # kept only with a cross-fitted gain
    else:
        assert choice.decoder == ARGMAX and choice.score == choice.argmax_score
    # Non-numeric classes have no order: no cut points, argmax stays.
    three = np.tile([[0.2, 0.5, 0.3]], (50, 1))
    assert numeric_classes(["EAP", "HPL", "MWS"]) is None
    named = choose_decoder(three, ["EAP", "HPL", "MWS"], scorer_for(accuracy_score, three, np.zeros(50, dtype=int)),
                           higher=True)
    assert named.decoder == ARGMAX
