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


def test_macro_auc_leaves_out_the_classes_no_row_holds() -> None:
    """BirdCLEF's macro AUC: with every class present it is scikit-learn's one-vs-rest macro AUC;
    a class no row holds is left out whatever its scores; each column is ranked on its own."""
    from sklearn.metrics import roc_auc_score

    from agentk.core.metrics.functions import macro_auc

    rng = np.random.default_rng(6)
    labels = rng.integers(0, 4, 200)
    scores = rng.random((200, 4)) + 0.6 * np.eye(4)[labels]
    proba = scores / scores.sum(axis=1, keepdims=True)
    expected = roc_auc_score(labels, proba, multi_class="ovr", labels=[0, 1, 2, 3])
    assert METRICS["auc"].fn(labels, proba) == pytest.approx(expected, abs=1e-12)
    truth = np.eye(5, dtype=int)[labels]  # a fifth class no row holds
    wide = np.column_stack([scores, rng.random(200)])
    assert macro_auc(truth, wide) == pytest.approx(np.mean([roc_auc_score(truth[:, j], wide[:, j]) for j in range(4)]))
    assert macro_auc(truth, np.column_stack([scores, -wide[:, 4]])) == macro_auc(truth, wide)
    # A monotone change of one column's scores keeps every ranking, so the score.
    assert macro_auc(truth, np.column_stack([np.exp(3 * scores[:, :1]), wide[:, 1:]])) == pytest.approx(macro_auc(truth, wide))
    with pytest.raises(ValueError):
        macro_auc(np.zeros((5, 2)), rng.random((5, 2)))


def test_the_grader_skips_label_columns_without_both_classes_for_auc() -> None:
    import pandas as pd

    from agentk.core.errors import GradingError
    from agentk.grading import grade_note, grade_submission
    from agentk.sources.base import GradingFacts

    truth, scores = _labelled_rows(7)
    truth[:, 5] = 0  # a species never heard in the test
    labels = [f"bird{i}" for i in range(truth.shape[1])]
    ids = [f"soundscape_1_{5 * (i + 1)}" for i in range(len(truth))]
    answers = pd.DataFrame(truth, columns=labels).assign(row_id=ids)
    submission = pd.DataFrame(scores, columns=labels).assign(row_id=ids)
    facts = GradingFacts(metric="auc", higher_is_better=True, id_column="row_id", target_columns=tuple(labels))
    report = grade_submission(submission, answers, facts)
    expected = np.mean([METRICS["auc"].fn(truth[:, j], scores[:, j]) for j in range(5)])
    assert report.valid and report.score == pytest.approx(expected) and report.columns_skipped == 1
    assert "1 label column(s) hold one class" in (grade_note(report) or "")
    # Log loss scores a one-class column like any other.
    loss = grade_submission(submission.assign(**{c: 0.5 for c in labels}), answers,
                            GradingFacts(metric="logloss", higher_is_better=False, id_column="row_id",
                                         target_columns=tuple(labels)))
    assert loss.valid and loss.columns_skipped == 0 and loss.score == pytest.approx(np.log(2))
    with pytest.raises(GradingError, match="holds both classes"):
        grade_submission(submission, answers.assign(**{c: 0 for c in labels}), facts)


def test_padded_cmap_is_birdclefs_and_the_grader_averages_it_over_columns() -> None:
    """BirdCLEF 2023's reference: five rows of ones padded under truth and submission, then
    scikit-learn's macro average precision; a class no row holds still scores (its padding)."""
    import pandas as pd
    from sklearn.metrics import average_precision_score

    from agentk.core.metrics import infer_metric
    from agentk.grading import grade_submission
    from agentk.sources.base import GradingFacts

    truth, scores = _labelled_rows(8)
    truth[:, 2] = 0
    reference = average_precision_score(np.vstack([truth, np.ones((5, 6))]), np.vstack([scores, np.ones((5, 6))]),
                                        average="macro")
    labels = [f"bird{i}" for i in range(6)]
    facts = GradingFacts(metric="padded_cmap", higher_is_better=True, id_column="row_id", target_columns=tuple(labels))
    ids = [f"s_{5 * (i + 1)}" for i in range(len(truth))]
    report = grade_submission(pd.DataFrame(scores, columns=labels).assign(row_id=ids),
                              pd.DataFrame(truth, columns=labels).assign(row_id=ids), facts)
    assert report.valid and report.score == pytest.approx(reference) and report.columns_skipped == 0
    assert METRICS["padded_cmap"].fn(truth[:, 0], scores[:, 0]) == pytest.approx(
        average_precision_score(np.r_[truth[:, 0], [1] * 5], np.r_[scores[:, 0], [1.0] * 5]))
    # One class per row (the solver's windows): the matrix form one-hot encodes the truth.
    classes = np.argmax(scores + np.random.default_rng(0).random(scores.shape), axis=1)
    onehot = np.eye(6, dtype=int)[classes]
    assert METRICS["padded_cmap"].fn(classes, scores) == pytest.approx(average_precision_score(
        np.vstack([onehot, np.ones((5, 6))]), np.vstack([scores, np.ones((5, 6))]), average="macro"))
    assert METRICS["padded_cmap"].fn(classes, onehot + 0.0) == pytest.approx(1.0)
    page = "## Evaluation\nThe evaluation metric for this contest is padded cmAP, a derivative of the macro-averaged average precision score."
    assert infer_metric(page).name == "padded_cmap"
