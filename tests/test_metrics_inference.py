"""`infer_metric` on invented phrasings: names, where the evidence comes from, abstaining."""

from __future__ import annotations

import dataclasses

import pytest

from agentk.core.metrics import MetricGuess, detect_metric, evaluation_section, infer_metric


@pytest.mark.parametrize(
    ("sentence", "expected"),
    [
        ("Submissions are evaluated on the micro-averaged F1 score.", "micro_f1"),
        ("Submissions are evaluated using the F1 score (micro).", "micro_f1"),
        ("Submissions are evaluated on the micro averaged [F1 score](https://en.wikipedia.org/wiki/F1_score).",
         "micro_f1"),
        ("Submissions are scored on MeanFScore, which at Kaggle is actually a micro-averaged F1-score.", "micro_f1"),
        ("Submissions are evaluated on the weighted F1 score.", "weighted_f1"),
        ("Submissions are evaluated on the macro F1 score.", "macro_f1"),
        ("Submissions are evaluated on the mean F1 score across all classes.", "macro_f1"),
        ("Submissions will be evaluated based on their mean F1 score.", "mean_f1"),
        ("Submissions will be evaluated based on their mean F2 score.", "mean_f2"),
        ("Submissions are evaluated using the Normalized Gini Coefficient.", "gini"),
        ("Submissions are evaluated on the Pearson correlation coefficient.", "pearson"),
        ("Submissions are evaluated on Spearman's rank correlation coefficient.", "spearman"),
        ("The evaluation metric is Kendall's tau between predicted and true rankings.", "kendall_tau"),
        ("Submissions are evaluated on SMAPE between forecasts and actual values.", "smape"),
        ("Submissions are evaluated using the root mean square percentage error (RMSPE).", "rmspe"),
        ("The metric is the mean squared logarithmic error.", "msle"),
        ("The metric is the root mean squared logarithmic error.", "rmsle"),
        ("Submissions are scored on the mean columnwise root mean squared error (MCRMSE).", "rmse"),
        ("Submissions are scored on the linear weighted kappa.", "linear_weighted_kappa"),
        ("Submissions are evaluated on the Brier score.", "brier"),
        ("Submissions are evaluated according to the Mean Average Precision @ 12 (MAP@12).", "map_at_k"),
        ("Submissions are evaluated on top-3 accuracy.", "top_k_accuracy"),
        ("Submissions are evaluated on the top-5 classification error.", "top_k_error"),
        ("Submissions are evaluated on the accuracy of their forecasts, measured by RMSE.", "rmse"),
        ("Submissions are evaluated on multi-class log loss.", "multiclass_logloss"),
        ("The point forecasts are evaluated using the Root Mean Squared Scaled Error (RMSSE).", "rmsse"),
        ("This competition uses a Weighted Root Mean Squared Scaled Error (RMSSE).", "wrmsse"),
        ("Submissions are scored on WRMSSE over all series.", "wrmsse"),
    ],
)
def test_names_in_an_evaluation_section(sentence: str, expected: str) -> None:
    guess = infer_metric(f"## Evaluation\n{sentence}\n\n## Data\nThe files.")
    assert (guess.name, guess.source, guess.unsupported) == (expected, "evaluation_section", None)
    assert guess.confidence >= 0.8
    assert detect_metric(f"## Evaluation\n{sentence}") == expected


@pytest.mark.parametrize(
    ("sentence", "unsupported"),
    [
        ("This competition is evaluated on the mean Dice coefficient.", "Dice coefficient"),
        ("This competition is evaluated on the mean average precision at different intersection over union "
         "(IoU) thresholds.", "mean average precision at IoU thresholds"),
        ("Submissions will be evaluated using NDCG@10.", "NDCG"),
        ("Submissions are evaluated on Recall@20.", "recall/precision at K"),
        ("Submissions are evaluated on the F-beta score with beta = 0.5.", "F-beta score"),
        ("Submissions are evaluated on the weighted categorization accuracy.", "weighted accuracy"),
        ("Forecasts are scored by the Mean Absolute Scaled Error (MASE).", "scaled error (MASE)"),
        ("We use two evaluation metrics, and average them: AUC and accuracy.", "a combination of metrics"),
        ("The metric is designed to reflect both the accuracy and certainty of each prediction.",
         "a confidence-weighted likelihood (Laplace log likelihood)"),
        ("Submissions are evaluated on a modified version of the Laplace Log Likelihood.",
         "a confidence-weighted likelihood (Laplace log likelihood)"),
    ],
)
def test_metrics_the_registry_lacks_abstain_with_their_name(sentence: str, unsupported: str) -> None:
    guess = infer_metric(f"## Overview\nA task.\n\n## Evaluation\n{sentence}\nRMSE is shown for comparison.")
    assert guess.name is None and guess.unsupported == unsupported
    assert guess.source == "evaluation_section" and guess.confidence > 0.5


