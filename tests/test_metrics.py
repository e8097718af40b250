"""Metric registry, label normalisation, metric detection and prediction-frame scoring."""

from __future__ import annotations

import math
import tomllib
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import accuracy_score, log_loss, roc_auc_score

from agentk.core.errors import AgentKError
from agentk.core.masks import rle_encode
from agentk.core.metrics import (
    METRICS,
    Direction,
    UnknownMetricError,
    detect_metric,
    for_task,
    get_metric,
    normalise_labels,
    score_prediction_frame,
)

COMPETITIONS = Path(__file__).resolve().parents[2] / "shared" / "competitions"
REQUIRED = [
    "accuracy", "f1", "auc", "logloss", "multiclass_logloss", "rmse", "rmse_log", "rmsle",
    "mae", "mse", "r2", "quadratic_weighted_kappa", "mape", "macro_f1", "balanced_accuracy", "mcc", "medae",
    "micro_f1", "weighted_f1", "linear_weighted_kappa", "gini", "brier", "pearson", "spearman", "kendall_tau",
    "smape", "msle", "rmspe", "map_at_k", "top_k_accuracy", "top_k_error", "mean_f1", "mean_f2",
    "dice", "iou", "map_iou", "map_boxes", "lrap", "token_accuracy", "rmsse", "wrmsse",
]


@lru_cache
def _train(competition: str, columns: tuple[str, ...]) -> pd.DataFrame:
    return pd.read_csv(COMPETITIONS / competition / "data" / "train.csv", usecols=list(columns))


def _titanic() -> pd.DataFrame:
    return _train("titanic", ("PassengerId", "Survived", "Sex"))


# ---------------------------------------------------------------------------------------------
# Registry


def test_registry_has_every_required_name_with_a_sane_direction() -> None:
    assert set(REQUIRED) <= set(METRICS)
    for name, metric in METRICS.items():
        assert metric.name == name
        assert metric.kind in ("label", "proba", "value", "ranking", "mask", "instances", "boxes")
    lower = {"logloss", "multiclass_logloss", "rmse", "rmse_log", "rmsle", "mae", "mse", "mape", "medae",
             "brier", "smape", "msle", "rmspe", "top_k_error", "rmsse", "wrmsse"}
    assert {n for n, m in METRICS.items() if not m.higher_is_better} == lower


@pytest.mark.parametrize(
    ("alias", "canonical"),
    [("RMSE", "rmse"), ("Log Loss", "logloss"), ("roc_auc", "auc"), ("QWK", "quadratic_weighted_kappa"),
     ("multi-class log loss", "multiclass_logloss"), ("Accuracy", "accuracy"), (" mean_absolute_error ", "mae")],
)
def test_get_metric_accepts_aliases_case_insensitively(alias: str, canonical: str) -> None:
    assert get_metric(alias).name == canonical


def test_unknown_metric_is_a_one_line_agentk_error_listing_known_names() -> None:
    with pytest.raises(UnknownMetricError) as info:
        get_metric("dice_coefficient_3d")
    message = str(info.value)
    assert isinstance(info.value, AgentKError)
    assert "\n" not in message and "dice_coefficient_3d" in message and "rmsle" in message


# ---------------------------------------------------------------------------------------------
# Property tests: perfect predictions score best, more damage scores worse


def _corrupt_labels(y: np.ndarray, fraction: float, rng: np.random.Generator) -> np.ndarray:
    out = y.copy()
    labels = np.unique(y)
    hit = rng.choice(len(y), int(len(y) * fraction), replace=False)
    for i in hit:
        out[i] = labels[(np.searchsorted(labels, y[i]) + 1) % len(labels)]  # always a wrong label
    return out


