"""The metric functions, one signature for all: `fn(y_true, y_pred) -> float` (see the package docstring)."""

from __future__ import annotations

import importlib
from typing import Any, Callable

import numpy as np
import pandas as pd

from agentk.core.metrics.labels import label_list, normalise_labels

# Kaggle's log-loss clipping bound.
PROBA_EPS = 1e-15
# rmse_log takes log(prediction); a non-positive prediction is floored here rather than crashing.
LOG_FLOOR = 1e-9

MetricFn = Callable[[Any, Any], float]


def library(module: str, name: str) -> Callable[..., Any]:
    """`module.name`, imported on the first call: sklearn.metrics and scipy.stats take 2-3 s to
    import on two cores, and every sandboxed setup stage imports the metrics, most never scoring."""

    def call(*args: Any, **kwargs: Any) -> Any:
        return getattr(importlib.import_module(module), name)(*args, **kwargs)

    return call


def sk(name: str) -> Callable[..., Any]:
    return library("sklearn.metrics", name)


def _labels(y_true: Any, y_pred: Any) -> tuple[np.ndarray, np.ndarray]:
    return normalise_labels(y_true), normalise_labels(y_pred)


def floats(values: Any) -> np.ndarray:
    return np.asarray(values, dtype=float).ravel()


def label_metric(sk_fn: Callable[..., Any], **kwargs: Any) -> MetricFn:
    def fn(y_true: Any, y_pred: Any) -> float:
        return float(sk_fn(*_labels(y_true, y_pred), **kwargs))

    return fn


def value_metric(sk_fn: Callable[..., Any]) -> MetricFn:
    def fn(y_true: Any, y_pred: Any) -> float:
        return float(sk_fn(floats(y_true), floats(y_pred)))

    return fn


# ---------------------------------------------------------------------------------------------
# Label metrics


def _same_length(t: np.ndarray, p: np.ndarray) -> None:
    if len(t) != len(p):
        raise ValueError(f"{len(t)} answers and {len(p)} predictions")


def accuracy(y_true: Any, y_pred: Any) -> float:
    """scikit-learn's accuracy_score, in numpy: the commonest metric should not cost every
    setup stage and grader that scores with it scikit-learn's import (3 s of CPU)."""
    t, p = _labels(y_true, y_pred)
    _same_length(t, p)
    return float(np.mean(t == p)) if len(t) else float("nan")


def _errors(y_true: Any, y_pred: Any) -> np.ndarray:
    t, p = floats(y_true), floats(y_pred)
    _same_length(t, p)
    if not (np.isfinite(t).all() and np.isfinite(p).all()):
        raise ValueError("Input contains NaN or infinity.")
    return t - p


def mse(y_true: Any, y_pred: Any) -> float:
    return float(np.mean(_errors(y_true, y_pred) ** 2))


def rmse(y_true: Any, y_pred: Any) -> float:
    return float(np.sqrt(mse(y_true, y_pred)))


def mae(y_true: Any, y_pred: Any) -> float:
    return float(np.mean(np.abs(_errors(y_true, y_pred))))




def _f1_positive(y_true: np.ndarray, y_pred: np.ndarray) -> str:
    """The positive class for binary F1: "1"/"true" if seen, else the minority class of y_true.

    Kaggle's binary F1 competitions label the positive class 1 (or True); when they do not,
    the rarer class is almost always the one of interest. Ties go to the first label in sorted order.
    """
    seen = set(y_true) | set(y_pred)
    for candidate in ("1", "true"):
        if candidate in seen:
            return candidate
    classes, counts = np.unique(y_true.astype(str), return_counts=True)
    return str(classes[int(np.argmin(counts))])


def f1(y_true: Any, y_pred: Any) -> float:
    t, p = _labels(y_true, y_pred)
    if len(set(t) | set(p)) > 2:
        # Binary F1 is undefined here; macro is what Kaggle's multi-class "F1" means.
        return macro_f1(t, p)
    return float(sk("f1_score")(t, p, pos_label=_f1_positive(t, p), average="binary", zero_division=0))


def macro_f1(y_true: Any, y_pred: Any) -> float:
    return float(sk("f1_score")(*_labels(y_true, y_pred), average="macro", zero_division=0))


def _ints(values: Any) -> np.ndarray:
    try:
        numbers = np.array([float(v) for v in normalise_labels(values)])
    except ValueError as exc:
        raise ValueError(f"ordinal labels must be numbers ({exc})") from None
    return np.rint(numbers).astype(int)


def kappa(weights: str) -> MetricFn:
    """Cohen's kappa on ordinal labels; predictions are rounded to the nearest integer label."""

    def fn(y_true: Any, y_pred: Any) -> float:
        return float(sk("cohen_kappa_score")(_ints(y_true), _ints(y_pred), weights=weights))

    return fn


