"""The registry: every metric's canonical name, direction, input kind, function and aliases."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from agentk.core.errors import AgentKError
from agentk.core.metrics import functions as F
from agentk.core.metrics import scaled_errors as SE
from agentk.core.metrics import spatial as S
from agentk.core.metrics.direction import Direction

MetricKind = Literal["label", "proba", "value", "ranking", "mask", "instances", "boxes"]
# Kinds whose rows are encoded image outputs (run-length masks, box strings; see `spatial`):
# no class probabilities or numbers stand behind them, and a row's id may repeat (one row per
# object), so callers that predict or score tables must tell them apart.
SPATIAL_KINDS: frozenset[str] = frozenset({"mask", "instances", "boxes"})


class UnknownMetricError(AgentKError):
    """A metric name that is neither a canonical name nor an alias."""


@dataclass(frozen=True)
class Metric:
    name: str
    higher_is_better: bool
    kind: MetricKind
    fn: F.MetricFn
    aliases: tuple[str, ...] = ()
    # Reads each series' training history (scaled_errors.context_columns of the answers) beside
    # the values, where the caller has it.
    per_series: bool = False

    @property
    def direction(self) -> Direction:
        return Direction(self.higher_is_better)

    @property
    def spatial(self) -> bool:
        """Rows are encoded image outputs (masks, boxes), scored per image (see `SPATIAL_KINDS`)."""
        return self.kind in SPATIAL_KINDS


def _m(name: str, higher_is_better: bool, kind: MetricKind, fn: F.MetricFn, aliases: str = "",
       per_series: bool = False) -> Metric:
    return Metric(name, higher_is_better, kind, fn, tuple(aliases.split()), per_series)


_REGISTERED = (
    # Labels
    _m("accuracy", True, "label", F.accuracy,
       "acc classification_accuracy categorization_accuracy categorisation_accuracy accuracy_score "
       "multiclass_accuracy"),
    _m("balanced_accuracy", True, "label", F.label_metric(F.sk("balanced_accuracy_score")),
       "balanced_accuracy_score bacc"),
    _m("f1", True, "label", F.f1, "f1_score f_score fscore f_measure binary_f1"),
    _m("macro_f1", True, "label", F.macro_f1, "f1_macro macro_f1_score macro_averaged_f1 f_score_macro"),
    # Pooled over all rows, so for single-label rows it equals accuracy.
    _m("micro_f1", True, "label", F.label_metric(F.sk("f1_score"), average="micro", zero_division=0),
       "f1_micro micro_f1_score micro_averaged_f1"),
    _m("weighted_f1", True, "label", F.label_metric(F.sk("f1_score"), average="weighted", zero_division=0),
       "f1_weighted weighted_f1_score weighted_averaged_f1"),
    _m("mcc", True, "label", F.label_metric(F.sk("matthews_corrcoef")),
       "matthews_corrcoef matthews_correlation matthews_correlation_coefficient"),
    _m("quadratic_weighted_kappa", True, "label", F.kappa("quadratic"),
       "qwk kappa weighted_kappa quadratic_kappa cohen_kappa quadraticweightedkappa"),
    _m("linear_weighted_kappa", True, "label", F.kappa("linear"), "lwk linear_kappa linear_weighted_cohen_kappa"),
    # Text to text (token normalisation, transliteration): the exact text, case and all.
    _m("token_accuracy", True, "label", F.exact_text_accuracy,
       "exact_match text_accuracy word_accuracy normalisation_accuracy normalization_accuracy"),
    # Probabilities
    _m("auc", True, "proba", F.auc,
       "roc_auc auroc roc_auc_score area_under_curve roc mean_columnwise_auc sklearn_roc_auc_score"),
    _m("padded_cmap", True, "proba", F.padded_cmap, "padded_cmap5 padded_class_wise_map"),
    _m("gini", True, "proba", F.gini, "normalized_gini normalised_gini gini_coefficient normalized_gini_index"),
    _m("logloss", False, "proba", F.log_loss,
       "log_loss binary_logloss binary_log_loss binary_crossentropy cross_entropy"),
    _m("multiclass_logloss", False, "proba", F.log_loss,
       "multi_logloss mlogloss multiclass_log_loss multi_class_log_loss multi_class_logloss "
       "categorical_crossentropy multiclass_loss"),
    _m("brier", False, "proba", F.brier, "brier_score brier_score_loss"),
    # Values
    _m("rmse", False, "value", F.rmse,
       "root_mean_squared_error root_mean_square_error mcrmse"),
    _m("rmse_log", False, "value", F.rmse_log, "log_rmse rmse_of_log rmse_of_logs"),
    _m("rmsle", False, "value", F.rmsle, "root_mean_squared_log_error root_mean_squared_logarithmic_error"),
    _m("msle", False, "value", F.msle, "mean_squared_log_error mean_squared_logarithmic_error"),
    _m("mse", False, "value", F.mse, "mean_squared_error"),
    _m("mae", False, "value", F.mae, "mean_absolute_error l1"),
    _m("medae", False, "value", F.value_metric(F.sk("median_absolute_error")), "median_absolute_error"),
    _m("mape", False, "value", F.value_metric(F.sk("mean_absolute_percentage_error")), "mean_absolute_percentage_error"),
    _m("smape", False, "value", F.smape, "symmetric_mean_absolute_percentage_error smape_plus_1"),
    # Forecasts of many series, each error scaled by its series' history (scaled_errors).
    _m("rmsse", False, "value", SE.rmsse, "root_mean_squared_scaled_error root_mean_square_scaled_error",
       per_series=True),
    _m("wrmsse", False, "value", SE.wrmsse,
       "weighted_rmsse weighted_root_mean_squared_scaled_error weighted_root_mean_square_scaled_error",
       per_series=True),
    _m("rmspe", False, "value", F.rmspe, "root_mean_square_percentage_error root_mean_squared_percentage_error"),
    _m("r2", True, "value", F.value_metric(F.sk("r2_score")), "r2_score r_squared coefficient_of_determination"),
    _m("pearson", True, "value", F.pearson, "pearsonr pearson_correlation meanpearson mean_pearson pearson_r"),
    _m("spearman", True, "value", F.spearman, "spearmanr spearman_correlation spearman_rho"),
    _m("kendall_tau", True, "value", F.kendall_tau, "kendall kendalltau kendall_tau_correlation"),
    # Rankings and label sets (space-separated labels per row)
    _m("map_at_k", True, "ranking", F.map_at_k, "map@k mapk map_k mean_average_precision_at_k"),
    _m("top_k_accuracy", True, "ranking", F.top_k_accuracy, "top_k_acc topk_accuracy"),
    _m("top_k_error", False, "ranking", F.top_k_error, "topk_error mean_best_error_at_k meanbesterroratk"),
    _m("mean_f1", True, "ranking", F.mean_f_beta(1.0), "samples_f1 example_based_f1 mean_f_score"),
    _m("mean_f2", True, "ranking", F.mean_f_beta(2.0), "samples_f2 example_based_f2"),
    _m("lrap", True, "ranking", F.label_ranking_average_precision,
       "label_ranking_average_precision label_ranking_average_precision_score label_ranking_ap"),
    # Image outputs, one encoded string per row (see `spatial`); the text names below are
    # Kaggle's metadata names of these metrics.
    _m("dice", True, "mask", S.dice, "dice_coefficient mean_dice dice_score siimdice siim_dice"),
    _m("iou", True, "mask", S.iou, "jaccard jaccard_index intersection_over_union mean_iou"),
    _m("map_iou", True, "instances", S.map_iou,
       "mean_average_precision_at_iou_thresholds intersectionoverunionobjectsegmentation instance_map "
       "mask_map map_iou_masks"),
    _m("map_boxes", True, "boxes", S.map_boxes,
       "box_average_precision_at_iou_thresholds rsnaobjectdetectionap box_map detection_map map_iou_boxes"),
)
METRICS: dict[str, Metric] = {m.name: m for m in _REGISTERED}
# Rankings within a column: a label column whose answers hold one class has nothing to rank, so a
# grade over several such columns leaves it out (BirdCLEF's macro AUC skips species never heard).
COLUMN_RANKINGS: frozenset[str] = frozenset({"auc", "gini"})
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
