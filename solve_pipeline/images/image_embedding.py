"""Frozen pretrained features of images: a backbone and resolution chosen to fit the budget.

The expensive step of transfer learning on a CPU is the forward pass, so it is done once per
image and kept on disk (a resumed or re-tuned run pays nothing twice). A timed probe on real
images prices every (backbone, resolution) option before anything big starts.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
import torch

from agentk.core.pictures import picture_image, picture_size
from solve_pipeline.networks import device
from solve_pipeline.images.image_backbones import Backbone, available_backbones, cheapest
from solve_pipeline.images.image_backbones_local import price_local, with_local
from solve_pipeline.networks.torch_training import torch_threads
from solve_pipeline.base.vector_cache import VectorCache, file_key

BATCH = 32
PROBE_IMAGES = 16
# Below this native size pretrained ImageNet features lose to a small CNN on raw pixels
# (measured on 8x8 digits: 0.937 vs 0.965); such images are left to the pixel models.
MIN_NATIVE_PX = 32
MIN_PX = 96
# The probe is taken on a few images of a machine whose load changes: an option is chosen when
# its projection fits in this share of the time allowed.
SAFETY = 0.8
# Resolutions tried for the cheapest backbone when nothing better fits, high to low.
FALLBACK_PX = (192, 160, 128, 96)
# A bigger backbone's pace on a CPU is not its FLOP ratio to the probed one (deeper depthwise
# layers run slower per multiply-add, dense ones faster): one that might fit is timed itself, on
# this many images at its own resolution, before the plan counts on it. Priced from the ratio
# alone, a loaded machine sent Lite2 and Lite1 into embedding 10 monkey species, each given up
# two batches later (the first two options' time lost).
CHECK_IMAGES = 8
# Timed only when the FLOP ratio's projection is within this factor of the time allowed, either
# way: far above it cannot fit, far below it fits whatever the error (60 small images: the timing
# would cost more than the embedding).
CHECK_WITHIN = 2.0
# A partial plan is worth its time only when most images get a vector: the rest share the mean
# vector, and a model trained where most rows are that mean learns nothing (digits at a 15 s
# budget: 8 % of the images embedded, every family at chance, the pixel models out of time).
PARTIAL_MIN_SHARE = 0.5


@dataclass(frozen=True)
class ImagePlan:
    backbone: Backbone
    px: int
    flip_tta: bool  # average the features of the image and its mirror
    projected_s: float  # for the images not cached yet
    per_image_s: float = 0.0  # the probe's projection for one image
    # Not every image fits the time allowed: embed until the deadline (the caller's `first` rows
    # first), the rest getting the mean vector, rather than no embedding at all.
    partial: bool = False

    @property
    def label(self) -> str:
        return f"{self.backbone.name}@{self.px}" + ("+flip" if self.flip_tta else "")

    @property
    def head(self) -> bool:
        """Whether each vector ends in the ImageNet classifier's logits."""
        return self.backbone.classes > 0

    @property
    def cache_label(self) -> str:
        # Vectors with the head block are wider: they never share a file with pooled-only ones.
        return self.label + ("+head" if self.head else "")


def load_rgb(path: str, px: int) -> np.ndarray | None:
    """(3, px, px) floats in [0, 1]: shorter side resized to px, then the centre crop. Any picture
    form (DICOM, 16-bit TIFF, arrays) is read by agentk.core.pictures."""
    from PIL import Image

    if not path:
        return None
    try:
        image = picture_image(path, "RGB", covering=px)
        scale = px / min(image.size)
        size = (max(px, round(image.size[0] * scale)), max(px, round(image.size[1] * scale)))
        image = image.resize(size, Image.Resampling.BILINEAR)
        left, top = (size[0] - px) // 2, (size[1] - px) // 2
        image = image.crop((left, top, left + px, top + px))
        return np.asarray(image, dtype=np.float32).transpose(2, 0, 1) / 255.0
    except (OSError, ValueError, Image.DecompressionBombError) as error:  # one bad file costs one row
        warnings.warn(f"cannot read image {path}: {error}")
        return None


