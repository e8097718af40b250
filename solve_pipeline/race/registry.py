"""The model families, one entry each: what it reads, how it is built, its HEBO space and defaults,
and when it runs. The race (`race_candidates`), HEBO tuning (`tunable_for`) and the fusion net read
their facts here; `hebo_tool` only suggests and observes.

Race order is the order of `FAMILIES`, cheapest first: the race's first rung then gives early
families their scores before slow ones start, and the late-fusion net only runs where it has
something trees cannot read well (text or images), unless asked for on tables too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from agentk.core.records.config import Fusion
from solve_pipeline.base.baseline_models import (
    LightGBMModel, LinearModel, Model, ModelCandidate, ModelOptions, _linear_c, dense_numeric_columns, linear_matrices,
    tree_matrices,
)
from solve_pipeline.base.dataset import FREQUENCY, TEXT_STAT, FeatureSet
from solve_pipeline.tables.families import CatBoostModel, ExtraTreesModel, NaiveBayesModel, NBSVMModel, RandomForestModel
from solve_pipeline.inputs.forecast_features import PREFIX as FORECAST_PREFIX, level_columns
from solve_pipeline.fusion.fusion_defaults import EMBED_DEFAULT_S, FUSION_DEFAULTS
from solve_pipeline.fusion.spectrogram_embedding import has_clips, spectrogram_inputs
from solve_pipeline.race.hebo_tool import SearchParam
from solve_pipeline.tables.ordinal import OrdinalRegressionModel, ordinal_values
from solve_pipeline.base.setup_modules import TargetSpec
from solve_pipeline.tables.target_encoding import TargetEncoded, high_cardinality_columns
from solve_pipeline.tables.target_scale import Log1pTarget
from solve_pipeline.texts.text_views import View, text_view
from solve_pipeline.race.tuning import Tunable

Params = dict[str, Any]
# (features, seed, the solve's budget in seconds or None) -> train and test matrices, or None
# when the family has nothing to read.
Inputs = Callable[[FeatureSet, int, float | None], Any]
# (target, options, features, tuned params or None for the defaults) -> an unfitted model.
Constructor = Callable[[TargetSpec, ModelOptions, FeatureSet, Params | None], Model]


# ---- search spaces and defaults (paper defaults: 20 trials, 30 epochs, a time cap per trial) ----

LINEAR_SPACE: list[SearchParam] = [SearchParam(name="C", kind="pow", lb=1e-3, ub=1e3)]
NAIVE_BAYES_SPACE: list[SearchParam] = [SearchParam(name="alpha", kind="pow", lb=1e-3, ub=1.0)]
NAIVE_BAYES_ALPHA = 0.05
CHARS_ALPHA = 0.01  # naive Bayes over character TF-IDF (spooky: 0.381 calibrated at 0.01, out of fold)
COMPLEMENT_ALPHA = 0.3
NBSVM_C = 4.0
NBSVM_MAX_CLASSES = 10
CHARS_C = 30.0  # character n-grams want weak regularisation (spooky: 0.408 at C=30)
# A standardized ImageNet/MiniLM embedding of ~1,000 dimensions wants stronger regularization than
# a table: C from 0.01 to 1 measured within 0.002 accuracy on 10-monkey-species, 0.1 in the middle.
PRETRAINED_C = 0.1
FROZEN_EMBEDDING_FAMILY = "pretrained_linear"  # the family over frozen pretrained embeddings

LIGHTGBM_SPACE: list[SearchParam] = [
    SearchParam(name="learning_rate", kind="pow", lb=0.01, ub=0.3),
    SearchParam(name="num_leaves", kind="int", lb=8, ub=256),
    SearchParam(name="min_child_samples", kind="int", lb=5, ub=100),
    SearchParam(name="feature_fraction", kind="num", lb=0.4, ub=1.0),
    SearchParam(name="bagging_fraction", kind="num", lb=0.4, ub=1.0),
    SearchParam(name="lambda_l2", kind="pow", lb=1e-3, ub=10.0),
]
LIGHTGBM_DEFAULTS: Params = {"learning_rate": 0.05, "num_leaves": 31, "min_child_samples": 20,
                             "feature_fraction": 0.8, "bagging_fraction": 0.8, "lambda_l2": 1.0}

CATBOOST_SPACE: list[SearchParam] = [
    SearchParam(name="learning_rate", kind="pow", lb=0.01, ub=0.3),
    SearchParam(name="depth", kind="int", lb=3, ub=10),
    SearchParam(name="l2_leaf_reg", kind="pow", lb=0.5, ub=30.0),
    SearchParam(name="random_strength", kind="pow", lb=0.1, ub=10.0),
    SearchParam(name="bagging_temperature", kind="num", lb=0.0, ub=1.0),
]
# Configurations known to do well across many tables, tried before HEBO searches from scratch
# (in the spirit of AutoGluon's and TabRepo's zero-shot portfolios: a large, slowly learning model
# and a small, strongly regularised one), each inside LIGHTGBM_SPACE.
LIGHTGBM_PORTFOLIO: tuple[Params, ...] = (
    {"learning_rate": 0.03, "num_leaves": 128, "min_child_samples": 5, "feature_fraction": 0.9,
     "bagging_fraction": 1.0, "lambda_l2": 1.0},
    {"learning_rate": 0.05, "num_leaves": 16, "min_child_samples": 50, "feature_fraction": 0.6,
     "bagging_fraction": 0.8, "lambda_l2": 5.0},
)

# CatBoostModel's own defaults (random_strength and bagging_temperature are CatBoost's).
CATBOOST_DEFAULTS: Params = {"learning_rate": 0.08, "depth": 6, "l2_leaf_reg": 3.0,
                             "random_strength": 1.0, "bagging_temperature": 1.0}
CATBOOST_PORTFOLIO: tuple[Params, ...] = (
    {"learning_rate": 0.05, "depth": 8, "l2_leaf_reg": 3.0, "random_strength": 1.0, "bagging_temperature": 0.5},
    {"learning_rate": 0.1, "depth": 4, "l2_leaf_reg": 10.0, "random_strength": 1.0, "bagging_temperature": 1.0},
)

NN_SPACE: list[SearchParam] = [
    SearchParam(name="learning_rate", kind="pow", lb=1e-6, ub=1e-2),
    SearchParam(name="optimizer", kind="cat", categories=["Adam", "SGD", "AdamW"]),
    SearchParam(name="weight_decay", kind="pow", lb=1e-6, ub=1e-2),
    SearchParam(name="dropout", kind="num", lb=0.0, ub=0.5),
    SearchParam(name="batch_size", kind="cat", categories=["32", "64", "128", "256"]),
]
FUSION_SPACE: list[SearchParam] = [
    *NN_SPACE,
    SearchParam(name="hidden_size", kind="int", lb=32, ub=512),
]


# ---- budget shares of the families that embed ----

# Share of the whole budget the late-fusion net may spend embedding text before it falls back.
EMBED_SHARE = 0.25
# Share of the budget pretrained embeddings may take: on photos they are what the score rests on.
PRETRAINED_SHARE = 0.4
# Text alone may take more: MiniLM on 10,876 tweets needs 45-75 s on 2 cores, and at a 120 s
# budget that beats what the time would otherwise buy (tuning TF-IDF's C: F1 0.742 -> 0.756).
PRETRAINED_TEXT_SHARE = 0.55


def pretrained_share(features: FeatureSet) -> float:
    return PRETRAINED_SHARE if features.image_paths_train is not None else PRETRAINED_TEXT_SHARE


# ---- when a family applies ----


def has_pretrained_inputs(features: FeatureSet) -> bool:
    return features.image_paths_train is not None or features.raw_text_columns_train is not None


def has_rich_inputs(features: FeatureSet) -> bool:
    return features.text_train is not None or features.image_train is not None


def has_images(features: FeatureSet) -> bool:
    return features.image_paths_train is not None


def has_text(features: FeatureSet) -> bool:
    return features.text_train is not None and features.text_train.shape[1] > 0


# A power transform earns its own linear family on tables with a real numeric block.
POWER_MIN_COLUMNS = 3


def has_dense_numerics(features: FeatureSet) -> bool:
    return len(dense_numeric_columns(features)) >= POWER_MIN_COLUMNS


def has_high_cardinality(features: FeatureSet) -> bool:
    return bool(high_cardinality_columns(features))


def is_forecast(features: FeatureSet) -> bool:
    """The table carries forecast_features.py's horizon-respecting lags: dated series."""
    return any(name.startswith(FORECAST_PREFIX) for name in features.tab_names)


