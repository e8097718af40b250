"""Pretrained embeddings of a FeatureSet's images and texts, computed once per FeatureSet.

The race's `pretrained_linear`, `pretrained_head` and `pretrained_ordinal` families and the
late-fusion net read these, so they share one forward pass; the solver and HEBO rebuild candidates
many times, which a per-FeatureSet memo makes free. Images are embedded by the backbone and
resolution `image_embedding.plan_embedding` finds affordable, with the backbone's ImageNet class
logits from the same pass as a block of their own; texts by MiniLM (`text_embedding`). What could
not be afforded is said in `notes`.
"""

from __future__ import annotations

import time
import weakref
from dataclasses import dataclass, field

import numpy as np
from scipy import sparse
from sklearn.preprocessing import StandardScaler

from solve_pipeline.base.baseline_models import tabular_linear_blocks
from solve_pipeline.base.cv import emit
from solve_pipeline.base.dataset import FeatureSet
from solve_pipeline.base.table_inputs import Matrices
from solve_pipeline.fusion.pretrained_replay import HEAD, POOLED, PretrainedReplay
from solve_pipeline.images.image_backbones import cheapest
from solve_pipeline.images.image_backbones_local import chosen_note
from solve_pipeline.images.image_replay import EmbeddingReplay
from solve_pipeline.images.image_embedding import (
    PARTIAL_MIN_SHARE, ImagePlan, TooSlow, embed_images, partial_plan, plan_embedding, split_head,
)
from solve_pipeline.texts.text_embedding import embed_text_columns


@dataclass(frozen=True)
class EmbeddingBlock:
    train: np.ndarray  # (n_train, d) float32
    test: np.ndarray  # (n_test, d) float32
    source: str  # e.g. "image:efficientnet-lite0@224+flip", "image-head:...", "text:minilm"


@dataclass
class PretrainedFeatures:
    image: EmbeddingBlock | None = None  # pooled features
    # The backbone's ImageNet classifier's logits, from the same forward pass: a family of their
    # own reads them beside the pooled features (pretrained_matrices(head=True)). On 10 monkey
    # species (750 photos, logistic C=0.1, 5-fold, temperature-calibrated) they help at full
    # resolution, log loss 0.0615 -> 0.0596 (Lite0@224), 0.0353 -> 0.0287 (Lite2@260), hurt at
    # 96 px (0.451 -> 0.468), and change nothing on grades of blur (kappa 0.719 vs 0.721 out of
    # fold, Lite0@128): the race and the blend decide, the pooled-only family staying as it was.
    image_head: EmbeddingBlock | None = None
    image_plan: ImagePlan | None = None  # the backbone and resolution the images were embedded at
    # How unseen rows' pictures get the same vectors (None: a partial plan left test pictures out).
    image_replay: EmbeddingReplay | None = None
    text: EmbeddingBlock | None = None
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def blocks(self) -> list[EmbeddingBlock]:
        """What the frozen-embedding family reads: the pooled image features and the texts'."""
        return [b for b in (self.image, self.text) if b is not None]

    @property
    def sources(self) -> list[str]:
        return [b.source for b in (self.image, self.image_head, self.text) if b is not None]


_ImageBlocks = tuple[EmbeddingBlock | None, EmbeddingBlock | None, ImagePlan | None, EmbeddingReplay | None, str]


def _rows(vectors: np.ndarray, columns: int, n_train: int, n_test: int) -> tuple[np.ndarray, np.ndarray]:
    """Columns were embedded as one list (one pass, one pace check): split them back, side by side."""
    per_column = np.split(vectors, columns)
    return (np.hstack([part[:n_train] for part in per_column]),
            np.hstack([part[n_train:n_train + n_test] for part in per_column]))


def _priority(n_train: int, n_test: int, columns: int) -> list[int]:
    """Rows of the embedded list (column by column, train then test) in the order a partial plan
    embeds them: every test image first (each needs a prediction), then the train images in a
    seeded random order, so those left out are a sample, not the last classes of a sorted folder."""
    per_column = n_train + n_test
    test = [c * per_column + n_train + j for c in range(columns) for j in range(n_test)]
    train = [c * per_column + int(i) for i in np.random.default_rng(0).permutation(n_train) for c in range(columns)]
    return test + train