def _discs(rng: np.random.Generator, shift: int) -> list[list[np.ndarray]]:
    """Five 32x32 images of two or three discs each, every disc moved `shift` pixels right."""
    yy, xx = np.mgrid[:32, :32]
    images = []
    for _ in range(5):
        centres = [(int(rng.integers(8, 24)), int(rng.integers(6, 20))) for _ in range(int(rng.integers(2, 4)))]
        images.append([(yy - cy) ** 2 + (xx - cx - shift) ** 2 <= 20 for cy, cx in centres])
    return images


def _image_case(kind: str) -> tuple[Any, Any, list[Any]]:
    """Masks or boxes, exact and moved further and further off."""
    if kind == "boxes":
        boxes = np.random.default_rng(0).integers(10, 200, size=(6, 4)).astype(float)
        truth = np.array([f"{x} {y} {w} {h}" for x, y, w, h in boxes], dtype=object)
        moved = [np.array([f"1.0 {x + d} {y} {w} {h}" for x, y, w, h in boxes], dtype=object) for d in (0, 4, 30)]
        return truth, moved[0], moved[1:]
    shifted = [_discs(np.random.default_rng(0), shift) for shift in (0, 1, 3)]
    if kind == "mask":  # each image's discs as one mask
        rows = [np.array([rle_encode(np.any(image, axis=0)) for image in images], dtype=object) for images in shifted]
    else:  # one row per image holding one string per disc
        rows = [[[rle_encode(disc) for disc in image] for image in images] for images in shifted]
    return rows[0], rows[0], rows[1:]