@pytest.mark.parametrize(
    "sentence",
    [
        "We also report RMSE for reference but scoring uses MAE.",
        "Submissions are evaluated on MAE, not RMSE.",
        "Unlike RMSE, the metric here is the mean absolute error.",
        "Submissions are evaluated on the mean absolute error rather than RMSE.",
    ],
)
def test_a_metric_mentioned_but_not_scored_does_not_win(sentence: str) -> None:
    assert infer_metric(f"## Evaluation\n{sentence}").name == "mae"


def test_a_changed_metric_reads_the_new_one() -> None:
    text = "Evaluation\nThere is a change in evaluation metric from log loss to Brier scores."
    assert infer_metric(text).name == "brier"


def test_plain_text_and_bold_headings_mark_the_evaluation_section() -> None:
    overview = "Overview\nForecast accuracy matters; earlier work reported the RMSE of such models.\n\n"
    data = "\n\nData\nThe file has an accuracy column.\n"
    for heading in ("Evaluation", "Evaluation  ", "**Evaluation**", "Evaluation Metric", "### Evaluation"):
        text = f"{overview}{heading}\nSubmissions are evaluated on the mean absolute error.{data}"
        guess = infer_metric(text)
        assert (guess.name, guess.source) == ("mae", "evaluation_section"), heading
        section = evaluation_section(text)
        assert section is not None and "mean absolute error" in section and "RMSE" not in section


def test_an_overview_sentence_wins_when_the_evaluation_section_only_shows_the_file_format() -> None:
    text = (
        "## Overview\nPredict the species of each plant. Submissions are scored by log loss.\n\n"
        "## Evaluation\n### Submission File\nFor each id, predict a probability for every class.\n"
        "```\nid,a,b,c\n1,0.2,0.3,0.5\n```\n"
    )
    guess = infer_metric(text)
    assert (guess.name, guess.source) == ("logloss", "scoring_sentence")
    assert guess.evidence == "Submissions are scored by log loss."


def test_pages_without_markup_are_read_sentence_by_sentence() -> None:
    flattened = ("Predict personality.StartJun 30, 2025CloseJul 31, 2025EvaluationSubmissions are evaluated "
                 "usingAccuracy Scorebetween the predicted value and the observed target.Submission FileFor each id")
    guess = infer_metric(flattened)
    assert (guess.name, guess.source) == ("accuracy", "scoring_sentence")
    assert len(guess.evidence) <= 200


def test_a_wrapped_sentence_is_read_whole() -> None:
    text = ("## Evaluation\nSubmissions to this competition, as in the earlier editions, are evaluated on\n"
            "the root mean squared logarithmic error between the prediction and the truth.")
    assert infer_metric(text).name == "rmsle"


def test_code_blocks_are_not_read() -> None:
    text = "## Evaluation\n```python\nfrom sklearn.metrics import mean_squared_error  # metric\n```\nScored on AUC."
    assert infer_metric(text).name == "auc"


def test_nothing_named_gives_an_empty_guess() -> None:
    text = "# Cats\n\n## Overview\nPredict which photos show cats.\n\n## Data\ntrain.csv holds labels."
    assert infer_metric(text) == MetricGuess(None, "", "none", 0.0, None)


def test_a_metric_named_outside_any_scoring_sentence_is_a_weak_guess() -> None:
    guess = infer_metric("# Prices\n\nPredict house prices. A good RMSLE would be below 0.12.")
    assert (guess.name, guess.source) == ("rmsle", "anywhere") and guess.confidence < 0.5
    # Bare "accuracy" is everyday English, not evidence.
    assert infer_metric("# Sensors\n\nImprove the accuracy of sensors.").name is None


def test_confidence_orders_the_sources() -> None:
    in_section = infer_metric("## Evaluation\nSubmissions are evaluated on AUC.")
    in_overview = infer_metric("## Overview\nSubmissions are evaluated on AUC.")
    assert in_section.confidence > in_overview.confidence > 0


def test_guess_is_frozen_and_evidence_is_short() -> None:
    long_sentence = "Submissions are evaluated on the mean absolute error " + "of the predictions " * 30 + "."
    guess = infer_metric(f"## Evaluation\n{long_sentence}")
    assert guess.name == "mae" and len(guess.evidence) <= 200 and "mean absolute error" in guess.evidence
    with pytest.raises(dataclasses.FrozenInstanceError):
        guess.name = "rmse"  # type: ignore[misc]