def _is_big(features: FeatureSet) -> bool:
    return features.big


def text_only(features: FeatureSet) -> bool:
    """Text with no table beside it (only the texts' own length and word counts, or id parts)."""
    return has_text(features) and all(kind in (TEXT_STAT, FREQUENCY) for kind in features.tab_kinds)


def _big_without_keys(features: FeatureSet) -> bool:
    return features.big and not has_high_cardinality(features)


def _always(features: FeatureSet) -> bool:
    return True


def _never(features: FeatureSet) -> bool:
    return False


# ---- inputs: the matrices each family reads ----


def _tree_inputs(features: FeatureSet, seed: int, budget_s: float | None) -> Any:
    return tree_matrices(features, seed)


def _linear_inputs(features: FeatureSet, seed: int, budget_s: float | None) -> Any:
    return linear_matrices(features, seed)


def _linear_power_inputs(features: FeatureSet, seed: int, budget_s: float | None) -> Any:
    return linear_matrices(features, seed, power=True)


def _view_inputs(view: View) -> Inputs:
    def inputs(features: FeatureSet, seed: int, budget_s: float | None) -> Any:
        return text_view(features, view)

    return inputs


def _pretrained_inputs(features: FeatureSet, seed: int, budget_s: float | None) -> Any:
    # Lazy: the embeddings need torch, which a tabular solve never loads.
    from solve_pipeline.fusion.pretrained_features import pretrained_matrices

    seconds = EMBED_DEFAULT_S if budget_s is None else pretrained_share(features) * budget_s
    return pretrained_matrices(features, seconds=seconds)