def _case(name: str) -> tuple[Any, Any, list[Any]]:
    """(y_true, perfect prediction, predictions that get progressively worse) from real targets."""
    rng = np.random.default_rng(0)
    kind = METRICS[name].kind
    if METRICS[name].spatial:
        return _image_case(kind)
    if name in ("quadratic_weighted_kappa", "linear_weighted_kappa"):
        y = _train("playground-series-s3e5", ("Id", "quality"))["quality"].to_numpy()
        return y, y.copy(), [y + 1, y + 2]  # further off on an ordinal scale is worse
    if kind == "label":
        y = _titanic()["Survived"].to_numpy()
        return y, y.copy(), [_corrupt_labels(y, f, rng) for f in (0.1, 0.3)]
    if kind == "ranking":
        species = _train("leaf-classification", ("id", "species"))["species"].to_numpy(dtype=object)
        return species, species.copy(), [_corrupt_labels(species, f, rng) for f in (0.1, 0.3)]
    if kind == "proba":
        species = _train("leaf-classification", ("id", "species"))["species"]
        classes = sorted(species.unique())
        y = species.map({c: i for i, c in enumerate(classes)}).to_numpy()
        if name in ("auc", "logloss", "gini", "brier", "padded_cmap"):
            y = (y < len(classes) // 2).astype(int)  # a binary task from real labels
        k = y.max() + 1
        onehot = np.eye(k)[y]
        noise = rng.random(onehot.shape)
        noise /= noise.sum(axis=1, keepdims=True)
        worse = [0.3 * onehot + 0.7 * noise, 0.1 * onehot + 0.9 * noise]
        if k == 2:
            return y, onehot[:, 1], [w[:, 1] for w in worse]
        return y, onehot, worse
    y = _train("house-prices-advanced-regression-techniques", ("Id", "SalePrice"))["SalePrice"].to_numpy(float)
    jitter = rng.normal(size=len(y))
    return y, y.copy(), [y * (1 + 0.05 * jitter), y * (1 + 0.3 * np.abs(jitter))]


BEST = {name: 1 for name, m in METRICS.items() if m.higher_is_better}  # every higher-is-better metric tops at 1


@pytest.mark.parametrize("name", sorted(METRICS))
def test_perfect_predictions_score_best_and_damage_scores_worse(name: str) -> None:
    metric = METRICS[name]
    y, perfect, worse = _case(name)
    best = metric.fn(y, perfect)
    assert best == pytest.approx(BEST.get(name, 0.0), abs=1e-9)
    scores = [metric.fn(y, w) for w in worse]
    assert Direction(metric.higher_is_better).better(best, scores[0])
    assert Direction(metric.higher_is_better).better(scores[0], scores[1])


def test_known_values() -> None:
    rmse, rmsle, rmse_log = (METRICS[n].fn for n in ("rmse", "rmsle", "rmse_log"))
    assert rmse([1, 2], [1, 4]) == pytest.approx(math.sqrt(2))
    assert rmsle([0, math.e - 1], [math.e - 1, 0]) == pytest.approx(1.0)
    assert rmse_log([10, 100], [100, 10]) == pytest.approx(math.log(10))
    assert METRICS["mape"].fn([100, 200], [110, 180]) == pytest.approx(0.1)
    assert METRICS["medae"].fn([1, 2, 3], [1, 2, 13]) == 0


def test_log_losses_clip_and_renormalise_like_kaggle() -> None:
    logloss, multi = METRICS["logloss"].fn, METRICS["multiclass_logloss"].fn
    assert logloss([1, 0], [0.0, 1.0]) == pytest.approx(-math.log(1e-15), rel=1e-4)  # clipped, finite
    assert multi([0, 1], [[0.2, 0.2, 0.4], [0.1, 0.1, 0.2]]) == pytest.approx(math.log(4))  # rows rescaled to sum 1
    assert multi([0, 2], np.full((2, 3), 1 / 3)) == pytest.approx(math.log(3))


def test_log_metrics_survive_negative_predictions() -> None:
    assert math.isfinite(METRICS["rmsle"].fn([1, 2, 3], [-5, 2, 3]))
    assert METRICS["rmsle"].fn([0, 2], [-5, 2]) == 0  # clipped at zero, which is the truth
    assert math.isfinite(METRICS["rmse_log"].fn([1, 2, 3], [-5, 0, 3]))


def test_qwk_rounds_predictions_to_integer_labels() -> None:
    qwk = METRICS["quadratic_weighted_kappa"].fn
    y = _train("playground-series-s3e5", ("Id", "quality"))["quality"].to_numpy()
    assert qwk(y, y + 0.3) == pytest.approx(1.0)
    assert qwk(y, [str(v) for v in y]) == pytest.approx(1.0)


# ---------------------------------------------------------------------------------------------
# Label normalisation


def test_normalise_labels_unifies_booleans_and_integral_numbers() -> None:
    bools = normalise_labels([True, "TRUE", "true", " True ", np.True_])
    assert set(bools) == {"true"}
    ones = normalise_labels([1, "1.0", "1", 1.0, np.int64(1), " 1 "])
    assert set(ones) == {"1"}
    assert normalise_labels([1.5, "1.50"]).tolist() == ["1.5", "1.5"]
    assert normalise_labels(["EAP", "eap"]).tolist() == ["EAP", "eap"]  # class names stay exact
    assert normalise_labels([True])[0] != normalise_labels([1])[0]


def test_normalise_labels_rejects_missing_values() -> None:
    with pytest.raises(ValueError):
        normalise_labels(["a", None])
    with pytest.raises(ValueError):
        normalise_labels(pd.Series([1.0, np.nan]))


def test_label_metrics_compare_spreadsheet_booleans_with_python_booleans() -> None:
    truth = _train("spaceship-titanic", ("PassengerId", "Transported"))["Transported"]
    assert truth.dtype == bool  # pandas parses the file's TRUE/FALSE
    as_text = truth.map({True: "True", False: "False"})
    assert METRICS["accuracy"].fn(truth, as_text) == 1.0
    assert METRICS["f1"].fn(truth, as_text) == 1.0


def test_f1_positive_class_is_one_else_the_minority() -> None:
    f1 = METRICS["f1"].fn
    # 1 is positive even when it is the majority: predicting it always gives F1 = 2*0.75/1.75.
    assert f1([1, 1, 1, 0], [1, 1, 1, 1]) == pytest.approx(6 / 7)
    # Without 1/true the minority class ("spam") is positive: one hit of two -> F1 = 2/3.
    assert f1(["ham", "ham", "ham", "spam", "spam"], ["ham", "ham", "ham", "spam", "ham"]) == pytest.approx(2 / 3)


# ---------------------------------------------------------------------------------------------
# Detection


def _shared_competitions() -> list[Path]:
    return sorted(p for p in COMPETITIONS.iterdir() if (p / "competition.toml").is_file())


def test_all_eight_shared_competitions_are_present() -> None:
    assert len(_shared_competitions()) == 8


@pytest.mark.parametrize("folder", _shared_competitions(), ids=lambda p: p.name)
def test_detect_metric_on_shared_descriptions(folder: Path) -> None:
    truth = tomllib.loads((folder / "competition.toml").read_text())["grading"]["metric"]
    assert detect_metric((folder / "description.md").read_text()) == truth


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("## Evaluation\nSubmissions are evaluated on area under the ROC curve between the predicted probability and the observed target.", "auc"),
        ("## Evaluation\nThe leaderboard uses Root Mean Squared Error (RMSE).", "rmse"),
        ("## Evaluation\nScores are the MAE of your predictions.", "mae"),
        ("## Evaluation\nWe compute the mean absolute error between predicted and true prices.", "mae"),
        ("# Evaluation\nSubmissions are scored on the log loss. A smaller log-loss is better.", "logloss"),
        ("## Evaluation\nThe metric is the multiclass logloss over 10 classes.", "multiclass_logloss"),
        ("## Metric\nMean Absolute Percentage Error.", "mape"),
        ("## Evaluation\nBalanced accuracy over the three labels.", "balanced_accuracy"),
        ("## Evaluation\nMacro-averaged F1 score.", "macro_f1"),
        ("## Evaluation\nSubmissions are evaluated by the Matthews correlation coefficient.", "mcc"),
        ("## Evaluation\nThe coefficient of determination R-squared.", "r2"),
        ("Submissions are evaluated on the AUC.\n\nThe data has 30 columns.", "auc"),
    ],
)
def test_detect_metric_on_invented_phrasings(text: str, expected: str) -> None:
    assert detect_metric(text) == expected


