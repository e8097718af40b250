"""The frozen part of an EfficientNet-Lite (stem and all blocks but the last `k`), run once per
image and its mirror, its feature maps kept on disk: what image fine-tuning trains on.

A full forward pass costs 15-60 ms per image on a CPU, so K folds x several epochs through whole
images do not fit a budget; the maps are computed once and `image_finetune` trains only the last
blocks on them.
"""

from __future__ import annotations

import copy
import math
import time
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import torch
from torch import nn

from agentk.core.records.workspace import replacing
from solve_pipeline.networks import device
from solve_pipeline.base.dataset import FeatureSet
from solve_pipeline.images.image_backbones import Backbone
from solve_pipeline.images.image_embedding import ImagePlan, TooSlow, paced_batches
from solve_pipeline.networks.torch_training import torch_threads
from solve_pipeline.base.vector_cache import file_key

# Blocks trained: the last one (Lite0's 192 -> 320 channels at stride 32) beat the last two on
# 10 monkey species at 224 px, 3-fold accuracy 0.989 vs 0.980 (frozen features + logistic 0.984).
DEFAULT_K = 1
TRUNK_BATCH = 32
VIEWS = 2  # the image and its mirror


_MODULES: dict[str, nn.Module] = {}


def pretrained_module(backbone: Backbone, on: torch.device | None = None) -> nn.Module:
    """The pretrained network on `on` (default: the CPU), loaded once per process and device;
    fits train copies of its last blocks."""
    key = f"{backbone.name}/{'cpu' if on is None else on.type}"
    if key not in _MODULES:
        cpu = _MODULES.get(f"{backbone.name}/cpu") or backbone.load()
        _MODULES[f"{backbone.name}/cpu"] = cpu
        _MODULES[key] = cpu if on is None or on.type == "cpu" else copy.deepcopy(cpu).to(on)
    return _MODULES[key]


def fine_tunable(backbone: Backbone) -> bool:
    """Whether the backbone exposes its blocks (the EfficientNet-Lite wrappers do)."""
    return backbone.name.startswith("efficientnet-lite")


def _trunk(module: nn.Module, rgb: torch.Tensor, k: int) -> torch.Tensor:
    """Stem and every block but the last k, as EfficientNet's own forward runs them."""
    net = module.net
    # The TF-Lite models were trained on (pixel - 127) / 128 with pixels in 0..255.
    x = net._swish(net._bn0(net._conv_stem(rgb * (255.0 / 128.0) - 127.0 / 128.0)))
    for block in list(net._blocks)[:-k]:
        x = block(x)  # eval mode: drop connect is off
    return x


class MapCache:
    """Trunk maps per image file (path, size and mtime as in image_embedding), one .npy file per
    image: a map is ~40 KB, so one archive per plan (as for pooled vectors) would be rewritten
    at a cost growing with the data set every time it is saved."""

    def __init__(self, directory: Path | None, label: str) -> None:
        self.directory = None if directory is None else directory / label

    def get(self, key: str) -> np.ndarray | None:
        if self.directory is None:
            return None
        try:
            return np.load(self.directory / f"{key}.npy")
        except (OSError, ValueError):
            return None  # absent, or damaged: only lost time

    def has(self, key: str) -> bool:
        return self.directory is not None and (self.directory / f"{key}.npy").is_file()

    def put(self, key: str, maps: np.ndarray) -> None:
        if self.directory is None:
            return
        with replacing(self.directory / f"{key}.npy") as tmp, open(tmp, "wb") as handle:
            np.save(handle, maps)  # a handle: np.save would add .npy to the temp path


def maps_label(plan: ImagePlan, k: int) -> str:
    return f"{plan.backbone.name}@{plan.px}-trunk{k}"


