"""The metrics added for Kaggle's classification, regression and ranking competitions, against
scikit-learn, scipy or values worked out by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats
from sklearn import metrics as skm

from agentk.core.metrics import METRICS, get_metric, label_list, score_class_probabilities


def _fn(name: str):  # noqa: ANN202 - the registry's callable
    return METRICS[name].fn


RNG = np.random.default_rng(7)
Y_VALUES = RNG.gamma(2.0, 10.0, size=200) + 0.5
P_VALUES = Y_VALUES * RNG.lognormal(0.0, 0.3, size=200)
Y_BINARY = RNG.integers(0, 2, size=300)
P_BINARY = np.clip(0.35 * Y_BINARY + RNG.random(300) * 0.65, 0, 1)
Y_CLASSES = RNG.choice(["a", "b", "c", "d"], size=300, p=[0.5, 0.3, 0.15, 0.05])
P_CLASSES = np.where(RNG.random(300) < 0.7, Y_CLASSES, RNG.choice(["a", "b", "c", "d"], size=300))


# ---------------------------------------------------------------------------------------------
# Labels


def test_micro_f1_is_accuracy_on_single_label_rows_and_weighted_f1_matches_sklearn() -> None:
    assert _fn("micro_f1")(Y_CLASSES, P_CLASSES) == pytest.approx(skm.accuracy_score(Y_CLASSES, P_CLASSES))
    assert _fn("weighted_f1")(Y_CLASSES, P_CLASSES) == pytest.approx(
        skm.f1_score(Y_CLASSES, P_CLASSES, average="weighted"))
    assert _fn("weighted_f1")(Y_CLASSES, P_CLASSES) != pytest.approx(_fn("macro_f1")(Y_CLASSES, P_CLASSES))


def test_linear_weighted_kappa_matches_sklearn_and_differs_from_quadratic() -> None:
    y = RNG.integers(0, 6, size=200)
    p = np.clip(y + RNG.integers(-2, 3, size=200), 0, 5)
    linear = _fn("linear_weighted_kappa")(y, p)
    assert linear == pytest.approx(skm.cohen_kappa_score(y, p, weights="linear"))
    assert linear != pytest.approx(_fn("quadratic_weighted_kappa")(y, p))
    assert get_metric("linear weighted kappa").name == "linear_weighted_kappa"


# ---------------------------------------------------------------------------------------------
# Probabilities


def test_gini_is_twice_auc_minus_one_and_matches_the_kaggle_kernel() -> None:
    gini = _fn("gini")(Y_BINARY, P_BINARY)
    assert gini == pytest.approx(2 * skm.roc_auc_score(Y_BINARY, P_BINARY) - 1)

    def kaggle_gini(actual: np.ndarray, pred: np.ndarray) -> float:
        # The normalised Gini kernel Porto Seguro's participants used (ties broken by position).
        order = np.lexsort((np.arange(len(actual)), -pred))
        cumulative = np.cumsum(actual[order]) / actual.sum()
        return float(cumulative.sum() - (len(actual) + 1) / 2) / len(actual)

    continuous = RNG.random(300)  # no ties, so the kernel's tie-breaking does not matter
    expected = kaggle_gini(Y_BINARY, continuous) / kaggle_gini(Y_BINARY, Y_BINARY.astype(float))
    assert _fn("gini")(Y_BINARY, continuous) == pytest.approx(expected, abs=1e-3)
    assert get_metric("Normalized Gini").name == "gini" and METRICS["gini"].higher_is_better


def test_brier_matches_sklearn_and_sums_over_classes() -> None:
    assert _fn("brier")(Y_BINARY, P_BINARY) == pytest.approx(skm.brier_score_loss(Y_BINARY, P_BINARY))
    # Two classes as a matrix: the squared error is counted for both columns (Brier's definition).
    matrix = np.column_stack([1 - P_BINARY, P_BINARY])
    assert _fn("brier")(Y_BINARY, matrix) == pytest.approx(2 * skm.brier_score_loss(Y_BINARY, P_BINARY))


# ---------------------------------------------------------------------------------------------
# Values


def test_correlations_match_scipy() -> None:
    assert _fn("pearson")(Y_VALUES, P_VALUES) == pytest.approx(stats.pearsonr(Y_VALUES, P_VALUES)[0])
    assert _fn("spearman")(Y_VALUES, P_VALUES) == pytest.approx(stats.spearmanr(Y_VALUES, P_VALUES)[0])
    assert _fn("kendall_tau")(Y_VALUES, P_VALUES) == pytest.approx(stats.kendalltau(Y_VALUES, P_VALUES)[0])
    assert _fn("pearson")(Y_VALUES, np.full(200, 3.0)) == 0.0  # constant prediction: 0, not NaN
    assert _fn("spearman")([1, 2, 3], [30, 20, 10]) == pytest.approx(-1.0)


def test_smape_is_kaggles_percent_with_zero_over_zero_as_zero() -> None:
    smape = _fn("smape")
    assert smape([100, 0], [110, 0]) == pytest.approx(100 / 2 * (2 * 10 / 210))
    assert smape([1, 0], [0, 5]) == pytest.approx(200.0)  # the maximum
    assert smape([0, 0], [0, 0]) == 0.0
    t, p = Y_VALUES, P_VALUES
    assert smape(t, p) == pytest.approx(100 * np.mean(2 * np.abs(p - t) / (np.abs(t) + np.abs(p))))


def test_msle_rmspe_and_rmsle_known_values() -> None:
    assert _fn("msle")(Y_VALUES, P_VALUES) == pytest.approx(skm.mean_squared_log_error(Y_VALUES, P_VALUES))
    assert _fn("rmsle")(Y_VALUES, P_VALUES) == pytest.approx(math.sqrt(_fn("msle")(Y_VALUES, P_VALUES)))
    assert _fn("rmspe")([2, 4], [1, 5]) == pytest.approx(math.sqrt((0.25 + 0.0625) / 2))
    with pytest.raises(ValueError):
        _fn("rmspe")([0, 1], [1, 1])


# ---------------------------------------------------------------------------------------------
# Rankings and label sets


def test_label_list_reads_strings_sequences_numbers_and_blanks() -> None:
    assert label_list("new_whale  w_1 7.0") == ["new_whale", "w_1", "7"]
    assert label_list(["a", 2]) == ["a", "2"]
    assert label_list(3) == ["3"]
    assert label_list(float("nan")) == [] and label_list("") == []


def test_map_at_k_follows_kaggles_definition() -> None:
    map_k = _fn("map_at_k")
    # One true label: 1, 1/2, 1/3 or 0 by the position of the hit.
    assert map_k(["a", "a", "a", "a"], ["a b c", "b a c", "b c a", "b c d"]) == pytest.approx((1 + 1 / 2 + 1 / 3) / 4)
    # A repeated correct label scores once (humpback's "a a a" example scores 1).
    assert map_k(["a"], ["a a a"]) == 1.0
    # Several true labels: precision at each hit, divided by min(|truth|, K).
    assert map_k(["a b"], ["a x b"]) == pytest.approx((1 + 2 / 3) / 2)
    assert map_k(["a b c d"], ["x a b"]) == pytest.approx((1 / 2 + 2 / 3) / 3)
    # Lists of labels work as well as strings; a blank row scores 0.
    assert map_k(["a", "b"], [["a", "b"], ""]) == pytest.approx(0.5)


def test_top_k_accuracy_and_error() -> None:
    truth, predicted = ["a", "b", "c", "d"], ["x a", "b", "y z", "d c"]
    assert _fn("top_k_accuracy")(truth, predicted) == pytest.approx(0.75)
    assert _fn("top_k_error")(truth, predicted) == pytest.approx(0.25)
    # One label per row: top-1 error is the classification error.
    assert _fn("top_k_error")(Y_CLASSES, P_CLASSES) == pytest.approx(1 - skm.accuracy_score(Y_CLASSES, P_CLASSES))


def test_mean_f_scores_match_sklearn_samples_average() -> None:
    truth = ["a b", "c", "a c d", "b"]
    predicted = ["a", "c d", "a c", "a"]
    binarizer_classes = ["a", "b", "c", "d"]

    def matrix(rows: list[str]) -> np.ndarray:
        return np.array([[c in row.split() for c in binarizer_classes] for row in rows], dtype=int)

    for name, beta in (("mean_f1", 1.0), ("mean_f2", 2.0)):
        expected = skm.fbeta_score(matrix(truth), matrix(predicted), beta=beta, average="samples")
        assert _fn(name)(truth, predicted) == pytest.approx(expected)
    assert _fn("mean_f1")(["", "a"], ["", "b"]) == pytest.approx(0.5)  # empty and rightly empty scores 1


def test_probability_matrices_score_ranking_metrics_by_their_best_classes() -> None:
    classes = ["a", "b", "c", "d"]
    proba = np.array([[0.1, 0.6, 0.2, 0.1], [0.7, 0.1, 0.15, 0.05]])
    # Rankings: "b c a" and "a c b"; the truths "a" and "c" sit third and second.
    assert score_class_probabilities("map_at_k", ["a", "c"], proba, classes) == pytest.approx((1 / 3 + 1 / 2) / 2)
    assert score_class_probabilities("top_k_error", ["d", "a"], proba, classes) == pytest.approx(0.5)