def test_detect_metric_returns_none_without_a_metric() -> None:
    text = "# Cats\n\n## Overview\nPredict which photos show cats.\n\n## Data\ntrain.csv holds labels; test.csv does not."
    assert detect_metric(text) is None


def test_detect_metric_prefers_the_evaluation_section() -> None:
    text = (
        "# Sensors\n\n## Overview\nEarlier work reported the area under the ROC curve and accuracy of sensors.\n\n"
        "```python\n# metric: accuracy (a code comment, not a heading)\n```\n\n"
        "## Evaluation\nSubmissions are scored with RMSE.\n\n"
        "## Data\nThe accuracy column is the sensor's accuracy."
    )
    assert detect_metric(text) == "rmse"


def test_for_task_upgrades_binary_metrics_for_multiclass() -> None:
    assert for_task("logloss", 3) == "multiclass_logloss"
    assert for_task("Log Loss", 2) == "logloss"
    assert for_task("f1", 5) == "macro_f1"
    assert for_task("f1", 2) == "f1"
    assert for_task("rmse", None) == "rmse"
    with pytest.raises(UnknownMetricError):
        for_task("nope", 2)


def test_better_is_strict_and_direction_aware() -> None:
    higher, lower = Direction(True), Direction(False)
    assert higher.better(0.9, 0.8) and not higher.better(0.8, 0.9)
    assert lower.better(0.1, 0.2) and not lower.better(0.2, 0.1)
    assert not higher.better(0.5, 0.5) and not lower.better(0.5, 0.5)
    assert higher.better(0.1, float("nan")) and not lower.better(float("nan"), 0.1)


# ---------------------------------------------------------------------------------------------
# Prediction frames