def _image_block(features: FeatureSet, seconds: float, threads: int) -> _ImageBlocks:
    assert features.image_paths_train is not None and features.image_paths_test is not None
    columns = list(features.image_paths_train)
    everything = [p for c in columns for p in features.image_paths_train[c] + features.image_paths_test[c]]
    n_train, n_test = features.n_train, features.n_test
    started = time.monotonic()
    deadline = started + seconds
    cache = features.cache_dir / "image_embeddings" if features.cache_dir is not None else None
    plans, why = plan_embedding(everything, seconds, threads, cache_dir=cache)
    given_up: list[ImagePlan] = []
    while plans:
        plan = plans.pop(0)
        missing: list[int] = []
        try:
            vectors = embed_images(everything, plan, cache_dir=cache, deadline=deadline, threads=threads,
                                   first=_priority(n_train, n_test, len(columns)), missing=missing)
        except TooSlow as slow:
            given_up.append(plan)
            ratio = slow.seconds_per_image / plan.per_image_s if slow.seconds_per_image and plan.per_image_s else 1.0
            left = deadline - time.monotonic()
            # The probe was optimistic by this much (a busy machine, a bigger input than it
            # timed): the options left are re-priced with it rather than tried blindly.
            plans = [p for p in plans if p.projected_s * ratio <= left]
            per_image = plan.per_image_s * ratio
            if not plans and not any(p.partial for p in given_up) \
                    and left >= PARTIAL_MIN_SHARE * len(everything) * per_image:
                # What the time left allows beats no embedding at all when most images get a vector.
                base = cheapest([p.backbone for p in given_up])
                assert base is not None
                plans = [partial_plan(base, left, per_image)]
                why = "no option kept pace with every image"
            continue
        if vectors is None:
            return None, None, None, None, "images: none of the image files could be read"
        train_left = sum(1 for i in missing if i % (n_train + n_test) < n_train)
        if train_left > (1 - PARTIAL_MIN_SHARE) * n_train * len(columns):
            return None, None, None, None, (f"images: {plan.label} embedded only {n_train * len(columns) - train_left} "
                                      f"of {n_train * len(columns)} train images in the time: the pixels carry")
        pooled, head = split_head(vectors, plan)
        image = EmbeddingBlock(*_rows(pooled, len(columns), n_train, n_test), f"image:{plan.label}")
        head_block = None if head is None else \
            EmbeddingBlock(*_rows(head, len(columns), n_train, n_test), f"image-head:{plan.label}")
        note = f"images: {plan.label}{' with its ImageNet head' if head is not None else ''} " \
               f"in {time.monotonic() - started:.0f} s{chosen_note(plan.backbone)}"
        if plan.partial:
            note += f" ({why}: what the time allowed, test images first)"
        if given_up:
            note += f" (gave up on {', '.join(p.label for p in given_up)}: too slow at the pace measured)"
        if missing:
            note += (f"; {len(missing)} of {len(everything)} images left out ({train_left} train, "
                     f"{len(missing) - train_left} test): they get the mean vector")
        return image, head_block, plan, _replay(vectors, missing, plan, columns, n_train, n_test), note
    if given_up:
        why = f"every affordable option ran too slow ({', '.join(p.label for p in given_up)}); {seconds:.0f} s allowed"
    return None, None, None, None, f"images: {why}"


def _replay(vectors: np.ndarray, missing: list[int], plan: ImagePlan, columns: list[str], n_train: int,
            n_test: int) -> EmbeddingReplay | None:
    """The embedding's recipe for unseen rows; None when a test picture was left out for time (a
    replay would embed it, where the run gave it the mean vector)."""
    if plan.partial and any(i % (n_train + n_test) >= n_train for i in missing):
        return None
    kept = np.ones(len(vectors), dtype=bool)
    kept[missing] = False
    return EmbeddingReplay(plan.cache_label, plan.px, plan.flip_tta, plan.backbone.classes if plan.head else 0,
                           [str(c) for c in columns], vectors[kept].mean(axis=0), backbone=plan.backbone)


