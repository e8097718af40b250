"""The grader with the newer metric kinds: correlations, Gini, rankings and label sets."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from sklearn.metrics import roc_auc_score

from agentk.grading import grade_submission
from agentk.sources.base import GradingFacts


def _facts(metric: str, higher: bool, target: str = "target") -> GradingFacts:
    return GradingFacts(metric=metric, higher_is_better=higher, id_column="id", target_columns=(target,))


def test_value_kind_pearson_grades() -> None:
    rng = np.random.default_rng(0)
    answers = pd.DataFrame({"id": range(100), "target": rng.normal(size=100)})
    submission = answers.assign(target=answers["target"] + rng.normal(size=100)).sample(frac=1, random_state=1)
    report = grade_submission(submission, answers, _facts("pearson", True))
    assert report.valid
    aligned = submission.set_index("id").loc[answers["id"], "target"]
    assert report.score == pytest.approx(stats.pearsonr(answers["target"], aligned)[0])


def test_proba_kind_gini_grades() -> None:
    rng = np.random.default_rng(1)
    y = rng.integers(0, 2, size=200)
    p = np.clip(0.3 * y + 0.7 * rng.random(200), 0, 1)
    answers = pd.DataFrame({"id": range(200), "target": y})
    report = grade_submission(pd.DataFrame({"id": range(200), "target": p}), answers, _facts("gini", True))
    assert report.valid and report.score == pytest.approx(2 * roc_auc_score(y, p) - 1)


def test_ranking_kind_grades_space_separated_labels_read_from_csv() -> None:
    answers = pd.DataFrame({"id": [1, 2, 3, 4], "Id": ["w_a", "new_whale", "w_b", "w_c"]})
    csv = "id,Id\n1,w_a new_whale w_x\n2,w_a new_whale w_x\n3,w_x w_y w_b\n4,\n"
    submission = pd.read_csv(io.StringIO(csv), dtype={"id": str})
    report = grade_submission(submission, answers, _facts("map_at_k", True, "Id"))
    assert report.valid, report.error
    assert report.score == pytest.approx((1 + 1 / 2 + 1 / 3 + 0) / 4)  # the blank row scores 0
    error = grade_submission(submission, answers, _facts("top_k_error", False, "Id"))
    assert error.valid and error.score == pytest.approx(0.25)


def test_label_set_kind_grades_multilabel_rows() -> None:
    answers = pd.DataFrame({"id": [1, 2], "labels": ["a b", "c"]})
    submission = pd.DataFrame({"id": [2, 1], "labels": ["c d", "a b"]})
    report = grade_submission(submission, answers, _facts("mean_f1", True, "labels"))
    assert report.valid and report.score == pytest.approx((1 + 2 / 3) / 2)
