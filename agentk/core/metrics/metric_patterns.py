"""The metric names a Kaggle page may use, in priority order, each with its registry name (None
for a metric the registry lacks): the vocabulary detection.py reads a page with."""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Pattern:
    name: str | None  # registry name; None for a metric the registry does not have
    label: str
    regex: re.Pattern[str]
    weak: bool = False  # an everyday word too: loses to any other metric in the same sentence
    # An image metric: registry name by the objects the page scores ("box", "mask"), first found wins.
    by_objects: tuple[tuple[str, str], ...] = ()


def _p(name: str | None, regex: str, label: str = "", weak: bool = False, by_objects: str = "") -> Pattern:
    objects = tuple(tuple(pair.split("=")) for pair in by_objects.split())
    return Pattern(name, label or str(name), re.compile(regex), weak, objects)  # type: ignore[arg-type]


# What a page's image metric compares: boxes, or masks (pixel sets). Matched against `_plain` text.
OBJECT_RES = {
    "box": re.compile(r"\bbounding ?box(es)?\b|\b(predicted|ground truth|true|object) boxes\b"),
    "mask": re.compile(r"\brun ?length|\brle\b|\bmasks?\b|\bsegmentation|\bpixels?\b"),
}


# Priority order: where two matches overlap, the earlier pattern keeps the text, so specific
# names ("root mean squared logarithmic error", "mean average precision at IoU thresholds")
# come before the general ones they contain. Matched against `_plain` text: lower case, hyphens
# and underscores as spaces, markup removed.
_N = r"(\d[\d,]*|k)"  # the K of an @K metric
PATTERNS: tuple[Pattern, ...] = (
    _p(None, r"\b(two|three|four|several|multiple) (different )?(evaluation )?metrics\b", "a combination of metrics"),
    _p(None, r"\brow ?wise (root mean squared? error|rmse)|\bmrrmse\b", "mean rowwise RMSE"),
    # Scaled errors: the registry has the root mean squared one (plain and weighted, before the
    # mean squared and absolute ones it contains), not MASE.
    _p("wrmsse", r"\bweighted (root mean squared? scaled error( \(w?rmsse\))?|rmsse\b)|\bwrmsse\b"),
    _p("rmsse", r"\broot mean squared? scaled error|\brmsse\b"),
    _p(None, r"\bmean (squared?|absolute) scaled error|\bmase\b", "scaled error (MASE)"),
    # Metrics the registry lacks, wherever they contain a name it has.
    _p(None, r"pinball|quantile loss|\bwspl\b", "pinball (quantile) loss"),
    _p(None, r"continuous ranked probability|\bcrps\b", "CRPS"),
    _p(None, r"weighted (categori[sz]ation |classification |multi ?class )?accuracy", "weighted accuracy"),
    _p(None, r"(balanced|weighted) (multi ?(class|label) )?(log(arithmic)? ?loss|cross ?entropy)", "weighted log loss"),
    # Cousins of registry metrics that score differently: answering the registry's name would
    # optimise the wrong thing (a 2x-weighted ROC region, a log taken per group, soft counts).
    _p(None, r"\bweighted (roc )?(auc|area under)", "weighted AUC"),
    _p(None, r"\blog (of )?(the )?(mean absolute error|mae)\b|\blog ?mae\b", "log of the mean absolute error"),
    _p(None, r"\bprobabilistic f ?(1|beta|β|score|measure)|\bpf ?(1|beta)\b", "probabilistic F1"),
    _p(None, r"precision ?recall (curve|auc)|\bpr ?auc\b|\bauc ?pr\b|\bauprc\b", "precision-recall AUC"),
    _p(None, r"\bpartial (auc|area under)|\bp ?auc\b", "partial AUC"),
    _p(None, r"average precision (at|over|across) (different |various |multiple |a range of )?"
             r"(intersection over union|iou)", "mean average precision at IoU thresholds",
       by_objects="box=map_boxes mask=map_iou"),
    _p(None, r"\bdice\b", "Dice coefficient", by_objects="mask=dice"),
    _p(None, r"intersection over union|\biou\b|jaccard", "intersection over union", by_objects="mask=iou"),
    _p(None, r"\bndcg\b|discounted cumulative gain", "NDCG"),
    _p(None, rf"(?<!average )\b(recall|precision) ?(@ ?{_N}\b|at {_N}\b)", "recall/precision at K"),
    _p(None, r"global average precision", "global average precision (GAP)"),
    _p(None, r"percentile (distance )?errors?|haversine|great circle distance", "distance error"),
    _p(None, r"\bbleu\b|\brouge\b|levenshtein|edit distance|word error rate", "text similarity"),
    # A score of a prediction and its stated uncertainty (OSIC's Laplace log likelihood): naming
    # its accuracy part alone would be a wrong name.
    _p(None, r"laplace log ?likelihood|(accuracy|error) and (the )?(certainty|confidence|uncertainty) of",
       "a confidence-weighted likelihood (Laplace log likelihood)"),
    # Registry metrics, specific before general.
    _p("rmsle", r"root mean squared? log(arithmic)? error|\brmsle\b"),
    _p("rmse_log", r"(root mean squared? error|\brmse\b)( \(rmse\))? (between|of|on) (the )?(natural )?log"),
    _p("rmspe", r"root mean squared? percent(age)? error|\brmspe\b"),
    _p("rmse", r"mean column ?wise root mean squared? error|\bmcrmse\b"),
    _p("msle", r"mean squared? log(arithmic)? error|\bmsle\b"),
    _p("linear_weighted_kappa", r"linear(ly)? weighted (cohen'?s )?kappa"),
    _p("quadratic_weighted_kappa",
       r"quadratic(ally)? weighted (cohen'?s )?kappa|\bqwk\b|weighted kappa|cohen'?s kappa"),
    _p("mcc", r"matthews'? correlation|\bmcc\b"),
    _p("multiclass_logloss",
       r"multi ?class [a-z ]{0,30}?(log(arithmic)? ?loss|cross ?entropy)|categorical cross ?entropy"),
    # "Mean F1/F2" on Kaggle is the example-based score of multi-label rows, unless it is over classes.
    _p("macro_f1", r"macro (averaged )?f ?1\b|\bf ?1 (score )?\(?macro|macro (averaged )?f (score|measure)"
                   r"|mean f ?1 (score )?(across|over) (all )?(the )?([a-z0-9]+ )?(classes|labels|categories)"),
    _p("mean_f2", r"mean f ?2\b|samples? averaged f ?2\b"
                  r"|example based f ?(score|measure)?[^.]{0,25}\bbeta (of |= ?)?2\b"),
    _p("mean_f1", r"mean f ?1\b|samples? averaged f ?(1|score|measure)\b|example based f ?(1|score|measure)\b"),
    _p("micro_f1", r"micro (averaged )?f ?1\b|\bf ?1 (score )?\(?micro|micro (averaged )?f (score|measure)"),
    _p("weighted_f1",
       r"weighted (averaged? )?f ?1\b|\bf ?1 (score )?\(?weighted|weighted (averaged? )?f (score|measure)"),
    _p(None, r"\bf ?(beta|β|0?\.5|2|3)( score| measure)?\b|\bf (score|measure) beta\b", "F-beta score"),
    _p("balanced_accuracy", r"balanced accuracy"),
    _p("gini", r"\bgini\b"),
    _p("brier", r"\bbrier\b"),
    _p("auc", r"area under (the )?(roc|receiver operating characteristic)|\broc\b|\baucs?\b|\bauroc\b"),
    _p("logloss", r"\blog(arithmic)? ?loss\b|cross ?entropy"),
    _p("f1", r"\bf ?1\b|\bf (score|measure)\b"),
    _p("smape", r"\bs ?mape\b|symmetric mean absolute percent(age)? error"),
    _p("mape", r"mean absolute percent(age)? error|\bmape\b"),
    _p("medae", r"median absolute error|\bmedae\b"),
    _p("mae", r"mean absolute error|\bmae\b"),
    _p("rmse", r"root mean squared? error|\brmse\b"),
    _p("mse", r"mean squared? error|\bmse\b"),
    _p("r2", r"coefficient of determination|\br ?squared\b|\br2\b|\br\^2|r²"),
    _p("pearson", r"\bpearson"),
    _p("spearman", r"\bspearman"),
    _p("kendall_tau", r"\bkendall"),
    _p("padded_cmap", r"\bpadded (c ?map|class ?wise mean average precision)\b", "padded cmAP"),
    _p("map_at_k", rf"mean average precision ?(@|at) ?{_N}\b|\bmap ?@ ?{_N}\b"),
    _p(None, r"\b(mean )?average precision\b", "average precision"),
    _p("top_k_error", r"\btop ?(\d+|k) (classification )?error|mean best error"
                      r"|\berror (for|of) (that|each|an?|the) [a-z]+ is (0|zero)\b"),
    _p("top_k_accuracy", r"\btop ?(\d+|k) (classification )?accuracy"),
    _p("token_accuracy", r"\b(token|word|text|normali[sz]ation) accuracy|\bexact (text )?match(es)?\b"),
    _p("lrap", r"label ranking average precision|\blrap\b|\blabel ranking ap\b"),
    # Run-together scrapes ("usingAccuracy Scorebetween") keep "accuracy score" without word breaks.
    _p("accuracy", r"accuracy score|\baccuracy\b|(percentage|proportion|fraction|share) of [^.]{0,60}\bcorrect(ly)?\b",
       weak=True),
)