# ---------------------------------------------------------------------------------------------
# Probability metrics


def class_indices(y_true: Any, n_classes: int) -> np.ndarray:
    given = np.asarray(y_true)
    if given.dtype.kind in "iub":
        idx = given.ravel().astype(int)  # already indices (or booleans): what the labels would normalise to
    else:
        codes, keys = pd.factorize(normalise_labels(y_true))
        try:
            idx = np.array([int({"true": "1", "false": "0"}.get(k, k)) for k in keys] or [0], dtype=int)[codes]
        except ValueError:
            raise ValueError("proba metrics take y_true as class indices 0..K-1") from None
    if len(idx) and (idx.min() < 0 or idx.max() >= n_classes):
        raise ValueError(f"class index out of range for {n_classes} probability columns")
    return idx


def _proba_matrix(y_pred: Any) -> np.ndarray:
    # Kaggle clips to [eps, 1 - eps], then rescales each row to sum to one.
    p = np.clip(np.asarray(y_pred, dtype=float), PROBA_EPS, 1 - PROBA_EPS)
    if p.ndim == 1:
        return np.column_stack([1 - p, p])
    return p / p.sum(axis=1, keepdims=True)


def log_loss(y_true: Any, y_pred: Any) -> float:
    p = _proba_matrix(y_pred)
    return _mean_log_loss(class_indices(y_true, p.shape[1]), p)


def class_log_loss(indices: np.ndarray, y_pred: Any) -> float:
    """`log_loss` of integer class indices 0..K-1, skipping the label normalisation: for the
    solver's inner loops (surrogate ranking, blend weights), which already hold indices."""
    return _mean_log_loss(np.asarray(indices, dtype=int), _proba_matrix(y_pred))


def _mean_log_loss(indices: np.ndarray, p: np.ndarray) -> float:
    return float(-np.mean(np.log(p[np.arange(len(indices)), indices])))


def auc(y_true: Any, y_pred: Any) -> float:
    p = np.asarray(y_pred, dtype=float)
    n_classes = 2 if p.ndim == 1 else p.shape[1]
    idx = class_indices(y_true, n_classes)
    if p.ndim == 2 and n_classes == 2:
        p = p[:, 1]
    if p.ndim == 1:
        return binary_auc(idx, p)
    return macro_auc(np.eye(n_classes, dtype=bool)[idx], _proba_matrix(p))


def macro_auc(truth: Any, scores: Any) -> float:
    """The mean ROC AUC of the columns of a 0/1 matrix that hold both classes (one vs rest): a class
    no row holds has no ranking to score and is left out, as BirdCLEF's macro AUC leaves it. With
    every class present this is scikit-learn's one-vs-rest macro AUC."""
    t, s = np.asarray(truth).astype(bool), np.asarray(scores, dtype=float)
    if t.shape != s.shape or t.ndim != 2:
        raise ValueError(f"truth {t.shape} and scores {s.shape} must be matrices of one shape")
    present = [j for j in range(t.shape[1]) if 0 < int(t[:, j].sum()) < len(t)]
    if not present:
        raise ValueError("Only one class present in y_true in every column. ROC AUC score is not defined in that case.")
    return float(np.mean([binary_auc(t[:, j], s[:, j]) for j in present]))


def binary_auc(positive: np.ndarray, scores: np.ndarray) -> float:
    """ROC AUC of 0/1 labels as the Mann-Whitney statistic (tied scores share their mean rank),
    which is scikit-learn's value: computed here in numpy because the solver scores every
    candidate, calibration step and label column with it, and sklearn's input validation cost
    more than the ranking itself (six labels: half a solve's time)."""
    y = np.asarray(positive).astype(bool)
    s = np.asarray(scores, dtype=float)
    if not np.isfinite(s).all():
        raise ValueError("Input contains NaN or infinity.")
    n_pos = int(y.sum())
    n_neg = len(y) - n_pos
    if n_pos == 0 or n_neg == 0:
        raise ValueError("Only one class present in y_true. ROC AUC score is not defined in that case.")
    order = np.argsort(s, kind="mergesort")
    _, inverse, counts = np.unique(s[order], return_inverse=True, return_counts=True)
    ends = np.cumsum(counts)
    ranks = np.empty(len(s))
    ranks[order] = (ends - (counts - 1) / 2.0)[inverse]
    return float((ranks[y].sum() - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg))


def gini(y_true: Any, y_pred: Any) -> float:
    """Kaggle's normalised Gini: the Gini of the predictions over that of a perfect ordering,
    which for a 0/1 target is exactly 2 * AUC - 1."""
    return 2 * auc(y_true, y_pred) - 1