def loaded_batches(paths: Sequence[str], rows: Sequence[int], px: int, batch: int, *,
                   prefetch: bool = False, workers: int = 4) -> Iterator[tuple[int, list[tuple[int, np.ndarray]]]]:
    """(offset into rows, [(row, image) for the batch's readable images]) batch by batch. With
    `prefetch` (a GPU waiting) the next batch is decoded by a thread pool while this one runs:
    PIL releases the GIL while it decodes. On a CPU the cores are the model's, so it decodes inline."""
    starts = range(0, len(rows), batch)

    def load(start: int) -> list[tuple[int, np.ndarray]]:
        images = [(i, load_rgb(paths[i], px)) for i in rows[start:start + batch]]
        return [(i, x) for i, x in images if x is not None]

    if not prefetch:
        for start in starts:
            yield start, load(start)
        return
    with ThreadPoolExecutor(max_workers=workers) as pool:
        pending = {start: pool.submit(load, start) for start in list(starts)[:2]}
        for position, start in enumerate(starts):
            following = position + 2
            if following < len(starts):
                pending[starts[following]] = pool.submit(load, starts[following])
            yield start, pending.pop(start).result()


def paced_batches(paths: Sequence[str], rows: Sequence[int], px: int, batch: int, deadline: float | None,
                  prefetch: bool, until_deadline: bool = False) -> Iterator[list[tuple[int, np.ndarray]]]:
    """loaded_batches that watch their own pace: TooSlow (with the pace) as soon as the deadline
    passes or the pace so far says it cannot be met, checked before every batch from the third
    on (the first pays one-off start-up costs, so it is not timed). `until_deadline`: only a
    passed deadline stops it (a partial plan takes what the time allows)."""
    timed_from: float | None = None
    for start, readable in loaded_batches(paths, rows, px, batch, prefetch=prefetch):
        now = time.monotonic()
        if start == batch:
            timed_from = now
        pace = None if timed_from is None or start == batch else (now - timed_from) / (start - batch)
        if deadline is not None:
            behind = pace is not None and now + pace * (len(rows) - start) > deadline
            if now > deadline or (behind and not until_deadline):
                raise TooSlow(pace)
        yield readable


