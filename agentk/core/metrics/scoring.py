"""Scoring labels, class probabilities and prediction frames in their raw form."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import pandas as pd

from agentk.core.metrics.functions import floats
from agentk.core.metrics.labels import normalise_ids, normalise_labels
from agentk.core.metrics.registry import COLUMN_RANKINGS, get_metric
from agentk.core.metrics.scaled_errors import context_of
from agentk.core.metrics.spatial import aligned_groups

# How many classes, best first, a probability matrix submits to a ranking metric: the K of most
# Kaggle MAP@K / top-K classification competitions.
RANKING_DEPTH = 3


def _binary_positive(keys: Sequence[str]) -> int | None:
    for candidate in ("1", "true"):
        if candidate in keys:
            return list(keys).index(candidate)
    return None


def _ranked(keys: Sequence[str], p: np.ndarray) -> np.ndarray:
    order = np.argsort(-p, axis=1, kind="stable")[:, :RANKING_DEPTH]
    return np.array([" ".join(keys[j] for j in row) for row in order], dtype=object)


def score_class_probabilities(name: str, y_true: Any, proba: Any, classes: Sequence[Any]) -> float:
    """Score raw true labels against an (n, K) probability matrix whose columns are `classes`.

    Label metrics score the arg-max class, ranking metrics the `RANKING_DEPTH` most probable
    classes. With two classes the positive class (for AUC) is the one that normalises to 1/true,
    else the second column.
    """
    metric = get_metric(name)
    if metric.kind == "value" or metric.spatial:
        raise ValueError(f"{metric.name} scores {'values' if metric.kind == 'value' else metric.kind + ' strings'}, "
                         "not class probabilities")
    keys = list(normalise_labels(list(classes)))
    if len(set(keys)) != len(keys):
        raise ValueError(f"duplicate class columns: {list(classes)}")
    p = np.asarray(proba, dtype=float)
    # Ranking truth may be a set of labels per row (or blank), which only the metric can read.
    truth = np.asarray(y_true, dtype=object).ravel() if metric.kind == "ranking" else normalise_labels(y_true)
    if p.shape != (len(truth), len(keys)):
        raise ValueError(f"probability matrix has shape {p.shape}, expected {(len(truth), len(keys))}")
    if metric.kind == "label":
        return metric.fn(truth, np.asarray(keys, dtype=object)[p.argmax(axis=1)])
    if metric.kind == "ranking":
        return metric.fn(truth, _ranked(keys, p))
    position = {k: i for i, k in enumerate(keys)}
    unknown = sorted(set(pd.unique(truth)) - position.keys())
    if unknown:
        raise ValueError(f"no probability column for class(es) {', '.join(unknown[:5])}")
    idx = pd.Index(keys).get_indexer(truth)
    if len(keys) == 2:
        positive = _binary_positive(keys)
        if positive == 0:  # put the positive class second, where binary metrics expect it
            p, idx = p[:, ::-1], 1 - idx
    return metric.fn(idx, p)
def scored_columns(name: str, answers: pd.DataFrame, columns: Sequence[str]) -> list[str]:
    """The label columns a score averages: of several ranked one by one (`COLUMN_RANKINGS`), those
    whose answers hold both classes, as no prediction can be ranked on the others; ValueError when
    none does."""
    columns = list(columns)
    if get_metric(name).name not in COLUMN_RANKINGS or len(columns) < 2:
        return columns
    ranked = [c for c in columns if len(set(normalise_labels(answers[c].to_numpy()))) > 1]
    if not ranked:
        raise ValueError(f"no column of {', '.join(columns[:3])}... holds both classes: {name} ranks none")
    return ranked


def score_positive_probability(name: str, y_true: Any, p_positive: Any) -> float:
    """Score a proba metric from binary labels (0/1 or false/true) and P(positive) per row."""
    metric = get_metric(name)
    truth = normalise_labels(y_true)
    seen = set(truth)
    if not (seen <= {"0", "1"} or seen <= {"false", "true"}):
        raise ValueError(f"cannot tell the positive class among labels {sorted(seen)[:5]}")
    if metric.kind != "proba":
        raise ValueError(f"{metric.name} does not score probabilities")
    return metric.fn(np.isin(truth, ["1", "true"]).astype(int), floats(p_positive))


def score_prediction_frame(
    name: str, y_true: pd.DataFrame, y_pred: pd.DataFrame, target_columns: Sequence[str], pooled: bool = False
) -> float:
    """Score a prediction frame (see docs/architecture.md) against `id` + raw target columns.

    Rows are aligned on `id` (ValueError when the id sets differ); the result is the mean of
    the per-target scores. Image-output metrics (`Metric.spatial`) take an id's rows together
    as one image, so there an id may repeat (one row per object). A value metric scores only the
    cells whose truth is given (several targets may each miss on some rows); `pooled` scores
    those cells of every target together, as a long submission of one value per (row, target)
    pair is scored.
    """
    metric = get_metric(name)
    if metric.spatial:
        true_ids, pred_ids = normalise_ids(y_true["id"]), normalise_ids(y_pred["id"])
        return float(np.mean([metric.fn(*aligned_groups(true_ids, y_true[t].to_numpy(object),
                                                        pred_ids, y_pred[t].to_numpy(object)))
                              for t in target_columns]))
    raw_true, raw_pred = np.asarray(y_true["id"]), np.asarray(y_pred["id"])
    if raw_true.dtype.kind in "iu" and raw_pred.dtype.kind in "iu" and np.array_equal(raw_true, raw_pred):
        # Integer ids in the same order (the solver's row positions): nothing to normalise or align.
        if not pd.Index(raw_true).is_unique:
            raise ValueError("duplicated ids")
        return _mean_score(metric, name, y_true, y_pred.reset_index(drop=True), target_columns, pooled)
    if _same_text_ids(y_true["id"], y_pred["id"]):
        # The same text ids in the same order (a frame scored against its own truth): the rows
        # are aligned already; only a repeated id is wrong.
        stripped = y_true["id"].str.strip()
        if stripped.nunique(dropna=False) != len(stripped):
            raise ValueError("duplicated ids")
        return _mean_score(metric, name, y_true, y_pred.reset_index(drop=True), target_columns, pooled)
    true_ids, pred_ids = normalise_ids(y_true["id"]), normalise_ids(y_pred["id"])
    predicted = pd.Index(pred_ids)
    if not (predicted.is_unique and pd.Index(true_ids).is_unique):
        raise ValueError("duplicated ids")
    rows = predicted.get_indexer(true_ids)
    if len(true_ids) != len(pred_ids) or rows.min(initial=0) < 0:
        raise ValueError(f"ids differ: {len(set(true_ids) - set(pred_ids))} missing, "
                         f"{len(set(pred_ids) - set(true_ids))} unexpected")
    return _mean_score(metric, name, y_true, y_pred.iloc[rows].reset_index(drop=True), target_columns, pooled)


def _same_text_ids(true_ids: pd.Series, pred_ids: pd.Series) -> bool:
    """Both Arrow-backed text without a missing id, equal cell for cell (compared in Arrow: a
    million string ids took seconds to normalise and index)."""
    return (isinstance(true_ids.dtype, pd.StringDtype) and isinstance(pred_ids.dtype, pd.StringDtype)
            and len(true_ids) == len(pred_ids) and not true_ids.isna().any()
            and bool((true_ids.reset_index(drop=True) == pred_ids.reset_index(drop=True)).all()))


def _given(truth: np.ndarray, guess: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The cells whose truth is given (all of them when every one is: the arrays as they are)."""
    known = ~np.isnan(truth)
    return (truth, guess) if known.all() else (truth[known], guess[known])