def _text_block(features: FeatureSet, seconds: float, threads: int) -> tuple[EmbeddingBlock | None, str]:
    assert features.raw_text_columns_train is not None and features.raw_text_columns_test is not None
    started = time.monotonic()
    cache = features.cache_dir / "text_embeddings" if features.cache_dir is not None else None
    embedded = embed_text_columns(features.raw_text_columns_train, features.raw_text_columns_test,
                                  max_seconds=seconds, threads=threads, cache_dir=cache)
    if embedded is None:
        return None, f"text: MiniLM would take longer than {seconds:.0f} s (or cannot load)"
    block = EmbeddingBlock(embedded.train.astype(np.float32), embedded.test.astype(np.float32),
                           f"text:{embedded.source}")
    return block, f"text: {embedded.source} ({time.monotonic() - started:.0f} s)"


# id(FeatureSet) -> (weak reference, result); the first caller's budget decides. FeatureSets are not hashable
# (mutable dataclasses) and are treated as immutable once built.
_MEMO: dict[int, tuple[weakref.ref, PretrainedFeatures]] = {}


def pretrained_features(features: FeatureSet, *, seconds: float, threads: int = 2) -> PretrainedFeatures:
    """Embeddings for every modality that has a pretrained model, within about `seconds`
    (split between images and texts when a task has both). Memoised per FeatureSet."""
    held = _MEMO.get(id(features))
    if held is not None and held[0]() is features:
        return held[1]
    started = time.monotonic()
    result = PretrainedFeatures()
    has_images = features.image_paths_train is not None and features.image_paths_test is not None
    has_text = features.raw_text_columns_train is not None and features.raw_text_columns_test is not None
    image_share = 0.6 if has_images and has_text else 1.0
    if has_images:
        result.image, result.image_head, result.image_plan, result.image_replay, note = \
            _image_block(features, seconds * image_share, threads)
        result.notes.append(note)
    if has_text:
        result.text, note = _text_block(features, max(seconds - (time.monotonic() - started), 0.0), threads)
        result.notes.append(note)
    result.seconds = round(time.monotonic() - started, 2)
    emit("pretrained", sources=result.sources, notes=result.notes, seconds=result.seconds)
    key = id(features)
    _MEMO[key] = (weakref.ref(features, lambda _ref, k=key: _MEMO.pop(k, None)), result)
    return result


def pretrained_matrices(features: FeatureSet, *, seconds: float, threads: int = 2,
                        head: bool = False) -> Matrices | None:
    """Standardized embeddings beside the linear models' tabular blocks, dense; with `head`, the
    images' ImageNet logits beside them too. None without any embedding (or head): the family then
    sits the race out. Their replay where the embeddings are the images' alone (sentence
    embeddings of texts are not replayed)."""
    found = pretrained_features(features, seconds=seconds, threads=threads)
    blocks = found.blocks
    if head:
        if found.image_head is None:
            return None
        blocks = [b for b in (found.image, found.image_head, found.text) if b is not None]
    if not blocks:
        return None
    train, test, table = tabular_linear_blocks(features)
    scalers = []
    for block in blocks:
        both = np.vstack([block.train, block.test])
        scaler = StandardScaler().fit(both)  # fit_transform is fit, then transform: the same numbers
        scaled = scaler.transform(both)
        train.append(sparse.csr_matrix(scaled[: len(block.train)]))
        test.append(sparse.csr_matrix(scaled[len(block.train):]))
        scalers.append((HEAD if block is found.image_head else POOLED, scaler))
    replay = None
    if found.image_replay is not None and all(b is found.image or b is found.image_head for b in blocks):
        replay = PretrainedReplay(table, found.image_replay, scalers)
    return Matrices(sparse.hstack(train).toarray().astype(np.float32),
                    sparse.hstack(test).toarray().astype(np.float32), replay)