def _binary_frame() -> tuple[pd.DataFrame, pd.DataFrame, np.ndarray]:
    df = _titanic()
    p1 = np.where(df["Sex"] == "female", 0.74, 0.19)  # the gender model's survival rates
    y_true = df.rename(columns={"PassengerId": "id"})[["id", "Survived"]]
    pred = pd.DataFrame({"id": y_true["id"], "Survived": (p1 > 0.5).astype(int),
                         "Survived__proba__0": 1 - p1, "Survived__proba__1": p1})
    return y_true, pred.sample(frac=1, random_state=1), p1


def test_score_prediction_frame_binary() -> None:
    y_true, pred, p1 = _binary_frame()
    y = y_true["Survived"].to_numpy()
    assert score_prediction_frame("accuracy", y_true, pred, ["Survived"]) == pytest.approx(accuracy_score(y, p1 > 0.5))
    assert score_prediction_frame("auc", y_true, pred, ["Survived"]) == pytest.approx(roc_auc_score(y, p1))
    assert score_prediction_frame("logloss", y_true, pred, ["Survived"]) == pytest.approx(log_loss(y, p1))


def test_score_prediction_frame_boolean_target_uses_the_true_column_as_positive() -> None:
    df = _train("spaceship-titanic", ("PassengerId", "Transported", "CryoSleep")).dropna()
    y_true = df.rename(columns={"PassengerId": "id"})[["id", "Transported"]]
    p_true = np.where(df["CryoSleep"].astype(bool), 0.8, 0.35)
    # "True" listed first: the positive class is found by its label, not its position.
    pred = pd.DataFrame({"id": df["PassengerId"], "Transported": p_true > 0.5,
                         "Transported__proba__True": p_true, "Transported__proba__False": 1 - p_true})
    expected = roc_auc_score(df["Transported"].to_numpy(), p_true)
    assert expected > 0.6
    assert score_prediction_frame("auc", y_true, pred, ["Transported"]) == pytest.approx(expected)


def test_score_prediction_frame_multiclass_proba() -> None:
    df = _train("spooky-author-identification", ("id", "author")).head(3000)
    classes = ["EAP", "HPL", "MWS"]
    rng = np.random.default_rng(0)
    proba = rng.dirichlet(np.ones(3), size=len(df))
    proba[np.arange(len(df)), df["author"].map({c: i for i, c in enumerate(classes)})] += 1.0
    proba /= proba.sum(axis=1, keepdims=True)
    pred = pd.DataFrame({"id": df["id"], "author": np.array(classes)[proba.argmax(axis=1)]})
    for i, c in enumerate(classes):
        pred[f"author__proba__{c}"] = proba[:, i]
    score = score_prediction_frame("multiclass_logloss", df, pred.iloc[::-1], ["author"])
    assert score == pytest.approx(log_loss(df["author"], proba, labels=classes))
    assert score_prediction_frame("accuracy", df, pred, ["author"]) == pytest.approx(
        accuracy_score(df["author"], pred["author"]))


def test_score_prediction_frame_regression_and_id_checks() -> None:
    df = _train("house-prices-advanced-regression-techniques", ("Id", "SalePrice")).rename(columns={"Id": "id"})
    pred = df.assign(SalePrice=df["SalePrice"] * 1.1)
    pred["id"] = pred["id"].astype(str)  # ids compare as text: 1461 == "1461"
    assert score_prediction_frame("rmse_log", df, pred, ["SalePrice"]) == pytest.approx(math.log(1.1))
    assert score_prediction_frame("rmse", df, pred.sample(frac=1, random_state=0), ["SalePrice"]) == pytest.approx(
        float(np.sqrt(np.mean((0.1 * df["SalePrice"]) ** 2))))
    with pytest.raises(ValueError, match="ids differ"):
        score_prediction_frame("rmse", df, pred.iloc[1:], ["SalePrice"])