def _mean_score(metric: Any, name: str, y_true: pd.DataFrame, pred: pd.DataFrame,
                target_columns: Sequence[str], pooled: bool = False) -> float:
    """The mean of the per-target scores of rows already aligned."""
    if metric.kind == "value" and metric.per_series:
        # Scaled per series: every row of a target counts, with its series' scale and weight.
        return float(np.mean([metric.fn(floats(y_true[t]), floats(pred[t]), **context_of(y_true, t))
                              for t in target_columns]))
    if metric.kind == "value":
        cells = [_given(floats(y_true[t]), floats(pred[t])) for t in target_columns]
        if pooled:
            return float(metric.fn(np.concatenate([c[0] for c in cells]), np.concatenate([c[1] for c in cells])))
        return float(np.mean([metric.fn(truth, guess) for truth, guess in cells if len(truth)]))
    scores = []
    for target in scored_columns(name, y_true, target_columns):
        truth = y_true[target].to_numpy()
        prefix = f"{target}__proba__"
        proba_cols = [c for c in pred.columns if str(c).startswith(prefix)]
        if metric.kind == "label" or (metric.kind == "ranking" and not proba_cols):
            scores.append(metric.fn(truth, pred[target].to_numpy()))
        elif proba_cols:
            classes = [str(c)[len(prefix):] for c in proba_cols]
            scores.append(score_class_probabilities(name, truth, pred[proba_cols].to_numpy(float), classes))
        else:
            scores.append(score_positive_probability(name, truth, pred[target]))
    return float(np.mean(scores))
