"""Sound through the image backbones: each clip's log-mel picture (`spectrogram_images`) embedded
by a frozen pretrained network, for the race's `spectrogram_linear` family.

The second recipe a grandmaster starts a sound competition from, beside boosted trees on log-mel
statistics: an ImageNet network's features of the spectrogram, a logistic (or ridge) model on top.
It costs two passes the statistics do not need (drawing each clip, a forward pass per picture), so
it is priced first: the first clips are drawn and timed, `image_embedding.plan_embedding` times the
backbones on those very pictures with the time the drawing leaves, and the family sits the race
out, saying why, when no option fits. The pictures are never mirrored: a mirrored spectrogram
plays backwards, and a rising sweep would read as a falling one.

Computed once per FeatureSet (the race, HEBO and bagging rebuild candidates many times); the
pictures and their vectors stay in the workspace's cache for a resumed run.
"""

from __future__ import annotations

import time
import weakref
from dataclasses import dataclass, replace

import numpy as np
from scipy import sparse
from sklearn.preprocessing import StandardScaler

from solve_pipeline.base.baseline_models import tabular_linear_blocks
from solve_pipeline.base.cv import emit
from solve_pipeline.base.dataset import FeatureSet
from solve_pipeline.fusion.fusion_defaults import EMBED_DEFAULT_S
from solve_pipeline.sound.audio_features import AudioPlan
from solve_pipeline.sound.spectrogram_images import picture_path, render_pictures

# The share of the solve's budget drawing and embedding may take: the statistics already took
# theirs (solve_inputs.AUDIO_SHARE), and the trees on them need the rest.
SPECTROGRAM_SHARE = 0.25


@dataclass(frozen=True)
class EmbeddedClips:
    train: np.ndarray  # (n_train, width) pooled backbone features
    test: np.ndarray
    source: str  # "spectrogram:<backbone>@<px>"


@dataclass
class SpectrogramEmbedding:
    block: EmbeddedClips | None  # None: left out
    note: str  # what was embedded and how, or why nothing was
    seconds: float = 0.0


def _embed(features: FeatureSet, seconds: float, threads: int) -> tuple[EmbeddedClips | None, str]:
    started = time.monotonic()  # loading torch is part of the price
    # Here, not at the top: torch, which the race's registry (importing this module) never loads.
    from solve_pipeline.images.image_embedding import PROBE_IMAGES, TooSlow, embed_images, plan_embedding, split_head

    clips = features.audio_clips
    if clips is None or features.cache_dir is None:
        return None, "no clips to draw (or no cache folder to keep their pictures)"
    deadline = started + seconds
    plan = AudioPlan(clips.rate, clips.max_seconds)
    folder = features.cache_dir / "spectrograms"
    present = [i for i, path in enumerate(clips.paths) if path]
    # The first pictures are drawn and timed: plan_embedding times the backbones on them.
    pictures, per_clip = render_pictures(clips.paths, clips.windows, plan, folder, present[:PROBE_IMAGES + 1], deadline)
    if sum(1 for p in pictures if p) < 2:
        return None, f"too few clips could be drawn in the {seconds:.0f} s allowed to price a backbone"
    left = [i for i in present if not pictures[i]]
    drawing_s = per_clip * len(left)
    spent = time.monotonic() - started
    room = seconds - spent - drawing_s
    what = f"{len(present)} clips drawn as {plan.rate} Hz log-mel pictures (~{per_clip * 1000:.0f} ms each)"
    if room <= 0:
        return None, (f"{what} would need ~{drawing_s:.0f} s more after {spent:.0f} s of loading and timing, "
                      f"of the {seconds:.0f} s allowed")
    # The pictures not drawn yet are named already: the plan counts them as images to embed.
    named = [p or (str(picture_path(folder, clips.paths[i], clips.windows[i], plan)) if clips.paths[i] else "")
             for i, p in enumerate(pictures)]
    cache = features.cache_dir / "spectrogram_embeddings"
    plans, why = plan_embedding(named, room, threads, cache_dir=cache)
    # Priced with mirrored views, run without them: the projection only errs on the safe side.
    options = list(dict.fromkeys(replace(p, flip_tta=False) for p in plans if not p.partial))
    if not options:
        return None, f"{what}, then embedded: {why}"
    pictures, _ = render_pictures(clips.paths, clips.windows, plan, folder, left, deadline)
    missing = sum(1 for i in present if not pictures[i])
    if missing > len(present) // 2:
        return None, f"{what}: only {len(present) - missing} drawn in the time"
    given_up = []
    while options:
        option = options.pop(0)
        try:
            vectors = embed_images(pictures, option, cache_dir=cache, deadline=deadline, threads=threads)
        except TooSlow as slow:
            given_up.append(option.label)
            # The probe was optimistic by this much (a loaded machine): the options left are
            # re-priced with it, not tried blindly (as pretrained_features does for photos).
            ratio = slow.seconds_per_image / option.per_image_s if slow.seconds_per_image and option.per_image_s else 1.0
            options = [p for p in options if p.projected_s * ratio <= deadline - time.monotonic()]
            continue
        if vectors is None:
            return None, f"{what}: no picture could be read back"
        pooled, _ = split_head(vectors, option)
        n_train = features.n_train
        block = EmbeddedClips(pooled[:n_train], pooled[n_train:], f"spectrogram:{option.label}")
        note = f"{what}, embedded by {option.label} in {time.monotonic() - started:.0f} s of {seconds:.0f} s"
        if given_up:
            note += f" (gave up on {', '.join(given_up)}: too slow at the pace measured)"
        return block, note + (f"; {missing} clips not drawn (unreadable, or out of time) get the mean vector"
                              if missing else "")
    return None, f"{what}: every affordable backbone ran too slow ({', '.join(given_up)})"