def trunk_maps(paths: Sequence[str], plan: ImagePlan, k: int = DEFAULT_K, *, cache_dir: Path | None = None,
               deadline: float | None = None, threads: int = 2) -> np.ndarray | None:
    """(n, 2, C, H, W) float16 maps of each image and its mirror; a missing or unreadable image
    gets the mean map, None when none could be read.

    Raises image_embedding.TooSlow when the deadline passes or the pace so far says it cannot be
    met (checked before every batch from the third on); what was computed stays in the cache."""
    cache = MapCache(cache_dir, maps_label(plan, k))
    keys = [file_key(p) if p else "" for p in paths]
    found: dict[str, np.ndarray] = {}
    for key in set(keys) - {""}:
        maps = cache.get(key)
        if maps is not None:
            found[key] = maps
    first_row = {key: i for i, key in reversed(list(enumerate(keys)))}  # a file listed twice runs once
    todo = sorted(i for key, i in first_row.items() if key and key not in found)

    def attempt(on: torch.device, batch_factor: float) -> None:
        left = [i for i in todo if keys[i] not in found]  # a retry resumes where the last stopped
        module = pretrained_module(plan.backbone, on)
        batch = max(1, int(TRUNK_BATCH * device.batch_scale(on) * batch_factor))
        with torch_threads(threads), torch.inference_mode(), device.autocast(on):
            for readable in paced_batches(paths, left, plan.px, batch, deadline, prefetch=on.type == "cuda"):
                if not readable:
                    continue
                rgb = torch.from_numpy(np.stack([x for _, x in readable])).to(on)
                both = torch.stack([_trunk(module, rgb, k), _trunk(module, torch.flip(rgb, dims=[3]), k)], dim=1)
                for (i, _), maps in zip(readable, both.half().cpu().numpy(), strict=True):
                    found[keys[i]] = maps
                    cache.put(keys[i], maps)

    if todo:
        device.with_fallback("image maps", attempt)
    present = [key for key in keys if key in found]
    if not present:
        return None
    # Summed map by map: a float32 copy of every map at once would double the maps' memory
    # (~0.4 GB of float16 maps for 10,000 photos at 224 px).
    total = np.zeros(found[present[0]].shape, dtype=np.float32)
    for key in present:
        total += found[key]
    mean = (total / len(present)).astype(np.float16)
    out = np.empty((len(keys), *mean.shape), dtype=np.float16)
    for row, key in enumerate(keys):
        out[row] = found.get(key, mean)
    return out


@dataclass(frozen=True, eq=False)
class FinetuneInputs:
    """Cached trunk maps per row, sliceable like a matrix so the CV code can split it."""

    maps: np.ndarray  # (n, 2 views, C, H, W) float16
    backbone: Backbone
    k: int

    def __getitem__(self, rows: Any) -> FinetuneInputs:
        return FinetuneInputs(self.maps[rows], self.backbone, self.k)

    def __len__(self) -> int:
        return len(self.maps)

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.maps.shape)


# (id(FeatureSet), label) -> (weak reference, inputs): candidates are rebuilt many times.
_MEMO: dict[tuple[int, str], tuple[weakref.ref, tuple[FinetuneInputs, FinetuneInputs]]] = {}


def image_finetune_matrices(features: FeatureSet, seed: int = 0, *, plan: ImagePlan, seconds: float,
                            k: int = DEFAULT_K, threads: int = 2) -> tuple[FinetuneInputs, FinetuneInputs] | None:
    """Train and test maps of the first image column at the plan's backbone and resolution;
    None without images, with a backbone that cannot be fine-tuned, or when building the maps
    would take longer than `seconds` (projected from the plan's probe, then from the pace
    measured). Memoised per FeatureSet; maps already on disk cost nothing."""
    if not features.image_paths_train or not features.image_paths_test or not fine_tunable(plan.backbone):
        return None
    label = maps_label(plan, k)
    held = _MEMO.get((id(features), label))
    if held is not None and held[0]() is features:
        return held[1]
    column = next(iter(features.image_paths_train))
    paths = list(features.image_paths_train[column]) + list(features.image_paths_test[column])
    cache_dir = None if features.cache_dir is None else features.cache_dir / "image_maps"
    cache = MapCache(cache_dir, label)
    n_todo = sum(1 for p in set(paths) if p and not cache.has(file_key(p)))
    # The probe priced one view (or two with flip); the maps always need both.
    per_image = plan.per_image_s * (1 if plan.flip_tta else VIEWS)
    if n_todo * per_image > seconds:
        return None
    try:
        maps = trunk_maps(paths, plan, k, cache_dir=cache_dir, deadline=time.monotonic() + seconds,
                          threads=threads)
    except TooSlow:
        return None
    if maps is None:
        return None
    n_train = features.n_train
    result = FinetuneInputs(maps[:n_train], plan.backbone, k), FinetuneInputs(maps[n_train:], plan.backbone, k)
    key = (id(features), label)
    _MEMO[key] = (weakref.ref(features, lambda _ref, m=key: _MEMO.pop(m, None)), result)
    return result


def map_shape(backbone: Backbone, px: int, k: int = DEFAULT_K) -> tuple[int, int, int]:
    """(C, H, W) of the maps a plan would cache, for pricing before they exist."""
    with torch.inference_mode():
        return tuple(_trunk(pretrained_module(backbone), torch.zeros(1, 3, px, px), k).shape[1:])  # type: ignore[return-value]


def maps_megabytes(backbone: Backbone, px: int, k: int, n_images: int) -> float:
    """Memory the float16 maps of n images take (both views)."""
    return n_images * VIEWS * math.prod(map_shape(backbone, px, k)) * 2 / 1e6
