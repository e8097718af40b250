"""The user's own image models as backbones: a Hugging Face (transformers) or timm model named by
`--image-backbone`, or a well-known checkpoint already in the local hub cache.

They join `image_embedding.plan_embedding`'s options ahead of the bundled EfficientNet-Lite: a named
model because the user asked for it, a cached one because its published ImageNet quality beats the
best bundled backbone (agentk/core/local_image_models.py). Neither is trusted on price: each runs its
own timed pass over the very batch the probe timed Lite0 on, and its `relative_cost` is that time's
ratio, so the budget check that prices every option prices it honestly. A model that cannot load
(corrupt files, an architecture this transformers does not know, missing weights) or whose probe says
it cannot fit is dropped with one line, and the bundled backbones carry on. Only local files are read.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.nn import functional

from agentk.core.local_image_models import BUNDLED_TOP1, ImageModelFiles, cached_models, find_named, offline
from solve_pipeline.networks import device
from solve_pipeline.base.cv import emit
from solve_pipeline.images.image_backbones import Backbone

# Cached models probed per solve, best published first: each costs a load and two passes of a batch.
MAX_CACHED = 2
# A model whose first two images already project past this many times the budget is not timed further.
HOPELESS = 4.0


@dataclass(frozen=True)
class LocalBackbone(Backbone):
    """A backbone from the user's files; `relative_cost` is infinite until its probe prices it."""

    files: ImageModelFiles | None = None


@dataclass
class _State:
    named: str | None = None
    offered: list[dict[str, Any]] = field(default_factory=list)
    priced: dict[str, dict[str, Any]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    dropped: set[str] = field(default_factory=set)  # failed once: not loaded, probed or said again
    chosen: str | None = None


_STATE = _State()
_MODULES: dict[str, nn.Module] = {}  # loaded once per process: the probe's module embeds too
_LOADING = threading.Lock()


def configure(named: str | None, *, prewarm: bool = False) -> None:
    """The solve's `--image-backbone` (a folder or a cached repo id; None: none named). With
    `prewarm`, the model loads in the background from now on: importing transformers' modules for
    it takes seconds of a small budget, which the solve's first steps can overlap."""
    global _STATE
    _STATE = _State(named=named)
    if named is not None and prewarm:
        threading.Thread(target=_prewarm, args=(named,), name="image-backbone-load", daemon=True).start()


def _prewarm(named: str) -> None:
    try:
        _backbone(find_named(named)).load()
    except Exception:  # noqa: BLE001 - the probe loads it again and says what failed, in one line
        pass


def _say(line: str) -> None:
    _STATE.notes.append(line)
    emit("image_backbone", message=line)


def _one_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0][:200]}" if text else type(error).__name__


# ---- the networks ----