def _pretrained_head_inputs(features: FeatureSet, seed: int, budget_s: float | None) -> Any:
    from solve_pipeline.fusion.pretrained_features import pretrained_matrices

    seconds = EMBED_DEFAULT_S if budget_s is None else pretrained_share(features) * budget_s
    return pretrained_matrices(features, seconds=seconds, head=True)


def _fusion_inputs(features: FeatureSet, seed: int, budget_s: float | None) -> Any:
    from solve_pipeline.fusion.fusion_inputs import fusion_matrices  # lazy: torch

    # Sentence embedding is the net's big fixed cost; past its share it falls back to TF-IDF SVD.
    # No floor: on a 10 s budget a 10 s embedding would be the whole budget.
    seconds = EMBED_DEFAULT_S if budget_s is None else EMBED_SHARE * budget_s
    return fusion_matrices(features, seed, max_embed_seconds=seconds)


# ---- constructors ----


def _linear(spec: TargetSpec, options: ModelOptions, features: FeatureSet, params: Params | None) -> Model:
    return LinearModel(spec, options, C=_linear_c(features) if params is None else params["C"])


def _linear_chars(spec: TargetSpec, options: ModelOptions, features: FeatureSet, params: Params | None) -> Model:
    return LinearModel(spec, options, C=CHARS_C if params is None else params["C"])


def _pretrained_linear(spec: TargetSpec, options: ModelOptions, features: FeatureSet,
                       params: Params | None) -> Model:
    return LinearModel(spec, options, C=PRETRAINED_C if params is None else params["C"])


def _ordinal(spec: TargetSpec, options: ModelOptions, features: FeatureSet, params: Params | None) -> Model:
    return OrdinalRegressionModel(spec, options)


def _naive_bayes(spec: TargetSpec, options: ModelOptions, features: FeatureSet, params: Params | None) -> Model:
    return NaiveBayesModel(spec, options, alpha=NAIVE_BAYES_ALPHA if params is None else params["alpha"])


def _naive_bayes_chars(spec: TargetSpec, options: ModelOptions, features: FeatureSet, params: Params | None) -> Model:
    return NaiveBayesModel(spec, options, alpha=CHARS_ALPHA if params is None else params["alpha"])


def _complement_nb(spec: TargetSpec, options: ModelOptions, features: FeatureSet, params: Params | None) -> Model:
    return NaiveBayesModel(spec, options, alpha=COMPLEMENT_ALPHA if params is None else params["alpha"], complement=True)


def _nbsvm(spec: TargetSpec, options: ModelOptions, features: FeatureSet, params: Params | None) -> Model:
    return NBSVMModel(spec, options, C=NBSVM_C if params is None else params["C"])


def _lightgbm(spec: TargetSpec, options: ModelOptions, features: FeatureSet, params: Params | None) -> Model:
    return LightGBMModel(spec, options, categorical=features.categorical_indices, params=params)