def test_an_unknown_metric_stated_in_the_evaluation_section_is_not_replaced_by_a_guess() -> None:
    text = ("## Overview\nEarlier models were compared by RMSE.\n\n"
            "## Evaluation\nSubmissions are evaluated on the Jensen-Shannon divergence between distributions.\n")
    guess = infer_metric(text)
    assert guess.name is None and guess.unsupported is not None and "jensen shannon" in guess.unsupported
    assert guess.source == "evaluation_section"
    # "As follows" states nothing: the overview's scoring sentence still decides.
    text = "## Overview\nSubmissions are scored by log loss.\n\n## Evaluation\nSubmissions are evaluated as follows.\n"
    assert infer_metric(text).name == "logloss"


# The plant-seedlings page as Kaggle renders it: the scoring sentence cut at its comma by a blank
# line, a formula, and an explanation whose "F1-score is" reads like a scoring sentence.
_MEAN_F_SCORE_PAGE = r"""# Overview

Can you tell a weed from a crop seedling?

## Evaluation

Submissions are evaluated on **MeanFScore**,

which at Kaggle is actually a [micro-averaged F1-score](https://en.wikipedia.org/wiki/F1_score).

Given positive/negative rates for each class *k*, the resulting score is computed this way:

$$
\text { Precision }_{\text {micro }}=\frac{\sum_{k \in C} T P_k}{\sum_{k \in C} T P_k+F P_k} \\
\text { Recall }_{\text {micro }}=\frac{\sum_{k \in C} T P_k}{\sum_{k \in C} T P_k+F N_k}
$$

F1-score is the harmonic mean of precision and recall
$$
\text { MeanFScore }=F 1_{\text {micro }}=\frac{2 \text { Precision }_{\text {micro }} \text { Recall }_{\text {micro }}}{\text { Precision }_{\text {micro }}+\text { Recall }_{\text {micro }}}
$$

### Submission File

For each `file` in the test set, you must predict the `species`.
"""


def test_the_sentence_naming_the_metric_outranks_one_explaining_a_part_of_it() -> None:
    guess = infer_metric(_MEAN_F_SCORE_PAGE)
    assert (guess.name, guess.source, guess.confidence) == ("micro_f1", "evaluation_section", 0.95)
    assert guess.evidence.startswith("Submissions are evaluated on **MeanFScore**, which at Kaggle")
    # Without the scoring sentence, the explanation alone still reads as F1 (a name, not a cue).
    explained = infer_metric("## Evaluation\nF1-score is the harmonic mean of precision and recall.")
    assert (explained.name, explained.confidence) == ("f1", 0.8)
    # A statement of what is scored outranks an earlier sentence that explains a part of it.
    text = ("## Evaluation\nPrecision is measured over all predicted labels, and the F1 score is evaluated "
            "as their harmonic mean with recall.\n\nSubmissions are evaluated on the micro-averaged F1 score.\n")
    assert infer_metric(text).name == "micro_f1"


@pytest.mark.parametrize(
    ("section", "unsupported"),
    [
        ("In order to focus on reliable detection with an emphasis on low false-alarm rate, submissions are "
         "evaluated on the weighted AUC. To calculate the weighted AUC, each region of the ROC curve is weighted "
         "according to these chosen parameters:\n\n```\ntpr_thresholds = [0.0, 0.4, 1.0]\nweights = [2, 1]\n```\n\n"
         "In other words, the area between the true positive rate of 0 and 0.4 is weighted 2X. The final AUC "
         "is between 0 and 1.", "weighted AUC"),
        ("Submissions are evaluated on the Log of the Mean Absolute Error, calculated for each scalar coupling "
         "type, and then averaged across types, so that a 1% decrease in MAE for one type provides the same "
         "improvement in score as a 1% decrease for another type.", "log of the mean absolute error"),
        ("Log of the Mean Absolute Error, calculated for each scalar coupling type, and then averaged across "
         "types.", "log of the mean absolute error"),
        ("Submissions are evaluated using a weighted multi-label logarithmic loss. Each sub-type is its own row "
         "for every exam. The binary log loss for each label is weighted.", "weighted log loss"),
        ("Submissions are evaluated using the [probabilistic F1 score](https://aclanthology.org/2020.eval4nlp-1.9.pdf)"
         " (pF1). This extension of the traditional F score accepts probabilities instead of binary "
         "classifications.\n\n$$pF_1 = 2 \\frac{pPrecision \\cdot pRecall}{pPrecision + pRecall}$$",
         "probabilistic F1"),
    ],
)
def test_a_cousin_of_a_registry_metric_is_not_answered_with_it(section: str, unsupported: str) -> None:
    guess = infer_metric(f"# A task\n\nPredict things.\n\n## Evaluation\n\n{section}\n\n## Submission File\n\nid,label\n")
    assert (guess.name, guess.unsupported) == (None, unsupported)
