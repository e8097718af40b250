"""Registry of Kaggle metrics, metric detection from description text, and prediction-frame scoring.

Conventions every metric function follows (`Metric.fn(y_true, y_pred) -> float`), by `Metric.kind`:

* ``label`` metrics take raw labels on both sides and compare them after `normalise_labels`,
  so ``True``/``"TRUE"`` and ``1``/``"1.0"`` match as a human would expect.
* ``proba`` metrics take ``y_true`` as class indices ``0..K-1`` (binary: 1 = positive class) and
  ``y_pred`` as a 1-D probability of the positive class or an ``(n, K)`` matrix.
  `score_class_probabilities` maps raw labels and named probability columns onto this form.
* ``value`` metrics take numbers (regression, correlations).
* ``ranking`` metrics take one list of labels per row: ``y_pred`` rows are space-separated strings
  ("7 2 5", best first) or sequences; ``y_true`` rows are a single label or space-separated labels
  (a set). A blank row is the empty list. MAP@K takes K to be the longest submitted list; the
  example-based F-scores (mean_f1, mean_f2) read both sides as sets.
* ``mask``, ``instances`` and ``boxes`` metrics (`SPATIAL_KINDS`: dice, iou, map_iou, map_boxes)
  take one image per row: run-length encoded masks or `conf x y w h` box strings, a row's cell a
  string, blank, or a sequence of strings (an image's several rows; `group_by_id`). See `spatial`.

Multi-target competitions ("mean column-wise AUC/RMSE/log loss") need no metric of their own:
`score_prediction_frame` and the grader average the metric over the target columns.

Modules: `labels` (normalisation), `functions` (the maths), `registry` (names, aliases, direction), `direction` (better / best / ranked, NaN-aware),
`spatial` (masks and boxes), `detection` (reading a description), `scoring` (raw frames and
probability matrices).
"""

from agentk.core.metrics.detection import MetricGuess, detect_metric, evaluation_section, infer_metric
from agentk.core.metrics.direction import Direction
from agentk.core.metrics.functions import LOG_FLOOR, PROBA_EPS
from agentk.core.metrics.labels import label_list, normalise_ids, normalise_labels
from agentk.core.metrics.registry import (
    COLUMN_RANKINGS,
    METRICS,
    SPATIAL_KINDS,
    Metric,
    MetricKind,
    UnknownMetricError,
    for_task,
    get_metric,
)
from agentk.core.metrics.scoring import (
    RANKING_DEPTH,
    score_class_probabilities,
    score_positive_probability,
    score_prediction_frame,
    scored_columns,
)
from agentk.core.metrics.spatial import (
    BOX_IOU_THRESHOLDS,
    MASK_IOU_THRESHOLDS,
    aligned_groups,
    group_by_id,
    stated_thresholds,
)

__all__ = [
    "BOX_IOU_THRESHOLDS", "COLUMN_RANKINGS", "Direction", "LOG_FLOOR", "MASK_IOU_THRESHOLDS", "METRICS", "PROBA_EPS", "RANKING_DEPTH", "SPATIAL_KINDS", "Metric", "MetricGuess", "MetricKind",
    "UnknownMetricError", "aligned_groups", "detect_metric", "evaluation_section", "for_task", "get_metric", "group_by_id", "stated_thresholds",
    "infer_metric", "label_list", "normalise_ids", "normalise_labels", "score_class_probabilities",
    "score_positive_probability", "score_prediction_frame", "scored_columns",
]