def _lightgbm_level(spec: TargetSpec, options: ModelOptions, features: FeatureSet, params: Params | None) -> Model:
    level, fallback = level_columns(features.tab_names, spec.column) or (None, None)
    return Log1pTarget(LightGBMModel(spec, options, categorical=features.categorical_indices, params=params),
                       level, fallback)


def _lightgbm_te(spec: TargetSpec, options: ModelOptions, features: FeatureSet, params: Params | None) -> Model:
    inner = LightGBMModel(spec, options, categorical=features.categorical_indices, params=params)
    return TargetEncoded(inner, high_cardinality_columns(features), spec, options.seed)


def _catboost(spec: TargetSpec, options: ModelOptions, features: FeatureSet, params: Params | None) -> Model:
    return CatBoostModel(spec, options, categorical=features.categorical_indices, params=params)


def _extratrees(spec: TargetSpec, options: ModelOptions, features: FeatureSet, params: Params | None) -> Model:
    return ExtraTreesModel(spec, options)


def _random_forest(spec: TargetSpec, options: ModelOptions, features: FeatureSet,
                   params: Params | None) -> Model:
    return RandomForestModel(spec, options)


def _fusion(spec: TargetSpec, options: ModelOptions, features: FeatureSet, params: Params | None) -> Model:
    from solve_pipeline.fusion.fusion import FusionModel  # lazy: torch

    return FusionModel(spec, options, params=params)


# ---- the registry ----


@dataclass(frozen=True)
class Family:
    """One model family and everything the race, HEBO and reports need to know about it."""

    name: str
    inputs: Inputs
    constructor: Constructor
    applies: Callable[[FeatureSet], bool] = _always  # whether it enters the full race
    space: tuple[SearchParam, ...] = ()  # empty: HEBO leaves it alone
    defaults: Callable[[FeatureSet], Params] | None = None  # the untuned point inside `space`
    leads: Callable[[FeatureSet], bool] = _never  # it sets the race's pace: runs first
    light: bool = False  # in the light race (setup's quick check) too
    tune_classifiers_only: bool = False
    classifiers_only: bool = False  # enters the race only when every target is a class
    regressors_only: bool = False  # enters the race only when no target is a class
    max_classes: int | None = None  # enters only when no target has more classes (one model per class)
    ordinal_only: bool = False  # enters only when every target's classes are numbers (grades)
    portfolio: tuple[Params, ...] = ()  # configurations tried before HEBO's own, inside `space`
    switchable: bool = False  # the solver's --fusion on/off overrides `applies`


def _fixed(params: Params) -> Callable[[FeatureSet], Params]:
    return lambda features: params