# id(FeatureSet) -> (weak reference, result); the first caller's budget decides (pretrained_features' memo).
_MEMO: dict[int, tuple[weakref.ref, SpectrogramEmbedding]] = {}


def spectrogram_embedding(features: FeatureSet, *, seconds: float, threads: int = 2) -> SpectrogramEmbedding:
    """The clips' spectrogram pictures through the best frozen backbone that fits `seconds`
    (drawing included), or the reason none does. Memoised per FeatureSet."""
    held = _MEMO.get(id(features))
    if held is not None and held[0]() is features:
        return held[1]
    started = time.monotonic()
    block, note = _embed(features, seconds, threads)
    if block is None:
        note += ": the family sits the race out, the statistics carry the sound"
    result = SpectrogramEmbedding(block, f"spectrograms: {note}", round(time.monotonic() - started, 2))
    emit("spectrogram", source=None if block is None else block.source, message=result.note, seconds=result.seconds)
    key = id(features)
    _MEMO[key] = (weakref.ref(features, lambda _ref, k=key: _MEMO.pop(k, None)), result)
    return result


def spectrogram_matrices(features: FeatureSet, *, seconds: float, threads: int = 2) -> tuple[np.ndarray, np.ndarray] | None:
    """The standardized spectrogram embedding beside the linear models' tabular blocks (the
    statistics among them), dense; None when it was left out: the family then sits the race out."""
    block = spectrogram_embedding(features, seconds=seconds, threads=threads).block
    if block is None:
        return None
    train, test, _ = tabular_linear_blocks(features)  # sound is not exported: the fitted maps stay here
    both = StandardScaler().fit_transform(np.vstack([block.train, block.test]))
    train.append(sparse.csr_matrix(both[: len(block.train)]))
    test.append(sparse.csr_matrix(both[len(block.train):]))
    return (sparse.hstack(train).toarray().astype(np.float32),
            sparse.hstack(test).toarray().astype(np.float32))


def has_clips(features: FeatureSet) -> bool:
    """Whether the race's `spectrogram_linear` family enters: the rows are sound clips."""
    return features.audio_clips is not None


def spectrogram_inputs(features: FeatureSet, seed: int, budget_s: float | None) -> tuple[np.ndarray, np.ndarray] | None:
    """The race family's inputs (race/registry.py's `Inputs`) within its share of the budget."""
    seconds = EMBED_DEFAULT_S if budget_s is None else SPECTROGRAM_SHARE * budget_s
    return spectrogram_matrices(features, seconds=seconds)