def padded_cmap(y_true: Any, y_pred: Any, padding: int = 5) -> float:
    """BirdCLEF 2023's padded cmAP: scikit-learn's macro average precision over the class columns
    after `padding` rows that hold every class, scored 1, are added to truth and predictions alike,
    so a class no row holds still scores and a rare one is penalised less. A 1-D prediction is one
    column (P of the positive class); a grade over several columns averages them, the same macro."""
    p = np.asarray(y_pred, dtype=float)
    if p.ndim == 2 and p.shape[1] == 2:
        p = p[:, 1]
    k = 1 if p.ndim == 1 else p.shape[1]
    idx = class_indices(y_true, 2 if k == 1 else k)
    truth = idx[:, None] if k == 1 else np.eye(k, dtype=int)[idx]
    if not np.isfinite(p).all():
        raise ValueError("Input contains NaN or infinity.")
    truth = np.vstack([truth, np.ones((padding, k), dtype=int)])
    scores = np.vstack([p.reshape(len(idx), k), np.ones((padding, k))])
    return float(sk("average_precision_score")(truth, scores, average="macro"))


def brier(y_true: Any, y_pred: Any) -> float:
    """Mean squared error of the probabilities; with K columns, summed over classes per row
    (Brier's original definition), so the binary case is not double-counted."""
    p = np.asarray(y_pred, dtype=float)
    if p.ndim == 1:
        return float(np.mean((p - class_indices(y_true, 2)) ** 2))
    onehot = np.eye(p.shape[1])[class_indices(y_true, p.shape[1])]
    return float(np.mean(np.sum((p - onehot) ** 2, axis=1)))


# ---------------------------------------------------------------------------------------------
# Value metrics


def _positive_truth(y_true: Any, name: str, strict: bool) -> np.ndarray:
    t = floats(y_true)
    if (t <= 0).any() if strict else (t < 0).any():
        raise ValueError(f"{name} needs {'positive' if strict else 'non-negative'} true values")
    return t


def rmse_log(y_true: Any, y_pred: Any) -> float:
    t = _positive_truth(y_true, "rmse_log", strict=True)
    p = np.clip(floats(y_pred), LOG_FLOOR, None)
    return float(np.sqrt(np.mean((np.log(p) - np.log(t)) ** 2)))


def msle(y_true: Any, y_pred: Any) -> float:
    # Negative predictions are clipped to zero (Kaggle's scorer would reject them; a model's
    # stray negative value should cost, not crash).
    t = _positive_truth(y_true, "msle", strict=False)
    p = np.clip(floats(y_pred), 0, None)
    return float(np.mean((np.log1p(p) - np.log1p(t)) ** 2))


def rmsle(y_true: Any, y_pred: Any) -> float:
    return float(np.sqrt(msle(y_true, y_pred)))


def smape(y_true: Any, y_pred: Any) -> float:
    """Symmetric MAPE in percent (0..200) as Kaggle computes it: a row where truth and
    prediction are both 0 counts as 0."""
    t, p = floats(y_true), floats(y_pred)
    denominator = np.abs(t) + np.abs(p)
    ratio = np.divide(2 * np.abs(p - t), denominator, out=np.zeros_like(t), where=denominator != 0)
    return float(100 * np.mean(ratio))


def rmspe(y_true: Any, y_pred: Any) -> float:
    t, p = floats(y_true), floats(y_pred)
    if (t == 0).any():
        raise ValueError("rmspe needs non-zero true values")
    return float(np.sqrt(np.mean(((t - p) / t) ** 2)))


def correlation(scipy_fn: Callable[..., Any]) -> MetricFn:
    """A correlation coefficient; a constant prediction correlates with nothing and scores 0
    rather than NaN, so it ranks below any informative model."""

    def fn(y_true: Any, y_pred: Any) -> float:
        t, p = floats(y_true), floats(y_pred)
        if np.ptp(t) == 0 or np.ptp(p) == 0:
            return 0.0
        return float(scipy_fn(t, p)[0])

    return fn


pearson = correlation(library("scipy.stats", "pearsonr"))
spearman = correlation(library("scipy.stats", "spearmanr"))
kendall_tau = correlation(library("scipy.stats", "kendalltau"))


# ---------------------------------------------------------------------------------------------
# Ranking metrics: y_pred rows are ordered label lists, y_true rows a label or a set of labels


def _rows(y_true: Any, y_pred: Any) -> tuple[list[list[str]], list[list[str]]]:
    truth = [label_list(v) for v in np.asarray(y_true, dtype=object).ravel()]
    predicted = [label_list(v) for v in _row_values(y_pred)]
    if len(truth) != len(predicted):
        raise ValueError(f"{len(truth)} true rows but {len(predicted)} predicted rows")
    return truth, predicted