def native_px(paths: Sequence[str], sample: int = 64) -> int | None:
    """Median shorter side of a sample of the images (headers only), None when none opens."""
    sides = []
    present = [p for p in paths if p]
    step = max(1, len(present) // sample)
    for path in present[::step][:sample]:
        size = picture_size(path)
        if size is not None:
            sides.append(min(size))
    return int(np.median(sides)) if sides else None


def _options(backbones: list[Backbone], native: int) -> list[tuple[Backbone, int]]:
    """(backbone, px) pairs, best expected features first. Images are not blown up far past
    their own size: beyond it a bigger input only costs time."""
    cap = max(MIN_PX, int(np.ceil(native / 32) * 32))
    options = [(b, min(b.native_px, cap)) for b in backbones]
    base = cheapest(backbones)
    if base is not None:
        options += [(base, px) for px in FALLBACK_PX if px < min(base.native_px, cap)]
    return options


def _outputs(module: torch.nn.Module, tensor: torch.Tensor, head: bool) -> torch.Tensor:
    """Pooled features, then (with `head`) the ImageNet classifier's logits, from one forward
    pass: the classifier is one matrix product on the pooled features. Logits, not
    log-probabilities: standardized beside the pooled features, 5-fold log loss on 10 monkey
    species 0.0375 vs 0.0462 (Lite2, logistic C=0.1), 0.0594 vs 0.0664 (Lite1)."""
    pooled = module(tensor).float()
    if not head:
        return pooled
    return torch.cat([pooled, module.classify(pooled).float()], dim=1)


def _forward(module: torch.nn.Module, batch: np.ndarray, flip: bool, on: torch.device,
             head: bool = False) -> np.ndarray:
    with torch.inference_mode(), device.autocast(on):
        tensor = torch.from_numpy(batch).to(on)
        features = _outputs(module, tensor, head)
        if flip:
            features = (features + _outputs(module, torch.flip(tensor, dims=[3]), head)) / 2
    return features.cpu().numpy()


def split_head(vectors: np.ndarray, plan: ImagePlan) -> tuple[np.ndarray, np.ndarray | None]:
    """embed_images' vectors as (pooled features, ImageNet logits or None)."""
    if not plan.head:
        return vectors, None
    width = vectors.shape[1] - plan.backbone.classes
    return vectors[:, :width], vectors[:, width:]


def _seconds_per_image(backbone: Backbone, sample: Sequence[str], px: int, on: torch.device) -> float | None:
    """One timed forward pass of `backbone` over a few images at `px`, after a warm-up."""
    images = [x for x in (load_rgb(p, px) for p in sample) if x is not None]
    if len(images) < 2:
        return None
    module = backbone.load().to(on)
    batch = np.stack(images)
    head = backbone.classes > 0
    # Warm-up: the first call of a shape builds kernels (a GPU's for this batch shape).
    _forward(module, batch if on.type == "cuda" else batch[:2], False, on, head)
    began = time.monotonic()
    _forward(module, batch, False, on, head)  # returns to the host: the GPU's work is done by then
    return (time.monotonic() - began) / len(images)


def plan_embedding(paths: Sequence[str], seconds: float, threads: int = 2,
                   backbones: list[Backbone] | None = None,
                   cache_dir: Path | None = None) -> tuple[list[ImagePlan], str]:
    """Every option whose projected time fits in `seconds`, best first; when none fits every
    image, the partial plan (the cheapest backbone at MIN_PX, embedding what the time allows) with
    the reason; none (with the reason) when images cannot be embedded at all.

    The projection comes from one timed batch of the cheapest backbone, and from a few images
    through each bigger one that might fit; `embed_images` checks it against its own pace and
    gives up early, so the caller can go down this list. What the probes took (loading a user's
    model included) comes out of `seconds`: the caller's deadline counts it."""
    planning = time.monotonic()
    backbones = with_local(available_backbones()) if backbones is None else backbones
    if not backbones:
        return [], "no pretrained image backbone is installed"
    native = native_px(paths)
    if native is None:
        return [], "no image could be opened"
    if native < MIN_NATIVE_PX:
        return [], f"images are {native} px: a small CNN on pixels suits them better"
    base = cheapest(backbones)
    assert base is not None
    probe_px = min(128, base.native_px)
    sample = [p for p in paths if p][:PROBE_IMAGES + 1]
    on = device.current()  # the probe times the device the embedding will run on
    with torch_threads(threads):
        module = base.load().to(on)
        first = load_rgb(sample[0], probe_px)  # pays the decoders' one-off start-up
        began = time.monotonic()
        loaded = [x for x in (load_rgb(p, probe_px) for p in sample[1:]) if x is not None]
        load_s = (time.monotonic() - began) / max(len(loaded), 1)
        if first is None or len(loaded) < 2:
            return [], "too few images could be opened to time the backbone"
        batch = np.stack(loaded)
        head = base.classes > 0
        _forward(module, batch, False, on, head)  # warm-up: the first call of a shape builds kernels
        began = time.monotonic()
        _forward(module, batch, False, on, head)  # returns to the host: the GPU's work is done by then
        per_pixel = (time.monotonic() - began) / len(loaded) / probe_px ** 2 / base.relative_cost
        # The user's own models are timed on this very batch (image_backbones_local).
        backbones = price_local(backbones, batch, per_pixel, on, seconds=SAFETY * seconds,
                                n_images=sum(1 for p in paths if p))
    seconds -= time.monotonic() - planning
    keys = [file_key(p) for p in paths if p]
    # Seconds per input pixel of each backbone: the probed one's, and those timed below.
    pace = {base.name: per_pixel * base.relative_cost}
    plans = []
    for backbone, px in _options(backbones, native):
        for flip in (True, False):
            label = ImagePlan(backbone, px, flip, 0.0).cache_label
            # Images a previous run embedded with this option cost nothing now.
            cached = VectorCache(cache_dir, label).vectors
            n = sum(key not in cached for key in keys)
            views = 2 if flip else 1
            if n and backbone.name not in pace:
                guess = n * (per_pixel * backbone.relative_cost * px ** 2 * views + load_s)
                if guess > CHECK_WITHIN * SAFETY * seconds:
                    continue
                if guess > SAFETY * seconds / CHECK_WITHIN:
                    with torch_threads(threads):
                        timed = _seconds_per_image(backbone, sample[1:CHECK_IMAGES + 1], px, on)
                    pace[backbone.name] = per_pixel * backbone.relative_cost if timed is None else timed / px ** 2
            forward = n * pace.get(backbone.name, per_pixel * backbone.relative_cost) * px ** 2 * views
            projected = forward + n * load_s + 2.0 * (n > 0)  # decoding is the same at any px
            if projected <= SAFETY * seconds:
                per_image = (projected - 2.0 * (n > 0)) / max(n, 1)
                plans.append(ImagePlan(backbone, px, flip, projected, per_image))
                break
    if plans:
        return plans, f"{len(plans)} options fit"
    per_image = pace[base.name] * MIN_PX ** 2 + load_s
    cheapest_s = len(keys) * per_image
    why = f"{len(keys)} images need ~{cheapest_s:.0f} s even at {MIN_PX} px; {seconds:.0f} s allowed"
    if SAFETY * max(seconds, 0.0) < PARTIAL_MIN_SHARE * cheapest_s:
        return [], f"{why}: too few would be embedded to learn from"
    return [partial_plan(base, SAFETY * seconds, per_image)], why


def partial_plan(backbone: Backbone, seconds: float, per_image_s: float) -> ImagePlan:
    """The last resort when no option fits every image: the backbone at the smallest resolution,
    embedding what `seconds` allow."""
    return ImagePlan(backbone, MIN_PX, False, seconds, per_image_s, partial=True)


class TooSlow(Exception):
    """Embedding stopped: the deadline passed or the pace measured says it cannot be met."""

    def __init__(self, seconds_per_image: float | None) -> None:
        super().__init__(f"too slow ({seconds_per_image or float('nan'):.3f} s per image)")
        self.seconds_per_image = seconds_per_image


def embed_images(paths: Sequence[str], plan: ImagePlan, *, cache_dir: Path | None = None,
                 deadline: float | None = None, threads: int = 2, first: Sequence[int] = (),
                 missing: list[int] | None = None, on: torch.device | None = None) -> np.ndarray | None:
    """(n, width + classes) float32 features: the pooled features, then the ImageNet classifier's
    logits where the backbone keeps its classifier (`split_head` parts them), both
    averaged with the mirror's under flip TTA; a missing or unreadable image gets the mean vector;
    None when no image could be read.

    Raises TooSlow (with the pace measured) as soon as the deadline passes or the pace so far
    says it cannot be met, checked before every batch from the third on, so a wrong projection
    costs seconds, not the budget. What was embedded stays in the cache either way. A partial
    plan instead embeds until the deadline, the rows in `first` first, and returns what it has.
    `missing` receives the rows given the mean vector. `on`: that device alone (default: the
    solve's, falling back from a GPU short of memory to the CPU)."""
    cache = VectorCache(cache_dir, plan.cache_label)
    keys = [file_key(p) if p else "" for p in paths]
    rank = {row: position for position, row in enumerate(first)}
    todo = sorted({i for i, key in enumerate(keys) if key and key not in cache.vectors},
                  key=lambda i: (rank.get(i, len(rank)), i))

    def attempt(on: torch.device, batch_factor: float) -> None:
        left = [i for i in todo if keys[i] not in cache.vectors]  # a retry resumes
        batch = max(1, int(BATCH * device.batch_scale(on) * batch_factor))
        with torch_threads(threads):
            module = plan.backbone.load().to(on)
            try:
                for readable in paced_batches(paths, left, plan.px, batch, deadline, prefetch=on.type == "cuda",
                                              until_deadline=plan.partial):
                    if readable:
                        vectors = _forward(module, np.stack([x for _, x in readable]), plan.flip_tta, on,
                                           plan.head)
                        for (i, _), vector in zip(readable, vectors, strict=True):
                            cache.vectors[keys[i]] = vector.astype(np.float32)
            except TooSlow:
                cache.save()  # what was embedded is kept for the next option or run
                if not plan.partial:
                    raise

    if todo:
        if on is None:
            device.with_fallback("image embedding", attempt)
        else:
            attempt(on, 1.0)
        cache.save()
    found = [cache.vectors.get(key) for key in keys]
    if missing is not None:
        missing.extend(i for i, v in enumerate(found) if v is None)
    present = [v for v in found if v is not None]
    if not present:
        return None
    mean = np.mean(present, axis=0)
    return np.stack([mean if v is None else v for v in found]).astype(np.float32)
