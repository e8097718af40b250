"""Which pretrained networks to fine-tune end to end, priced from a timed probe for the whole K-fold CV.

Fine-tuning is not a race family: it runs after the race, only when its estimate fits the time
left before tuning's end, with the most epochs that fit.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from solve_pipeline.networks import device
from solve_pipeline.base.baseline_models import ModelCandidate
from solve_pipeline.base.dataset import FeatureSet
from solve_pipeline.race.registry import pretrained_share


@dataclass(frozen=True)
class FinetuneOption:
    """A pretrained network fine-tuned end to end, priced for the whole K-fold CV."""

    candidate: ModelCandidate
    seconds: float
    epochs: int


# Epochs tried, most first: a pretrained network gains little after a few on a small set. A GPU
# affords more, and the best epoch's weights are kept, so the extra ones cost time, not score.
FINETUNE_EPOCHS = (3, 2, 1)
GPU_FINETUNE_EPOCHS = (4, 3, 2, 1)
# A GPU's first fit in a process pays its kernel choices for every batch shape: measured on an H100,
# 18.6 s for a first one-epoch fit whose steady epochs take ~3 s; the probe prices steady epochs.
GPU_FIRST_FIT_S = 15.0
# Below this no fine-tuning fits anywhere, and the timed probe itself would cost seconds.
FINETUNE_MIN_S = 30.0
# Thread-seconds per text per epoch below which no CPU fine-tunes MiniLM (measured: 36-70 on two
# cores): where even this pace misses the time left, the timed probe (~10 s) is not worth running.
CPU_FINETUNE_FLOOR_S = 0.01
# On a CPU, text fine-tuning is planned into at most this share of the time left. Its price comes
# from a short probe, a busy machine runs slower, and a fine-tune that misses its deadline is lost
# whole (spooky, 1 epoch x 5 folds on a shared machine: 570 s a fold against 497 s estimated, the
# fifth fold past the phase's end after 40 minutes).
CPU_TEXT_FINETUNE_MARGIN = 0.8
# A CPU fine-tune dearer than this share of the time left must be promised by the race: its frozen
# sentence embedding's share of the race leader's gain over the constant (first folds) must reach
# CPU_TEXT_FINETUNE_MIN_PROMISE. Below it the embedding reads the wrong signal, and fine-tuning would
# cost most of the budget for a weak model (spooky's authorship is style: frozen MiniLM 0.66 where
# naive Bayes scores 0.34, a share of 0.57; fine-tuned for one epoch, 0.52 a fold). A cheap
# fine-tune runs whatever the race said: on a few hundred texts the first folds are noise.
CPU_TEXT_FINETUNE_DEAR = 0.5
CPU_TEXT_FINETUNE_MIN_PROMISE = 0.8


def _minilm_finetune(epochs: int) -> ModelCandidate:
    # Lazy, as every torch module here: a tabular solve never loads torch.
    from solve_pipeline.texts.text_finetune import MiniLMFineTuneModel
    from solve_pipeline.texts.text_tokens import text_finetune_matrices

    return ModelCandidate("minilm_finetune", text_finetune_matrices,
                     lambda s, o, f: MiniLMFineTuneModel(s, o, {"max_epochs": epochs}))


# Image fine-tuning runs on cached maps, where an epoch is cheap: early stopping (patience 3)
# usually ends it well before the first of these.
IMAGE_FINETUNE_EPOCHS = (15, 8, 4)


def _image_finetune(features: FeatureSet, n_folds: int, seconds: float,
                    threads: int) -> tuple[FinetuneOption | None, str]:
    """The last block of the embedding's own backbone fine-tuned on cached trunk maps."""
    # Lazy: both load torch, which a tabular solve never does.
    from solve_pipeline.images.image_finetune import ImageFinetuneModel, estimate_finetune_seconds
    from solve_pipeline.images.image_maps import fine_tunable, image_finetune_matrices, map_shape
    from solve_pipeline.fusion.pretrained_features import pretrained_features

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

    candidate = ModelCandidate("image_finetune", matrices,
                          lambda s, o, f: ImageFinetuneModel(s, o, {"max_epochs": epochs}))
    total = maps_s + epochs * per_epoch
    return FinetuneOption(candidate, total, epochs), (
        f"images: {plan.backbone.name}@{plan.px} last block fine-tuned, up to {epochs} epochs x {n_folds} folds "
        f"~{total:.0f} s of {seconds:.0f} s")


def finetune_options(features: FeatureSet, n_folds: int, seconds: float, threads: int = 2,
                     text_promise: float | None = None) -> tuple[list[FinetuneOption], list[str]]:
    """What fine-tuning fits in `seconds` (most epochs that fit, from a timed probe of real
    batches), and a note for every modality on why or why not. `text_promise`: the frozen text
    embedding's share of the race leader's gain over the constant, where the race measured it."""
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
        from solve_pipeline.texts.text_finetune import estimate_finetune_seconds  # lazy: torch

        floor = n_folds * rows * CPU_FINETUNE_FLOOR_S / max(threads, 1)
        if not device.is_cuda() and floor > seconds:
            notes.append(f"text: one MiniLM epoch x {n_folds} folds needs at least ~{floor:.0f} s on CPU, "
                         f"{seconds:.0f} s left: frozen embeddings only")
            return options, notes
        per_epoch = n_folds * estimate_finetune_seconds(features, int(rows), 1.0, threads)
        tried = GPU_FINETUNE_EPOCHS if device.is_cuda() else FINETUNE_EPOCHS
        startup = GPU_FIRST_FIT_S if device.is_cuda() else 0.0
        room = seconds if device.is_cuda() else CPU_TEXT_FINETUNE_MARGIN * seconds
        fitting = [e for e in tried if startup + e * per_epoch <= room]
        total = startup + fitting[0] * per_epoch if fitting else 0.0
        if fitting and not device.is_cuda() and total > CPU_TEXT_FINETUNE_DEAR * seconds and \
                text_promise is not None and text_promise < CPU_TEXT_FINETUNE_MIN_PROMISE:
            notes.append(f"text: MiniLM fine-tuning would take ~{total:.0f} s of {seconds:.0f} s, and its frozen "
                         f"features reach only {text_promise:.0%} of the best family's gain over the constant "
                         f"(first fold): frozen embeddings only")
        elif fitting:
            options.append(FinetuneOption(_minilm_finetune(fitting[0]), total, fitting[0]))
            notes.append(f"text: MiniLM fine-tuning, {fitting[0]} epochs x {n_folds} folds "
                         f"~{total:.0f} s of {seconds:.0f} s")
        else:
            notes.append(f"text: one MiniLM epoch x {n_folds} folds needs ~{per_epoch:.0f} s, "
                         f"{seconds:.0f} s left ({room:.0f} s to plan into): frozen embeddings only")
    return options, notes