FAMILIES: tuple[Family, ...] = (
    # Regularisation is the logistic model's one real knob: it decides calibration on wide
    # tables (leaf's 192 shape features) and on TF-IDF (spooky). Ridge picks its own alpha.
    Family("linear", _linear_inputs, _linear, space=tuple(LINEAR_SPACE),
           defaults=lambda features: {"C": _linear_c(features)}, light=True, tune_classifiers_only=True),
    # The same model over Yeo-Johnson-shaped numerics: histogram-like and skewed measurements
    # become near-normal, which a linear boundary reads far better (leaf-classification's 192
    # shape features: log loss 0.032 vs 0.045 out of fold, calibrated, tuned C).
    Family("linear_power", _linear_power_inputs, _linear, applies=has_dense_numerics, space=tuple(LINEAR_SPACE),
           defaults=lambda features: {"C": _linear_c(features)}, tune_classifiers_only=True),
    # Text views a stacking level feeds on: naive Bayes over word TF-IDF (lower-cased and as
    # written), word counts (and its complement form) and character n-grams, NB-SVM over word
    # presence, the logistic model over character 1-5 grams; the cheap ones first. On texts alone
    # naive Bayes sets the pace: seconds per fold where the logistic model over every n-gram takes
    # tens (spooky at 120 s: the logistic model's five folds were the whole race, 0.406, where naive
    # Bayes scores 0.365). Spooky, out of fold: the four oldest views stack to 0.308; with the four
    # newer ones, 0.292.
    Family("naive_bayes", _view_inputs("word_tfidf"), _naive_bayes, applies=has_text,
           space=tuple(NAIVE_BAYES_SPACE), defaults=_fixed({"alpha": NAIVE_BAYES_ALPHA}), classifiers_only=True,
           leads=text_only),
    Family("naive_bayes_cased", _view_inputs("word_tfidf_cased"), _naive_bayes, applies=has_text,
           space=tuple(NAIVE_BAYES_SPACE), defaults=_fixed({"alpha": NAIVE_BAYES_ALPHA}), classifiers_only=True),
    Family("naive_bayes_counts", _view_inputs("word_counts"), _naive_bayes, applies=has_text,
           space=tuple(NAIVE_BAYES_SPACE), defaults=_fixed({"alpha": NAIVE_BAYES_ALPHA}), classifiers_only=True),
    Family("complement_nb", _view_inputs("word_counts"), _complement_nb, applies=has_text,
           space=tuple(NAIVE_BAYES_SPACE), defaults=_fixed({"alpha": COMPLEMENT_ALPHA}), classifiers_only=True),
    Family("linear_chars", _view_inputs("char_tfidf"), _linear_chars, applies=has_text, space=tuple(LINEAR_SPACE),
           defaults=lambda features: {"C": CHARS_C}, tune_classifiers_only=True),
    Family("naive_bayes_chars", _view_inputs("char_tfidf"), _naive_bayes_chars, applies=has_text,
           space=tuple(NAIVE_BAYES_SPACE), defaults=_fixed({"alpha": CHARS_ALPHA}), classifiers_only=True),
    Family("nbsvm", _view_inputs("word_binary"), _nbsvm, applies=has_text, space=tuple(LINEAR_SPACE),
           defaults=_fixed({"C": NBSVM_C}), classifiers_only=True, max_classes=NBSVM_MAX_CLASSES),
    Family("naive_bayes_char_counts", _view_inputs("char_counts"), _naive_bayes, applies=has_text,
           space=tuple(NAIVE_BAYES_SPACE), defaults=_fixed({"alpha": NAIVE_BAYES_ALPHA}), classifiers_only=True),
    # The same model with the backbone's own ImageNet classifier's logits beside the pooled
    # features (one forward pass): ImageNet's 1,000 classes hold ~120 dog breeds and many animals
    # and objects, class scores a linear model reads well on fine-grained photos of them, and noise
    # on what they do not name (grades of blur). It sets the pace on photos, where it matters most
    # (a budget that embeds thousands of photos has no time for a second logistic model on them);
    # the pooled-only family follows, and the race and the blend keep what reads the task better.
    Family("pretrained_head", _pretrained_head_inputs, _pretrained_linear, applies=has_images,
           space=tuple(LINEAR_SPACE), defaults=_fixed({"C": PRETRAINED_C}), leads=has_images,
           tune_classifiers_only=True),
    # Logistic/ridge on frozen pretrained embeddings (and the table): transfer learning's strong,
    # cheap baseline, and what wins on small photo sets. Early, so its embeddings are computed
    # once and shared by the fusion net later. On images it sets the race's pace (a family that
    # always finishes): pixels alone lose by far.
    Family(FROZEN_EMBEDDING_FAMILY, _pretrained_inputs, _pretrained_linear, applies=has_pretrained_inputs,
           space=tuple(LINEAR_SPACE), defaults=_fixed({"C": PRETRAINED_C}), leads=has_images,
           tune_classifiers_only=True),
    # Grades (0-4 disease stages, 3-8 quality scores) set up as classes: a ridge regression on the
    # grade over the same embeddings, its value handed on as probabilities with that expectation,
    # so the decoding's cut points on the expected grade make it regression + fitted thresholds.
    # The race keeps whichever of the two reads the grades better.
    Family("pretrained_ordinal", _pretrained_inputs, _ordinal, applies=has_pretrained_inputs, ordinal_only=True),
    # Sound as pictures: each clip's log-mel spectrogram through a frozen ImageNet backbone, beside the table.
    Family("spectrogram_linear", spectrogram_inputs, _pretrained_linear, applies=has_clips,
           space=tuple(LINEAR_SPACE), defaults=_fixed({"C": PRETRAINED_C}), tune_classifiers_only=True),
    # On a big table boosting is the one family sure to matter: it sets the pace, with in-fold
    # target encoding when keys of many levels exist (a million rows with customer, device and
    # merchant keys: AUC 0.70 from their codes alone, where the keys' own effects decide).
    Family("lightgbm", _tree_inputs, _lightgbm, space=tuple(LIGHTGBM_SPACE),
           defaults=_fixed(LIGHTGBM_DEFAULTS), leads=_big_without_keys, light=True, portfolio=LIGHTGBM_PORTFOLIO),
    # Forecasts of counts and sales: the same model of log1p(target) less log1p(the series' recent
    # level), which learns what every series shares (seasonality, promotions, holidays) as ratios,
    # keeps a drifted series at its new level and never goes below zero; it sets the race's pace.
    # Daily sales, 15 series, first fold at 60 s: SMAPE 24.3 where log1p alone gave 29.5, LightGBM 27.2.
    Family("lightgbm_level", _tree_inputs, _lightgbm_level, applies=is_forecast, space=tuple(LIGHTGBM_SPACE),
           defaults=_fixed(LIGHTGBM_DEFAULTS), leads=is_forecast, portfolio=LIGHTGBM_PORTFOLIO, regressors_only=True),
    Family("lightgbm_te", _tree_inputs, _lightgbm_te, applies=has_high_cardinality,
           space=tuple(LIGHTGBM_SPACE), defaults=_fixed(LIGHTGBM_DEFAULTS), leads=_is_big, portfolio=LIGHTGBM_PORTFOLIO),
    Family("catboost", _tree_inputs, _catboost, space=tuple(CATBOOST_SPACE), defaults=_fixed(CATBOOST_DEFAULTS),
           portfolio=CATBOOST_PORTFOLIO),
    Family("extratrees", _tree_inputs, _extratrees),
    Family("random_forest", _tree_inputs, _random_forest),
    Family("fusion", _fusion_inputs, _fusion, applies=has_rich_inputs, space=tuple(FUSION_SPACE),
           defaults=_fixed(FUSION_DEFAULTS), switchable=True),
)
BY_NAME: dict[str, Family] = {family.name: family for family in FAMILIES}
# The families whose matrices are built from the tabular block: a new table column can move them.
TABLE_FAMILIES: frozenset[str] = frozenset(
    f.name for f in FAMILIES if f.inputs in (_tree_inputs, _linear_inputs, _linear_power_inputs))