class _Normalised(nn.Module):
    """RGB in [0, 1] → the model's own normalisation → pooled features. `fixed_px`: the input is
    resized to the one size a model runs at (set when it refused the probe's size)."""

    def __init__(self, files: ImageModelFiles) -> None:
        super().__init__()
        self.register_buffer("mean", torch.tensor(files.mean).view(1, 3, 1, 1), persistent=False)
        self.register_buffer("std", torch.tensor(files.std).view(1, 3, 1, 1), persistent=False)
        self.scale = files.scale
        self.fixed_px: int | None = None

    def forward(self, rgb: torch.Tensor) -> torch.Tensor:
        if self.fixed_px is not None and rgb.shape[-1] != self.fixed_px:
            rgb = functional.interpolate(rgb, size=(self.fixed_px, self.fixed_px), mode="bilinear", align_corners=False)
        return self.pooled((rgb * self.scale - self.mean) / self.std).flatten(1)

    def pooled(self, pixels: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError


class _TransformersFeatures(_Normalised):
    """A transformers vision model's pooled output. Its pooler is used only when the checkpoint
    trained it (a classifier's checkpoint leaves ViT's dense pooler random): else the class token
    of a token sequence, or the mean of the tokens or of the map."""

    def __init__(self, files: ImageModelFiles, model: nn.Module, pooler_trained: bool) -> None:
        super().__init__(files)
        self.model = model
        self.pooler_trained = pooler_trained
        # CLIP-like models (an image and a text tower): the image tower's projected embedding.
        self.call = getattr(model, "get_image_features", None) or model
        accepts = inspect.signature(getattr(model, "get_image_features", None) or model.forward).parameters
        # ViT-like models run at other sizes than their training size when asked to.
        self.extra = {"interpolate_pos_encoding": True} if "interpolate_pos_encoding" in accepts else {}

    def pooled(self, pixels: torch.Tensor) -> torch.Tensor:
        out = self.call(pixel_values=pixels, **self.extra)
        if isinstance(out, torch.Tensor):
            return out
        pooler = getattr(out, "pooler_output", None)
        if pooler is not None and self.pooler_trained:
            return pooler
        hidden = out.last_hidden_state
        if hidden.dim() == 4:
            return hidden.mean(dim=(2, 3))
        return hidden[:, 0] if pooler is not None else hidden.mean(dim=1)


class _TimmFeatures(_Normalised):
    def __init__(self, files: ImageModelFiles, model: nn.Module) -> None:
        super().__init__(files)
        self.model = model

    def pooled(self, pixels: torch.Tensor) -> torch.Tensor:
        return self.model(pixels)  # created with num_classes=0: the pooled features


def _load_transformers(files: ImageModelFiles) -> nn.Module:
    offline()
    from transformers import AutoModel
    from transformers.utils import logging

    logging.set_verbosity_error()  # stdout carries JSON events; unused-weight warnings say nothing here
    logging.disable_progress_bar()
    model, info = AutoModel.from_pretrained(str(files.folder), local_files_only=True, output_loading_info=True)
    missing = sorted(k for k in info.get("missing_keys", ()) if "pooler" not in k)
    if missing or info.get("mismatched_keys"):
        # Random weights would embed noise: a checkpoint that does not fit its architecture is refused.
        raise ValueError(f"the checkpoint lacks {len(missing) or len(info['mismatched_keys'])} of the "
                         f"architecture's weights (e.g. {(missing or list(info['mismatched_keys']))[0]})")
    pooler_trained = not any("pooler" in k for k in info.get("missing_keys", ()))
    return _TransformersFeatures(files, model, pooler_trained)


def _load_timm(files: ImageModelFiles) -> nn.Module:
    import timm

    architecture = json.loads((files.folder / "config.json").read_text(encoding="utf-8"))["architecture"]
    weights = next(p for p in (files.folder / "model.safetensors", files.folder / "pytorch_model.bin") if p.is_file())
    model = timm.create_model(architecture, pretrained=True, num_classes=0,
                              pretrained_cfg_overlay={"file": str(weights)})
    return _TimmFeatures(files, model)


def _builder(files: ImageModelFiles) -> Callable[[], nn.Module]:
    def build() -> nn.Module:
        with _LOADING:  # a load started by the prewarm is waited for, not repeated
            if files.name not in _MODULES:
                _MODULES[files.name] = (_load_timm if files.kind == "timm" else _load_transformers)(files)
            return _MODULES[files.name]

    return build


def _backbone(files: ImageModelFiles) -> LocalBackbone:
    return LocalBackbone(name=files.name, native_px=files.native_px, width=files.width or 0, relative_cost=math.inf,
                         build=_builder(files), source=f"{files.kind} {files.label}", files=files)


# ---- listing and pricing ----


def _drop(backbone: LocalBackbone, why: str) -> None:
    _STATE.dropped.add(backbone.name)
    files = backbone.files
    named = files is not None and files.named
    label = files.label if files is not None else backbone.name
    _say(f"image backbone {label}: {why}; {'using the bundled backbones' if named else 'skipped'}")


def with_local(bundled: list[Backbone]) -> list[Backbone]:
    """The named model, or the cached ones that beat the best bundled backbone, then `bundled`."""
    if _STATE.offered or _STATE.notes:  # listed once per solve: its lines are said once
        local = [_backbone(o["files"]) for o in _STATE.offered if o["files"].name not in _STATE.dropped]
    else:
        local = _list_local(bundled)
    if not any(math.isfinite(b.relative_cost) for b in bundled) and local:
        # Nothing bundled to price against: the first one prices the rest, itself at 1.
        local[0] = dataclasses.replace(local[0], relative_cost=1.0)
    return [*local, *bundled]


def _list_local(bundled: list[Backbone]) -> list[LocalBackbone]:
    if _STATE.named is not None:
        try:
            files = find_named(_STATE.named)
        except ValueError as error:
            _say(f"image backbone {_STATE.named}: {error}; using the bundled backbones")
            return []
        _STATE.offered.append({"files": files, "why": "named by --image-backbone"})
        return [_backbone(files)]
    found, notes = cached_models()
    for line in notes:
        _say(line)
    best = max((BUNDLED_TOP1.get(b.name, 0.0) for b in bundled), default=0.0)
    best_name = next((b.name for b in bundled if BUNDLED_TOP1.get(b.name) == best), "none")
    better = [f for f in found if (f.top1 or 0.0) > best][:MAX_CACHED]
    for files in better:
        _STATE.offered.append({"files": files, "why": f"cached; published top-1 {files.top1}% above {best_name}'s {best}%"})
    return [_backbone(f) for f in better]


def _timed(module: nn.Module, batch: torch.Tensor, on: torch.device) -> tuple[float, torch.Tensor]:
    with torch.inference_mode(), device.autocast(on):
        began = time.monotonic()
        features = module(batch).float().cpu()  # back on the host: the GPU's work is done by then
        return time.monotonic() - began, features


def _probe(backbone: LocalBackbone, images: np.ndarray, on: torch.device,
           seconds: float, n_images: int) -> tuple[float, int, int] | str:
    """(seconds per image, the size it was timed at, pooled width), or why it is out. A model trained below
    the batch's size is timed at its own size, where it will run: a small model's time is mostly
    per-call overhead, which does not shrink with the pixels as the extrapolation assumes."""
    module = backbone.load().to(on)
    batch = torch.from_numpy(images).to(on)
    if backbone.native_px < batch.shape[-1]:
        batch = functional.interpolate(batch, size=(backbone.native_px,) * 2, mode="bilinear", antialias=True,
                                       align_corners=False)
    try:
        first, _ = _timed(module, batch[:2], on)
    except Exception as error:  # noqa: BLE001 - e.g. a model that runs at its training size only
        module.fixed_px = backbone.native_px
        first, _ = _timed(module, batch[:2], on)  # a second failure is the model's own
        label = backbone.files.label if backbone.files is not None else backbone.name
        _say(f"image backbone {label}: runs at {backbone.native_px} px only ({_one_line(error)})")
    if n_images * first / 2 > HOPELESS * seconds:
        return f"~{n_images * first / 2:.0f} s for {n_images} images at {batch.shape[-1]} px, {seconds:.0f} s allowed"
    _timed(module, batch, on)  # warm-up at the batch's shape, as the Lite0 probe does
    spent, features = _timed(module, batch, on)
    if features.dim() != 2 or not torch.isfinite(features).all():
        return f"its pooled output is {tuple(features.shape)}{'' if torch.isfinite(features).all() else ' with NaN'}"
    return spent / len(images), int(batch.shape[-1]), int(features.shape[1])


def price_local(backbones: list[Backbone], images: np.ndarray, per_pixel: float, on: torch.device, *,
                seconds: float, n_images: int) -> list[Backbone]:
    """`backbones` with each unpriced local one timed on `images` (the probe's batch, (n, 3, px, px);
    at its own size when it was trained smaller) and priced per pixel against the probe's
    `per_pixel` (seconds per pixel at relative cost 1). One that cannot load or run, or cannot come
    near `seconds` for `n_images`, is dropped with a line."""
    priced: list[Backbone] = []
    if not 0 < per_pixel < math.inf:  # nothing priced to compare with (every backbone unpriced)
        return [b for b in backbones if math.isfinite(b.relative_cost)]
    for backbone in backbones:
        if not isinstance(backbone, LocalBackbone) or math.isfinite(backbone.relative_cost):
            priced.append(backbone)
            continue
        try:
            probed = _probe(backbone, images, on, seconds, n_images)
        except Exception as error:  # noqa: BLE001 - a user's files can fail in any way: one line, then the bundled ones
            probed = f"cannot load or run it ({_one_line(error)})"
        if isinstance(probed, str):
            _drop(backbone, probed)
            continue
        per_image, px, width = probed
        relative = per_image / px ** 2 / per_pixel
        _STATE.priced[backbone.name] = {"relative_cost": round(relative, 3), "width": width,
                                        "probe_ms_per_image": round(per_image * 1000, 2), "probe_px": px}
        if backbone.files is not None and backbone.files.width not in (None, width):
            _say(f"image backbone {backbone.files.label}: its config says width {backbone.files.width}, it pools {width}")
        priced.append(dataclasses.replace(backbone, relative_cost=relative, width=width))
    return priced


# ---- what the solve says ----


def chosen_note(backbone: Backbone) -> str:
    """Why the embedding's backbone was chosen over (or instead of) the local ones, for its note."""
    offered = {o["files"].name: o for o in _STATE.offered}
    if backbone.name in offered:
        _STATE.chosen = backbone.name
        return f" ({offered[backbone.name]['why']}; its probe fits the budget)"
    if not offered:
        return ""
    missed = ", ".join(o["files"].label for o in offered.values())
    return f" ({missed}: not within the budget, or could not run)"


def summary() -> dict[str, Any] | None:
    """For solve_result.json: what was named or found, how each was priced, which one embedded."""
    if _STATE.named is None and not _STATE.offered and not _STATE.notes:
        return None
    return {
        "named": _STATE.named,
        "offered": [{"name": o["files"].name, "source": o["files"].label, "why": o["why"],
                     "published_top1": o["files"].top1, **_STATE.priced.get(o["files"].name, {})}
                    for o in _STATE.offered],
        "chosen": _STATE.chosen,
        "notes": list(_STATE.notes),
    }
