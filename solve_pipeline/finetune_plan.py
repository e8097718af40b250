"""Which model families enter the race for a given feature set, and which of them HEBO may tune.

Cheapest first: the race's first rung then gives early families their scores before slow ones
start, and the late-fusion net only runs where it has something trees cannot read well (text or
images), unless asked for on tables too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from solve_pipeline.baseline_models import (
    Candidate, LightGBMModel, LinearModel, ModelOptions, _linear_c, linear_matrices, tree_matrices,
)
from solve_pipeline.dataset import FeatureSet
from solve_pipeline.hebo_tool import LIGHTGBM_SPACE, SearchParam
from solve_pipeline.setup_modules import TargetSpec
from solve_pipeline.tuning import Tunable

LIGHTGBM_DEFAULTS: dict[str, Any] = {"learning_rate": 0.05, "num_leaves": 31, "min_child_samples": 20,
                                     "feature_fraction": 0.8, "bagging_fraction": 0.8, "lambda_l2": 1.0}
LINEAR_SPACE: list[SearchParam] = [SearchParam(name="C", kind="pow", lb=1e-3, ub=1e3)]
# CatBoostModel's own defaults (random_strength and bagging_temperature are CatBoost's).
CATBOOST_DEFAULTS: dict[str, Any] = {"learning_rate": 0.08, "depth": 6, "l2_leaf_reg": 3.0,
                                     "random_strength": 1.0, "bagging_temperature": 1.0}


def _lightgbm(params: dict[str, Any] | None = None, name: str = "lightgbm") -> Candidate:
    def make(spec: TargetSpec, options: ModelOptions, features: FeatureSet) -> LightGBMModel:
        return LightGBMModel(spec, options, categorical=features.categorical_indices, params=params)

    return Candidate(name, tree_matrices, make)


def _lightgbm_target_encoded(params: dict[str, Any] | None = None) -> Candidate:
    from solve_pipeline.target_encoding import TargetEncoded, high_cardinality_columns

    def make(spec: TargetSpec, options: ModelOptions, features: FeatureSet) -> Any:
        inner = LightGBMModel(spec, options, categorical=features.categorical_indices, params=params)
        return TargetEncoded(inner, high_cardinality_columns(features), spec, options.seed)

    return Candidate("lightgbm_te", tree_matrices, make)


def _catboost(params: dict[str, Any] | None = None) -> Candidate:
    from solve_pipeline.families import CatBoostModel

    def make(spec: TargetSpec, options: ModelOptions, features: FeatureSet) -> Any:
        return CatBoostModel(spec, options, categorical=features.categorical_indices, params=params)

    return Candidate("catboost", tree_matrices, make)


def _forest(kind: str) -> Candidate:
    from solve_pipeline.families import ExtraTreesModel, RandomForestModel

    model = ExtraTreesModel if kind == "extratrees" else RandomForestModel
    return Candidate(kind, tree_matrices, lambda s, o, f: model(s, o))


def _linear(C: float | None = None) -> Candidate:
    return Candidate("linear", linear_matrices,
                     lambda s, o, f: LinearModel(s, o, C=_linear_c(f) if C is None else C))


def _fusion(params: dict[str, Any] | None = None, embed_seconds: float = 240.0) -> Candidate:
    from solve_pipeline.fusion import FusionModel, fusion_matrices

    def matrices(features: FeatureSet, seed: int) -> Any:
        # Sentence embedding is the net's big fixed cost; past its share it falls back to TF-IDF SVD.
        return fusion_matrices(features, seed, max_embed_seconds=embed_seconds)

    return Candidate("fusion", matrices, lambda s, o, f: FusionModel(s, o, params=params))


# A standardized ImageNet/MiniLM embedding of ~1,000 dimensions wants stronger regularization than
# a table: C from 0.01 to 1 measured within 0.002 accuracy on 10-monkey-species, 0.1 in the middle.
PRETRAINED_C = 0.1


def _pretrained_linear(C: float = PRETRAINED_C, seconds: float = 240.0) -> Candidate:
    """Logistic/ridge on frozen pretrained embeddings (and the table): transfer learning's
    strong, cheap baseline, and what wins on small photo sets."""
    from solve_pipeline.pretrained_features import pretrained_matrices

    def matrices(features: FeatureSet, seed: int) -> Any:
        return pretrained_matrices(features, seconds=seconds)

    return Candidate("pretrained_linear", matrices, lambda s, o, f: LinearModel(s, o, C=C))


def has_pretrained_inputs(features: FeatureSet) -> bool:
    return features.image_paths_train is not None or features.raw_text_columns_train is not None


def has_rich_inputs(features: FeatureSet) -> bool:
    return features.text_train is not None or features.image_train is not None


# Share of the whole budget the late-fusion net may spend embedding text before it falls back.
EMBED_SHARE = 0.25
# Share of the budget pretrained embeddings may take: on photos they are what the score rests on.
PRETRAINED_SHARE = 0.4
# Text alone may take more: MiniLM on 10,876 tweets needs 45-75 s on 2 cores, and at a 120 s
# budget that beats what the time would otherwise buy (tuning TF-IDF's C: F1 0.742 -> 0.756).
PRETRAINED_TEXT_SHARE = 0.55


def pretrained_share(features: FeatureSet) -> float:
    return PRETRAINED_SHARE if features.image_paths_train is not None else PRETRAINED_TEXT_SHARE


def race_candidates(features: FeatureSet, light: bool = False, fusion: str = "auto",
                    budget_s: float | None = None) -> list[Candidate]:
    if light:
        return [_linear(), _lightgbm()]
    candidates = [_linear()]
    if has_pretrained_inputs(features):
        # Early, so its embeddings are computed once and shared by the fusion net later. On
        # images it sets the race's pace (a family that always finishes): pixels alone lose by far.
        seconds = 240.0 if budget_s is None else pretrained_share(features) * budget_s
        pretrained = _pretrained_linear(seconds=seconds)
        if features.image_paths_train is not None:
            candidates.insert(0, pretrained)
        else:
            candidates.append(pretrained)
    candidates.append(_lightgbm())
    from solve_pipeline.target_encoding import high_cardinality_columns

    if high_cardinality_columns(features):
        candidates.append(_lightgbm_target_encoded())
    candidates += [_catboost(), _forest("extratrees"), _forest("random_forest")]
    if fusion == "on" or (fusion == "auto" and has_rich_inputs(features)):
        # No floor: on a 10 s budget a 10 s embedding would be the whole budget.
        embed_seconds = 240.0 if budget_s is None else EMBED_SHARE * budget_s
        candidates.append(_fusion(embed_seconds=embed_seconds))
    return candidates


@dataclass(frozen=True)
class FinetuneOption:
    """A pretrained network fine-tuned end to end, priced for the whole K-fold CV."""

    candidate: Candidate
    seconds: float
    epochs: int


# Epochs tried, most first: a pretrained network gains little after a few on a small set.
FINETUNE_EPOCHS = (3, 2, 1)
# Below this no fine-tuning fits anywhere, and the timed probe itself would cost seconds.
FINETUNE_MIN_S = 30.0


def _minilm_finetune(epochs: int) -> Candidate:
    from solve_pipeline.text_finetune import MiniLMFineTuneModel, text_finetune_matrices

    return Candidate("minilm_finetune", text_finetune_matrices,
                     lambda s, o, f: MiniLMFineTuneModel(s, o, {"max_epochs": epochs}))


# Image fine-tuning runs on cached maps, where an epoch is cheap: early stopping (patience 3)
# usually ends it well before the first of these.
IMAGE_FINETUNE_EPOCHS = (15, 8, 4)


def _image_finetune(features: FeatureSet, n_folds: int, seconds: float,
                    threads: int) -> tuple[FinetuneOption | None, str]:
    """The last block of the embedding's own backbone fine-tuned on cached trunk maps."""
    from solve_pipeline.image_finetune import (
        ImageFinetuneModel, estimate_finetune_seconds, fine_tunable, image_finetune_matrices, map_shape,
    )
    from solve_pipeline.pretrained_features import pretrained_features

    plan = pretrained_features(features, seconds=pretrained_share(features) * seconds, threads=threads).image_plan
    if plan is None or not fine_tunable(plan.backbone):
        return None, "images: no fine-tunable backbone embedded them"
    assert features.image_paths_train is not None and features.image_paths_test is not None
    n_images = len(next(iter(features.image_paths_train.values()))) + features.n_test
    # The maps hold both views; the plan's per-image pace was measured for one, or for two with flip.
    maps_s = n_images * plan.per_image_s * (1 if plan.flip_tta else 2)
    rows = int(features.n_train * (n_folds - 1) / max(n_folds, 1))
    per_epoch = n_folds * estimate_finetune_seconds(
        map_shape(plan.backbone, plan.px), rows, 1.0, threads, backbone=plan.backbone,
        predict_rows=features.n_test + features.n_train // max(n_folds, 1))
    fitting = [e for e in IMAGE_FINETUNE_EPOCHS if maps_s + e * per_epoch <= seconds]
    if not fitting:
        return None, (f"images: maps ~{maps_s:.0f} s + {IMAGE_FINETUNE_EPOCHS[-1]} epochs x {n_folds} folds "
                      f"~{IMAGE_FINETUNE_EPOCHS[-1] * per_epoch:.0f} s do not fit {seconds:.0f} s: frozen features only")
    epochs = fitting[0]

    def matrices(features: FeatureSet, seed: int) -> Any:
        return image_finetune_matrices(features, seed, plan=plan, seconds=1.5 * maps_s + 5.0, threads=threads)

    candidate = Candidate("image_finetune", matrices,
                          lambda s, o, f: ImageFinetuneModel(s, o, {"max_epochs": epochs}))
    total = maps_s + epochs * per_epoch
    return FinetuneOption(candidate, total, epochs), (
        f"images: {plan.backbone.name}@{plan.px} last block fine-tuned, up to {epochs} epochs x {n_folds} folds "
        f"~{total:.0f} s of {seconds:.0f} s")


def finetune_options(features: FeatureSet, n_folds: int, seconds: float,
                     threads: int = 2) -> tuple[list[FinetuneOption], list[str]]:
    """What fine-tuning fits in `seconds` (most epochs that fit, from a timed probe of real
    batches), and a note for every modality on why or why not."""
    options: list[FinetuneOption] = []
    notes: list[str] = []
    rows = features.n_train * (n_folds - 1) / max(n_folds, 1)
    if seconds < FINETUNE_MIN_S:
        return options, [f"{max(seconds, 0):.0f} s left: too little to fine-tune anything"]
    if features.image_paths_train is not None:
        option, note = _image_finetune(features, n_folds, seconds, threads)
        notes.append(note)
        if option is not None:
            options.append(option)
            seconds -= option.seconds
    if features.raw_text_columns_train is not None:
        from solve_pipeline.text_finetune import estimate_finetune_seconds

        per_epoch = n_folds * estimate_finetune_seconds(features, int(rows), 1.0, threads)
        fitting = [e for e in FINETUNE_EPOCHS if e * per_epoch <= seconds]
        if fitting:
            options.append(FinetuneOption(_minilm_finetune(fitting[0]), fitting[0] * per_epoch, fitting[0]))
            notes.append(f"text: MiniLM fine-tuning, {fitting[0]} epochs x {n_folds} folds "
                         f"~{fitting[0] * per_epoch:.0f} s of {seconds:.0f} s")
        else:
            notes.append(f"text: one MiniLM epoch x {n_folds} folds needs ~{per_epoch:.0f} s, "
                         f"{seconds:.0f} s left: frozen embeddings only")
    return options, notes


def tunable_for(name: str, features: FeatureSet, targets: list[TargetSpec]) -> Tunable | None:
    """The HEBO set-up for a race family, or None when it is not worth tuning."""
    if name == "linear" and any(t.is_classification for t in targets):
        # Regularisation is the logistic model's one real knob: it decides calibration on wide
        # tables (leaf's 192 shape features) and on TF-IDF (spooky). Ridge picks its own alpha.
        return Tunable("linear", LINEAR_SPACE, {"C": _linear_c(features)}, lambda p: _linear(p["C"]))
    if name == "pretrained_linear" and any(t.is_classification for t in targets):
        return Tunable("pretrained_linear", LINEAR_SPACE, {"C": PRETRAINED_C},
                       lambda p: _pretrained_linear(p["C"]))
    if name == "lightgbm":
        return Tunable("lightgbm", LIGHTGBM_SPACE, LIGHTGBM_DEFAULTS, lambda p: _lightgbm(p, "lightgbm_tuned"))
    if name == "lightgbm_te":
        return Tunable("lightgbm_te", LIGHTGBM_SPACE, LIGHTGBM_DEFAULTS, _lightgbm_target_encoded)
    if name == "catboost":
        from solve_pipeline.families import CATBOOST_SPACE

        return Tunable("catboost", CATBOOST_SPACE, CATBOOST_DEFAULTS, _catboost)
    if name == "fusion":
        from solve_pipeline.fusion import FUSION_DEFAULTS, FUSION_SPACE

        return Tunable("fusion", FUSION_SPACE, FUSION_DEFAULTS, _fusion)
    return None