def family_candidate(name: str, budget_s: float | None = None, params: Params | None = None) -> ModelCandidate:
    """The race's (or a HEBO trial's) candidate of family `name`; `params` None means its defaults."""
    family = BY_NAME[name]

    def matrices(features: FeatureSet, seed: int) -> Any:
        return family.inputs(features, seed, budget_s)

    return ModelCandidate(name, matrices, lambda s, o, f: family.constructor(s, o, f, params))


def _enters(family: Family, features: FeatureSet, fusion: Fusion, targets: list[TargetSpec] | None) -> bool:
    if family.classifiers_only and targets is not None and not all(t.is_classification for t in targets):
        return False
    if family.regressors_only and targets is not None and any(t.is_classification for t in targets):
        return False
    if family.max_classes is not None and targets is not None and \
            any(t.is_classification and t.n_classes > family.max_classes for t in targets):
        return False
    if family.ordinal_only and (targets is None or any(ordinal_values(t) is None for t in targets)):
        return False
    if family.switchable and fusion != Fusion.AUTO:
        return fusion == Fusion.ON
    return family.applies(features)


def race_candidates(features: FeatureSet, light: bool = False, fusion: Fusion = Fusion.AUTO,
                    budget_s: float | None = None, targets: list[TargetSpec] | None = None) -> list[ModelCandidate]:
    if light:
        return [family_candidate(f.name) for f in FAMILIES if f.light]
    entering = [f for f in FAMILIES if _enters(f, features, fusion, targets)]
    ordered = [f for f in entering if f.leads(features)] + [f for f in entering if not f.leads(features)]
    return [family_candidate(f.name, budget_s) for f in ordered]


def tunable_for(name: str, features: FeatureSet, targets: list[TargetSpec]) -> Tunable | None:
    """The HEBO set-up for a race family, or None when it is not worth tuning."""
    family = BY_NAME.get(name)
    if family is None or not family.space or family.defaults is None:
        return None
    if family.tune_classifiers_only and not any(t.is_classification for t in targets):
        return None
    # Tuning builds with the default embedding time: its matrices are the race's, already cached.
    return Tunable(name, list(family.space), family.defaults(features),
                   lambda params: family_candidate(name, params=params), [dict(p) for p in family.portfolio])
