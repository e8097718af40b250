"""Registry of Kaggle metrics, metric detection from description text, and prediction-frame scoring.

Conventions every metric function follows (`Metric.fn(y_true, y_pred) -> float`):

* ``label`` metrics take raw labels on both sides and compare them after `normalise_labels`,
  so ``True``/``"TRUE"`` and ``1``/``"1.0"`` match as a human would expect.
* ``proba`` metrics take ``y_true`` as class indices ``0..K-1`` (binary: 1 = positive class) and
  ``y_pred`` as a 1-D probability of the positive class or an ``(n, K)`` matrix.
  `score_class_probabilities` maps raw labels and named probability columns onto this form.
* ``value`` metrics take numbers (regression).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Callable, Literal, Sequence

import numpy as np
import pandas as pd
from sklearn import metrics as skm

from agentk.errors import AgentKError

MetricKind = Literal["label", "proba", "value"]

# Kaggle's log-loss clipping bound.
PROBA_EPS = 1e-15
# rmse_log takes log(prediction); a non-positive prediction is floored here rather than crashing.
LOG_FLOOR = 1e-9


class UnknownMetricError(AgentKError):
    """A metric name that is neither a canonical name nor an alias."""


@dataclass(frozen=True)
class Metric:
    name: str
    higher_is_better: bool
    kind: MetricKind
    fn: Callable[[Any, Any], float]
    aliases: tuple[str, ...] = ()


# ---------------------------------------------------------------------------------------------
# Normalisation of labels and ids


_INT_RE = re.compile(r"[+-]?\d+")
_FLOAT_RE = re.compile(r"[+-]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?")


def _number_key(value: float) -> str:
    # Integral numbers compare as integers so 1, 1.0 and "1.0" are one label.
    return str(int(value)) if value.is_integer() else repr(value)


def _normalise_label(value: Any) -> str:
    if isinstance(value, (bool, np.bool_)):
        return "true" if value else "false"
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        return _number_key(float(value))
    text = str(value).strip()
    lowered = text.lower()
    if lowered in ("true", "false"):
        return lowered
    if _INT_RE.fullmatch(text):
        return str(int(text))  # exact even beyond float precision
    if _FLOAT_RE.fullmatch(text):
        return _number_key(float(text))
    if not text:
        raise ValueError("labels contain an empty value")
    # Other strings keep their case: Kaggle compares class names exactly ("EAP" is not "eap").
    return text


def _missing(value: Any) -> bool:
    return value is None or (not isinstance(value, str) and bool(pd.isna(value)))


def normalise_labels(values: Any) -> np.ndarray:
    """Map labels to canonical strings: booleans to "true"/"false", integral numbers to "1", ...

    Raises ValueError on missing values: a label metric cannot score a blank.
    """
    items = np.asarray(values, dtype=object).ravel()
    cache: dict[tuple[type, Any], str] = {}
    out = np.empty(len(items), dtype=object)
    for i, value in enumerate(items):
        if _missing(value):
            raise ValueError("labels contain missing values")
        key = (type(value), value)  # the type keeps True and 1 apart as dict keys
        if key not in cache:
            cache[key] = _normalise_label(value)
        out[i] = cache[key]
    return out


def normalise_ids(values: Any) -> np.ndarray:
    """Ids as comparable strings: 892, 892.0 and " 892" agree; "0013_01" keeps its zeros."""
    out = []
    for value in np.asarray(values, dtype=object).ravel():
        if _missing(value):
            raise ValueError("ids contain missing values")
        if isinstance(value, (bool, np.bool_)):
            out.append(str(bool(value)))
        elif isinstance(value, (int, np.integer)):
            out.append(str(int(value)))
        elif isinstance(value, (float, np.floating)):
            out.append(_number_key(float(value)))
        else:
            out.append(str(value).strip())
    return np.array(out, dtype=object)


# ---------------------------------------------------------------------------------------------
# Metric functions


def _labels(y_true: Any, y_pred: Any) -> tuple[np.ndarray, np.ndarray]:
    return normalise_labels(y_true), normalise_labels(y_pred)


def _floats(values: Any) -> np.ndarray:
    return np.asarray(values, dtype=float).ravel()


def _label_metric(sk_fn: Callable[..., Any]) -> Callable[[Any, Any], float]:
    def fn(y_true: Any, y_pred: Any) -> float:
        return float(sk_fn(*_labels(y_true, y_pred)))

    return fn


def _value_metric(sk_fn: Callable[..., Any]) -> Callable[[Any, Any], float]:
    def fn(y_true: Any, y_pred: Any) -> float:
        return float(sk_fn(_floats(y_true), _floats(y_pred)))

    return fn


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


def _f1(y_true: Any, y_pred: Any) -> float:
    t, p = _labels(y_true, y_pred)
    if len(set(t) | set(p)) > 2:
        # Binary F1 is undefined here; macro is what Kaggle's multi-class "F1" means.
        return _macro_f1(t, p)
    return float(skm.f1_score(t, p, pos_label=_f1_positive(t, p), average="binary", zero_division=0))


def _macro_f1(y_true: Any, y_pred: Any) -> float:
    return float(skm.f1_score(*_labels(y_true, y_pred), average="macro", zero_division=0))


def _ints(values: Any) -> np.ndarray:
    try:
        numbers = np.array([float(v) for v in normalise_labels(values)])
    except ValueError as exc:
        raise ValueError(f"ordinal labels must be numbers ({exc})") from None
    return np.rint(numbers).astype(int)


def _qwk(y_true: Any, y_pred: Any) -> float:
    return float(skm.cohen_kappa_score(_ints(y_true), _ints(y_pred), weights="quadratic"))


def _class_indices(y_true: Any, n_classes: int) -> np.ndarray:
    keys = [{"true": "1", "false": "0"}.get(k, k) for k in normalise_labels(y_true)]
    try:
        idx = np.array([int(k) for k in keys], dtype=int)
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


def _log_loss(y_true: Any, y_pred: Any) -> float:
    p = _proba_matrix(y_pred)
    idx = _class_indices(y_true, p.shape[1])
    return float(-np.mean(np.log(p[np.arange(len(idx)), idx])))


def _auc(y_true: Any, y_pred: Any) -> float:
    p = np.asarray(y_pred, dtype=float)
    n_classes = 2 if p.ndim == 1 else p.shape[1]
    idx = _class_indices(y_true, n_classes)
    if p.ndim == 2 and n_classes == 2:
        p = p[:, 1]
    if p.ndim == 1:
        return float(skm.roc_auc_score(idx, p))
    p = _proba_matrix(p)
    return float(skm.roc_auc_score(idx, p, multi_class="ovr", labels=list(range(n_classes))))


def _rmse_log(y_true: Any, y_pred: Any) -> float:
    t = _floats(y_true)
    if (t <= 0).any():
        raise ValueError("rmse_log needs positive true values")
    p = np.clip(_floats(y_pred), LOG_FLOOR, None)
    return float(np.sqrt(np.mean((np.log(p) - np.log(t)) ** 2)))


def _rmsle(y_true: Any, y_pred: Any) -> float:
    t = _floats(y_true)
    if (t < 0).any():
        raise ValueError("rmsle needs non-negative true values")
    p = np.clip(_floats(y_pred), 0, None)
    return float(np.sqrt(np.mean((np.log1p(p) - np.log1p(t)) ** 2)))


def _m(name: str, higher_is_better: bool, kind: MetricKind, fn: Callable[[Any, Any], float], aliases: str) -> Metric:
    return Metric(name, higher_is_better, kind, fn, tuple(aliases.split()))


_REGISTERED = (
    _m("accuracy", True, "label", _label_metric(skm.accuracy_score),
       "acc classification_accuracy categorization_accuracy"),
    _m("balanced_accuracy", True, "label", _label_metric(skm.balanced_accuracy_score),
       "balanced_accuracy_score bacc"),
    _m("f1", True, "label", _f1, "f1_score f_score fscore f_measure binary_f1"),
    _m("macro_f1", True, "label", _macro_f1, "f1_macro macro_f1_score macro_averaged_f1"),
    _m("mcc", True, "label", _label_metric(skm.matthews_corrcoef),
       "matthews_corrcoef matthews_correlation matthews_correlation_coefficient"),
    _m("quadratic_weighted_kappa", True, "label", _qwk, "qwk kappa weighted_kappa quadratic_kappa cohen_kappa"),
    _m("auc", True, "proba", _auc, "roc_auc auroc roc_auc_score area_under_curve roc"),
    _m("logloss", False, "proba", _log_loss, "log_loss binary_logloss binary_log_loss binary_crossentropy cross_entropy"),
    _m("multiclass_logloss", False, "proba", _log_loss,
       "multi_logloss mlogloss multiclass_log_loss multi_class_log_loss multi_class_logloss categorical_crossentropy"),
    _m("rmse", False, "value", _value_metric(skm.root_mean_squared_error), "root_mean_squared_error"),
    _m("rmse_log", False, "value", _rmse_log, "log_rmse rmse_of_log rmse_of_logs"),
    _m("rmsle", False, "value", _rmsle, "root_mean_squared_log_error root_mean_squared_logarithmic_error"),
    _m("mse", False, "value", _value_metric(skm.mean_squared_error), "mean_squared_error"),
    _m("mae", False, "value", _value_metric(skm.mean_absolute_error), "mean_absolute_error l1"),
    _m("medae", False, "value", _value_metric(skm.median_absolute_error), "median_absolute_error"),
    _m("mape", False, "value", _value_metric(skm.mean_absolute_percentage_error), "mean_absolute_percentage_error"),
    _m("r2", True, "value", _value_metric(skm.r2_score), "r2_score r_squared coefficient_of_determination"),
)
METRICS: dict[str, Metric] = {m.name: m for m in _REGISTERED}
_LOOKUP: dict[str, Metric] = {key: m for m in _REGISTERED for key in (m.name, *m.aliases)}


def _lookup_key(name: str) -> str:
    return re.sub(r"[\s\-]+", "_", name.strip().lower())


def get_metric(name: str) -> Metric:
    """The metric for a canonical name or alias (case-, space- and hyphen-insensitive)."""
    metric = _LOOKUP.get(_lookup_key(name))
    if metric is None:
        raise UnknownMetricError(f"unknown metric {name!r}; known metrics: {', '.join(sorted(METRICS))}")
    return metric


def for_task(name: str, n_classes: int | None) -> str:
    """Canonical metric name adjusted to the number of classes (plain log loss / F1 on >2 classes)."""
    canonical = get_metric(name).name
    if n_classes is not None and n_classes > 2:
        return {"logloss": "multiclass_logloss", "f1": "macro_f1"}.get(canonical, canonical)
    return canonical


def better(a: float, b: float, higher_is_better: bool) -> bool:
    """True when score a is strictly better than b; NaN is never better and anything beats NaN."""
    if math.isnan(a):
        return False
    if math.isnan(b):
        return True
    return a > b if higher_is_better else a < b


# ---------------------------------------------------------------------------------------------
# Detecting the metric from a description


_HEADING_RE = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_EVAL_HEADING_RE = re.compile(r"evaluat|metric", re.IGNORECASE)
_SCORING_HINT_RE = re.compile(r"evaluat|scored|metric|leaderboard", re.IGNORECASE)

# Most specific first: "root mean squared logarithmic error" must win over "mean squared error",
# "multi-class log loss" over "log loss", "balanced accuracy" over "accuracy".
# Matched against lower-case text with hyphens/underscores turned into spaces.
_PATTERNS: tuple[tuple[str, str], ...] = (
    ("rmsle", r"root mean squared? log(arithmic)? error|\brmsle\b"),
    ("rmse_log", r"(root mean squared? error|\brmse\b)( \(rmse\))? (between|of|on) (the )?(natural )?log"),
    ("quadratic_weighted_kappa", r"quadratic(ally)? weighted (cohen'?s )?kappa|\bqwk\b|weighted kappa|cohen'?s kappa"),
    ("mcc", r"matthews'? correlation|\bmcc\b"),
    ("multiclass_logloss", r"multi ?class [a-z ]{0,30}?(log(arithmic)? ?loss|cross ?entropy)|categorical cross ?entropy"),
    ("macro_f1", r"macro (averaged )?f ?1\b|\bf ?1 (score )?\(?macro|macro f (score|measure)"),
    ("balanced_accuracy", r"balanced accuracy"),
    ("auc", r"area under (the )?(roc|receiver operating characteristic)|\broc\b|\bauc\b|\bauroc\b"),
    ("logloss", r"\blog(arithmic)? ?loss\b|cross ?entropy"),
    ("f1", r"\bf ?1\b|\bf (score|measure)\b"),
    ("mape", r"mean absolute percentage error|\bmape\b"),
    ("medae", r"median absolute error"),
    ("mae", r"mean absolute error|\bmae\b"),
    ("rmse", r"root mean squared? error|\brmse\b"),
    ("mse", r"mean squared? error|\bmse\b"),
    ("r2", r"coefficient of determination|\br ?squared\b|\br2\b|\br\^2|r²"),
    ("accuracy", r"\baccuracy\b|(percentage|proportion|fraction) of [^.]{0,60}\bcorrect(ly)?\b"),
)
_COMPILED = tuple((name, re.compile(pattern)) for name, pattern in _PATTERNS)


def _headings(lines: list[str]) -> list[tuple[int, int, str]]:
    """(line index, level, text) of markdown headings outside fenced code blocks."""
    found, in_fence = [], False
    for i, line in enumerate(lines):
        if line.lstrip().startswith(("```", "~~~")):
            in_fence = not in_fence
            continue
        match = None if in_fence else _HEADING_RE.match(line)
        if match:
            found.append((i, len(match.group(1)), match.group(2)))
    return found


def evaluation_section(description: str) -> str | None:
    """The first "Evaluation"/"Metric" section (heading included, up to the next heading of the
    same or higher level), or None when the description has no such heading."""
    lines = description.splitlines()
    heads = _headings(lines)
    for k, (start, level, text) in enumerate(heads):
        if _EVAL_HEADING_RE.search(text):
            end = next((i for i, lv, _ in heads[k + 1 :] if lv <= level), len(lines))
            return "\n".join(lines[start:end])
    return None


def _plain(text: str) -> str:
    text = re.sub(r"\(https?://[^)]*\)|https?://\S+", " ", text)  # URLs can spell metric names
    text = re.sub(r"[-_‐–]", " ", text.lower())
    return re.sub(r"\s+", " ", text)


def _match(text: str) -> str | None:
    plain = _plain(text)
    return next((name for name, pattern in _COMPILED if pattern.search(plain)), None)


def detect_metric(description: str) -> str | None:
    """Canonical metric name named by a Kaggle description, or None.

    Only the evaluation section is read when there is one, because words such as "accuracy"
    turn up in overviews. Without one, paragraphs that talk about evaluation or scoring are
    tried before the whole text. Plain "log loss" gives `logloss`; use `for_task` to upgrade.
    """
    section = evaluation_section(description)
    if section is not None:
        return _match(section)
    hinted = [p for p in re.split(r"\n\s*\n", description) if _SCORING_HINT_RE.search(p)]
    return _match("\n".join(hinted)) or _match(description)


# ---------------------------------------------------------------------------------------------
# Scoring label/probability inputs in their raw form


def _binary_positive(keys: Sequence[str]) -> int | None:
    for candidate in ("1", "true"):
        if candidate in keys:
            return list(keys).index(candidate)
    return None


def score_class_probabilities(name: str, y_true: Any, proba: Any, classes: Sequence[Any]) -> float:
    """Score raw true labels against an (n, K) probability matrix whose columns are `classes`.

    Label metrics score the arg-max class. With two classes the positive class (for AUC) is the
    one that normalises to 1/true, else the second column.
    """
    metric = get_metric(name)
    if metric.kind == "value":
        raise ValueError(f"{metric.name} scores values, not class probabilities")
    keys = list(normalise_labels(list(classes)))
    if len(set(keys)) != len(keys):
        raise ValueError(f"duplicate class columns: {list(classes)}")
    p = np.asarray(proba, dtype=float)
    truth = normalise_labels(y_true)
    if p.shape != (len(truth), len(keys)):
        raise ValueError(f"probability matrix has shape {p.shape}, expected {(len(truth), len(keys))}")
    if metric.kind == "label":
        return metric.fn(truth, np.asarray(keys, dtype=object)[p.argmax(axis=1)])
    position = {k: i for i, k in enumerate(keys)}
    unknown = sorted(set(truth) - position.keys())
    if unknown:
        raise ValueError(f"no probability column for class(es) {', '.join(unknown[:5])}")
    idx = np.array([position[k] for k in truth], dtype=int)
    if len(keys) == 2:
        positive = _binary_positive(keys)
        if positive == 0:  # put the positive class second, where binary metrics expect it
            p, idx = p[:, ::-1], 1 - idx
    return metric.fn(idx, p)


def score_positive_probability(name: str, y_true: Any, p_positive: Any) -> float:
    """Score a proba metric from binary labels (0/1 or false/true) and P(positive) per row."""
    metric = get_metric(name)
    truth = normalise_labels(y_true)
    seen = set(truth)
    if not (seen <= {"0", "1"} or seen <= {"false", "true"}):
        raise ValueError(f"cannot tell the positive class among labels {sorted(seen)[:5]}")
    if metric.kind != "proba":
        raise ValueError(f"{metric.name} does not score probabilities")
    return metric.fn(np.isin(truth, ["1", "true"]).astype(int), _floats(p_positive))


def score_prediction_frame(
    name: str, y_true: pd.DataFrame, y_pred: pd.DataFrame, target_columns: Sequence[str]
) -> float:
    """Score a prediction frame (see docs/architecture.md) against `id` + raw target columns.

    Rows are aligned on `id` (ValueError when the id sets differ); the result is the mean of
    the per-target scores.
    """
    metric = get_metric(name)
    true_ids, pred_ids = normalise_ids(y_true["id"]), normalise_ids(y_pred["id"])
    if len(set(pred_ids)) != len(pred_ids) or len(set(true_ids)) != len(true_ids):
        raise ValueError("duplicated ids")
    if set(true_ids) != set(pred_ids):
        raise ValueError(f"ids differ: {len(set(true_ids) - set(pred_ids))} missing, "
                         f"{len(set(pred_ids) - set(true_ids))} unexpected")
    row = {k: i for i, k in enumerate(pred_ids)}
    pred = y_pred.iloc[[row[k] for k in true_ids]].reset_index(drop=True)
    scores = []
    for target in target_columns:
        truth = y_true[target].to_numpy()
        prefix = f"{target}__proba__"
        proba_cols = [c for c in pred.columns if str(c).startswith(prefix)]
        if metric.kind == "label":
            scores.append(metric.fn(truth, pred[target].to_numpy()))
        elif metric.kind == "value":
            scores.append(metric.fn(_floats(truth), _floats(pred[target])))
        elif proba_cols:
            classes = [str(c)[len(prefix):] for c in proba_cols]
            scores.append(score_class_probabilities(name, truth, pred[proba_cols].to_numpy(float), classes))
        else:
            scores.append(score_positive_probability(name, truth, pred[target]))
    return float(np.mean(scores))
