"""Metrics of several labels per row and of text to text: label-ranking average precision agrees
with scikit-learn's in both its forms, and token accuracy compares the exact text."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import label_ranking_average_precision_score

from agentk.core.metrics import METRICS, get_metric


def _labelled_rows(seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    truth = (rng.random((60, 6)) < 0.3).astype(int)
    truth[truth.sum(axis=1) == 0, 0] = 1  # a row without a true label is scored 1 by convention
    scores = 0.5 * truth + rng.random(truth.shape)  # distinct scores: no ties
    return truth, scores


def test_lrap_of_score_matrices_is_scikit_learns() -> None:
    truth, scores = _labelled_rows(0)
    assert METRICS["lrap"].fn(truth, scores) == pytest.approx(label_ranking_average_precision_score(truth, scores))
    assert METRICS["lrap"].fn(truth, truth + 0.0) == pytest.approx(1.0)


def test_lrap_of_ranked_label_lists_equals_the_matrix_form() -> None:
    truth, scores = _labelled_rows(1)
    names = np.array(["a", "b", "c", "d", "e", "f"])
    true_sets = [" ".join(names[row == 1]) for row in truth]
    ranked = [" ".join(names[np.argsort(-row)]) for row in scores]
    assert METRICS["lrap"].fn(true_sets, ranked) == pytest.approx(label_ranking_average_precision_score(truth, scores))


def test_lrap_known_values_and_unlisted_labels() -> None:
    lrap = METRICS["lrap"].fn
    # True {a, c}: a at rank 1 (1/1), c at rank 3 (2/3): (1 + 2/3) / 2.
    assert lrap(["a c"], ["a b c"]) == pytest.approx(5 / 6)
    assert lrap(["c"], ["a b"]) == 0.0  # a true label never ranked earns nothing
    assert get_metric("label ranking average precision").name == "lrap"


def test_token_accuracy_compares_the_exact_text() -> None:
    accuracy = METRICS["token_accuracy"].fn
    truth = ["twelve", "b b c", "None", "the", "1.0"]
    assert accuracy(truth, list(truth)) == 1.0
    # The case, a number's spelling and a word that reads like a missing value all count.
    assert accuracy(truth, ["twelve", "B B C", "None", "The", "1"]) == pytest.approx(2 / 5)
    assert accuracy(np.array(truth, dtype=object), np.array(["twelve", "b b c", "nan", "the", "1.0"], dtype=object)) == 0.8


def test_auc_is_scikit_learns_with_ties_and_fails_alike() -> None:
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(4)
    for n in (2, 7, 300):
        y = rng.integers(0, 2, n)
        y[:2] = [0, 1]
        for scores in (rng.random(n), rng.integers(0, 4, n).astype(float)):  # ties in the second
            assert METRICS["auc"].fn(y, scores) == pytest.approx(roc_auc_score(y, scores), abs=1e-12)
    with pytest.raises(ValueError):
        METRICS["auc"].fn([1, 1, 1], [0.2, 0.4, 0.1])
    with pytest.raises(ValueError):
        METRICS["auc"].fn([0, 1], [np.nan, 0.3])


def test_the_grader_ranks_a_rows_label_columns_together_for_lrap() -> None:
    import pandas as pd

    from agentk.grading import grade_submission
    from agentk.sources.base import GradingFacts

    truth, scores = _labelled_rows(5)
    labels = [f"tag{i}" for i in range(truth.shape[1])]
    ids = [f"clip{i}.wav" for i in range(len(truth))]
    answers = pd.DataFrame(truth.astype(str), columns=labels).assign(fname=ids)
    submission = pd.DataFrame(scores.round(6).astype(str), columns=labels).assign(fname=ids)
    facts = GradingFacts(metric="lrap", higher_is_better=True, id_column="fname", target_columns=tuple(labels))
    report = grade_submission(submission, answers, facts)
    assert report.valid and report.score == pytest.approx(label_ranking_average_precision_score(truth, scores.round(6)))