def _row_values(y_pred: Any) -> list[Any]:
    # A list of lists is one ranking per row; np.asarray would turn equal-length lists into a matrix.
    if isinstance(y_pred, (list, tuple)):
        return list(y_pred)
    return list(np.asarray(y_pred, dtype=object).ravel())


def _average_precision(actual: set[str], predicted: list[str], k: int) -> float:
    """Kaggle's AP@K: a repeated correct label scores once; divided by min(|actual|, K)."""
    if not actual or k == 0:
        return 0.0
    hits, total, seen = 0, 0.0, set()
    for rank, label in enumerate(predicted[:k], start=1):
        if label in actual and label not in seen:
            hits += 1
            total += hits / rank
        seen.add(label)
    return total / min(len(actual), k)


def map_at_k(y_true: Any, y_pred: Any) -> float:
    """Mean average precision at K, with K the longest list submitted (Kaggle cuts submissions
    at K, so a well-formed submission gives exactly K labels per row)."""
    truth, predicted = _rows(y_true, y_pred)
    k = max((len(p) for p in predicted), default=0)
    return float(np.mean([_average_precision(set(t), p, k) for t, p in zip(truth, predicted)]))


def top_k_accuracy(y_true: Any, y_pred: Any) -> float:
    """Share of rows where any of the submitted labels is a true label."""
    truth, predicted = _rows(y_true, y_pred)
    return float(np.mean([bool(set(t) & set(p)) for t, p in zip(truth, predicted)]))


def top_k_error(y_true: Any, y_pred: Any) -> float:
    """Kaggle's mean best error at K: per row 0 if any submitted label is right, else 1."""
    return 1.0 - top_k_accuracy(y_true, y_pred)


def _f_beta(actual: set[str], predicted: set[str], beta: float) -> float:
    if not actual and not predicted:
        return 1.0  # nothing to find and nothing claimed: a perfect row
    hits = len(actual & predicted)
    if hits == 0:
        return 0.0
    precision, recall = hits / len(predicted), hits / len(actual)
    return (1 + beta**2) * precision * recall / (beta**2 * precision + recall)


def mean_f_beta(beta: float) -> MetricFn:
    """Example-based F-beta of multi-label rows (a set of labels each), averaged over rows."""

    def fn(y_true: Any, y_pred: Any) -> float:
        truth, predicted = _rows(y_true, y_pred)
        return float(np.mean([_f_beta(set(t), set(p), beta) for t, p in zip(truth, predicted)]))

    return fn


def label_ranking_average_precision(y_true: Any, y_pred: Any) -> float:
    """LRAP: per row, for each true label, the share of true labels among those ranked at or above
    it, averaged over the true labels and then the rows (a row with no true label scores 1).

    Either matrices (0/1 truth and a score per label column, scikit-learn's form) or label lists
    (truth: a set per row; prediction: labels best first, an unlisted label ranked below all).
    """
    scores = np.asarray(y_pred, dtype=object) if not isinstance(y_pred, (list, tuple)) else None
    if scores is not None and scores.ndim == 2:
        matrix = np.asarray(y_true, dtype=float), np.asarray(y_pred, dtype=float)
        return float(sk("label_ranking_average_precision_score")(*matrix))
    truth, predicted = _rows(y_true, y_pred)
    return float(np.mean([_ranked_precision(set(t), p) for t, p in zip(truth, predicted)]))


def _ranked_precision(actual: set[str], predicted: list[str]) -> float:
    if not actual:
        return 1.0
    rank = {}
    for label in predicted:
        rank.setdefault(label, len(rank) + 1)  # a repeated label keeps its first place
    placed = sorted(rank[label] for label in actual if label in rank)
    # The i-th true label found (1-based) at rank r: i of the r labels at or above it are true.
    return sum((i + 1) / r for i, r in enumerate(placed)) / len(actual)


def exact_text_accuracy(y_true: Any, y_pred: Any) -> float:
    """Share of rows whose predicted text is the true text exactly (text to text: "12" is not
    "twelve", "The" is not "the"); only surrounding spaces are ignored."""
    truth = pd.Series(np.asarray(y_true, dtype=object).ravel()).astype(str).str.strip()
    predicted = pd.Series(np.asarray(y_pred, dtype=object).ravel()).astype(str).str.strip()
    if len(truth) != len(predicted):
        raise ValueError(f"{len(truth)} true rows but {len(predicted)} predicted rows")
    # Compared as the Arrow text they are now: back in Python objects, ten million cells cost seconds.
    return float((truth == predicted).to_numpy(dtype=bool).mean()) if len(truth) else 0.0
