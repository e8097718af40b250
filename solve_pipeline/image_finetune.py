"""EfficientNet-Lite fine-tuned on the task, affordably on a CPU: only its last blocks train.

A full forward pass costs 15-60 ms per image here, so K folds x several epochs through whole
images do not fit a budget. The frozen part of the network (stem and all blocks but the last
`k`) is therefore run once per image, for the image and its mirror, and its feature maps are
kept on disk; the model trains a copy of the last `k` blocks, the 1x1 head convolution and a new
linear head on those maps, with augmentation done on the maps themselves (the mirrored view,
small translations). `estimate_finetune_seconds` times a real batch so the solver can tell
beforehand whether a run fits its budget.
"""

from __future__ import annotations

import copy
import math
import os
import time
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

# Before torch's OpenMP starts (see image_embedding.py).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numpy as np  # noqa: E402
import torch  # noqa: E402
from torch import nn  # noqa: E402
from torch.nn import functional  # noqa: E402

from agentk.core.workspace import replacing  # noqa: E402
from solve_pipeline.baseline_models import ConstantModel  # noqa: E402
from solve_pipeline.dataset import FeatureSet  # noqa: E402
from solve_pipeline.image_backbones import Backbone, available_backbones, cheapest  # noqa: E402
from solve_pipeline import device  # noqa: E402
from solve_pipeline.image_embedding import ImagePlan, TooSlow, paced_batches  # noqa: E402
from solve_pipeline.vector_cache import file_key  # noqa: E402
from solve_pipeline.torch_training import FineTunedModel, start_head, torch_threads  # noqa: E402

# Blocks trained: the last one (Lite0's 192 -> 320 channels at stride 32) beat the last two on
# 10 monkey species at 224 px, 3-fold accuracy 0.989 vs 0.980 (frozen features + logistic 0.984).
DEFAULT_K = 1
TRUNK_BATCH = 32
PREDICT_BATCH = 256
VIEWS = 2  # the image and its mirror
# Of a training step's time per row, what a forward pass over both views costs (validation,
# prediction): forward ~1/3 of forward+backward, twice; rounded up to err on the safe side.
FORWARD_SHARE = 0.8


# ---- the frozen trunk and its cached maps ----

_MODULES: dict[str, nn.Module] = {}


def _module(backbone: Backbone, on: torch.device | None = None) -> nn.Module:
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
        module = _module(plan.backbone, on)
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
    present = [found[key] for key in keys if key in found]
    if not present:
        return None
    mean = np.mean(np.stack(present).astype(np.float32), axis=0).astype(np.float16)
    return np.stack([found.get(key, mean) for key in keys])


# ---- inputs ----


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
        return tuple(_trunk(_module(backbone), torch.zeros(1, 3, px, px), k).shape[1:])  # type: ignore[return-value]


def maps_megabytes(backbone: Backbone, px: int, k: int, n_images: int) -> float:
    """Memory the float16 maps of n images take (both views)."""
    return n_images * VIEWS * math.prod(map_shape(backbone, px, k)) * 2 / 1e6


# ---- network ----


class _Net(nn.Module):
    """The last k pretrained blocks → head convolution → average pool → dropout → linear head."""

    def __init__(self, module: nn.Module, k: int, out_dim: int, dropout: float) -> None:
        super().__init__()
        net = module.net
        self.blocks = copy.deepcopy(nn.ModuleList(list(net._blocks)[-k:]))
        self.conv_head = copy.deepcopy(net._conv_head)
        self.bn = copy.deepcopy(net._bn1)
        self.activation = copy.deepcopy(net._swish)
        # Stochastic depth at the rates the blocks had in the whole network.
        n_blocks, rate = len(net._blocks), float(net._global_params.drop_connect_rate or 0.0)
        self.drop_connect = [rate * (n_blocks - k + j) / n_blocks for j in range(k)]
        self.dropout = nn.Dropout(dropout)
        self.head = nn.Linear(net._conv_head.out_channels, out_dim)

    def train(self, mode: bool = True) -> _Net:
        super().train(mode)
        # Running statistics stay ImageNet's: batches of a few dozen maps would only add noise.
        for layer in self.modules():
            if isinstance(layer, nn.modules.batchnorm._BatchNorm):
                layer.eval()
        return self

    def forward(self, maps: torch.Tensor) -> torch.Tensor:
        x = maps
        for block, rate in zip(self.blocks, self.drop_connect, strict=True):
            x = block(x, drop_connect_rate=rate)
        x = self.activation(self.bn(self.conv_head(x)))
        return self.head(self.dropout(x.mean(dim=(2, 3))))

    def pretrained_parameters(self) -> list[nn.Parameter]:
        return [p for part in (self.blocks, self.conv_head, self.bn) for p in part.parameters()]


def _augment(maps: np.ndarray, shift: int, rng: np.random.RandomState) -> torch.Tensor:
    """One view per row, picked at random, translated by up to `shift` cells each way (edges
    repeated): the maps' own version of flips and random crops."""
    rows = np.arange(len(maps))
    x = torch.from_numpy(maps[rows, rng.randint(VIEWS, size=len(maps))].astype(np.float32))
    if shift <= 0:
        return x
    height, width = x.shape[2:]
    padded = functional.pad(x, (shift, shift, shift, shift), mode="replicate")
    offsets = rng.randint(2 * shift + 1, size=(len(maps), 2))
    return torch.stack([padded[i, :, dy:dy + height, dx:dx + width] for i, (dy, dx) in enumerate(offsets)])


# ---- model ----


@dataclass
class _Settings:
    block_learning_rate: float = 3e-4
    head_learning_rate: float = 1e-3
    weight_decay: float = 0.01
    batch_size: int = 32
    max_epochs: int = 15
    patience: int = 3
    dropout: float = 0.3
    shift: int = 1
    # Epochs that train the new head alone first: its random start would otherwise send large,
    # meaningless gradients into the pretrained blocks (the linear-probe-then-fine-tune recipe).
    head_epochs: int = 0

    @classmethod
    def from_params(cls, params: dict[str, Any] | None, light: bool) -> _Settings:
        params = dict(params or {})
        settings = cls()
        for name in ("block_learning_rate", "head_learning_rate", "weight_decay", "dropout"):
            if name in params:
                setattr(settings, name, float(params.pop(name)))
        for name in ("batch_size", "max_epochs", "patience"):
            if name in params:  # HEBO hands integers over as category strings
                setattr(settings, name, max(1, int(float(params.pop(name)))))
        for name in ("shift", "head_epochs"):
            if name in params:
                setattr(settings, name, max(0, int(float(params.pop(name)))))
        if params:  # a misspelt name would otherwise be tuned without any effect
            raise ValueError(f"unknown fine-tuning parameters: {sorted(params)}")
        if light:
            settings.max_epochs = 1
        return settings


def _optimizer(net: _Net, s: _Settings) -> torch.optim.Optimizer:
    """AdamW, a small rate for the pretrained layers and a large one for the new head."""
    return torch.optim.AdamW([
        {"params": net.pretrained_parameters(), "lr": s.block_learning_rate},
        {"params": list(net.head.parameters()), "lr": s.head_learning_rate},
    ], weight_decay=s.weight_decay)


class ImageFinetuneModel(FineTunedModel):
    """The last blocks of an EfficientNet-Lite fine-tuned on FinetuneInputs, following the
    solver's model protocol."""

    Settings = _Settings
    PART = "image fine-tuning"

    def _train(self, X: FinetuneInputs, y: np.ndarray, X_val: FinetuneInputs | None,
               y_val: np.ndarray | None) -> None:
        s, deadline, on = self.settings, self.options.deadline, self.device_
        batch_size = max(1, int(s.batch_size * self.batch_factor_))
        if self.spec.is_classification:
            out_dim = self.spec.n_classes
            targets = torch.as_tensor(y.astype(np.int64)).to(on)
        else:
            out_dim = 1
            self.y_mean_ = float(np.mean(y))
            self.y_std_ = float(np.std(y)) or 1.0
            targets = torch.as_tensor(((y - self.y_mean_) / self.y_std_).astype(np.float32)).to(on)
        self.net_ = _Net(_module(X.backbone), X.k, out_dim, s.dropout).to(on)
        start_head(self.net_.head, self.spec, y)
        optimizer = _optimizer(self.net_, s)
        loss_fn = nn.CrossEntropyLoss() if self.spec.is_classification else nn.MSELoss()
        rng = np.random.RandomState(self.options.seed)
        validate = X_val is not None and y_val is not None and len(y_val) > 0
        n_val = len(y_val) if validate else 0

        best_loss, best_state, since_best = math.inf, None, 0
        steps, trained_rows, train_seconds = 0, 0, 0.0
        for epoch in range(s.max_epochs):
            self.net_.train()
            for parameter in self.net_.pretrained_parameters():
                parameter.requires_grad_(epoch >= s.head_epochs)
            if epoch == s.head_epochs:
                trained_rows, train_seconds = 0, 0.0  # head-only steps were cheaper: pace anew
            order = rng.permutation(len(y))
            batches = [order[i:i + batch_size] for i in range(0, len(order), batch_size)]
            out_of_time, epoch_steps = False, 0
            for done, rows in enumerate(batches):
                if deadline is not None and _out_of_time(deadline, train_seconds / max(trained_rows, 1),
                                                         len(rows), n_val, steps):
                    out_of_time = True
                    self.epochs_run_ = epoch + done / len(batches)
                    break
                started = time.monotonic()
                optimizer.zero_grad()
                with device.autocast(on):
                    output = self.net_(_augment(X.maps[rows], s.shift, rng).to(on, non_blocking=True)).float()
                loss = loss_fn(output if self.spec.is_classification else output[:, 0],
                               targets[torch.as_tensor(rows, device=on)])
                loss.backward()
                torch.nn.utils.clip_grad_norm_(self.net_.parameters(), 5.0)
                optimizer.step()
                steps += 1
                epoch_steps += 1
                trained_rows += len(rows)
                train_seconds += time.monotonic() - started
            if not out_of_time:
                self.epochs_run_ = float(epoch + 1)
            if validate and epoch_steps:
                val_loss = self._loss(X_val, np.asarray(y_val))
                self.history_.append(val_loss)
                if val_loss < best_loss:
                    best_loss, since_best, self.best_epoch_ = val_loss, 0, epoch
                    best_state = {k: v.detach().clone() for k, v in self.net_.state_dict().items()}
                else:
                    since_best += 1
            if out_of_time or since_best >= s.patience:
                break
        if steps == 0:
            self.fallback_ = ConstantModel(self.spec).fit(X, y)  # not even one batch fitted
            del self.net_
            return
        if best_state is not None:
            self.net_.load_state_dict(best_state)
        self.net_.eval()


    def _raw(self, X: FinetuneInputs) -> np.ndarray:
        """Probabilities (classification) or standardised values, averaged over both views."""
        return self._on_device(lambda: self._raw_on(X))

    def _raw_on(self, X: FinetuneInputs) -> np.ndarray:
        self.net_.eval()
        on = self.device_
        width = self.spec.n_classes if self.spec.is_classification else 1
        out = np.zeros((len(X), width))
        batch = PREDICT_BATCH * device.batch_scale(on)
        with torch.inference_mode(), device.autocast(on):
            for start in range(0, len(X), batch):
                part = X.maps[start:start + batch]
                for view in range(VIEWS):
                    output = self.net_(torch.from_numpy(part[:, view].astype(np.float32)).to(on)).double()
                    if self.spec.is_classification:
                        output = torch.softmax(output, dim=1)
                    out[start:start + len(part)] += output.cpu().numpy() / VIEWS
        return out

    def _loss(self, X: FinetuneInputs, y: np.ndarray) -> float:
        """Validation loss of the averaged predictions, in the training objective's units."""
        outputs = self._raw(X)
        if self.spec.is_classification:
            picked = outputs[np.arange(len(y)), y.astype(int)]
            return float(-np.log(np.clip(picked, 1e-12, None)).mean())
        return float(np.mean((outputs[:, 0] - (y - self.y_mean_) / self.y_std_) ** 2))

    # -- prediction --

    def predict_proba(self, X: FinetuneInputs) -> np.ndarray:
        if self.fallback_ is not None:
            return self.fallback_.predict_proba(X)
        with torch_threads(self.options.threads):
            return self._raw(X)

    def _values(self, X: FinetuneInputs) -> np.ndarray:
        if self.fallback_ is not None:
            return self.fallback_._values(X)
        with torch_threads(self.options.threads):
            return self._raw(X)[:, 0] * self.y_std_ + self.y_mean_


def _out_of_time(deadline: float, pace: float, batch_rows: int, val_rows: int, steps: int) -> bool:
    """Whether the next batch and the closing validation pass no longer fit before the deadline.
    `pace` is training seconds per row so far; before the first step only a passed deadline
    stops it."""
    left = deadline - time.monotonic()
    if steps == 0:
        return left <= 0
    return left < pace * (batch_rows + FORWARD_SHARE * val_rows)


# ---- cost probe ----

_PACES: dict[tuple, float] = {}


def _probe_pace(backbone: Backbone, k: int, shape: tuple[int, int, int], threads: int) -> float:
    """Seconds per row of a training step, timed on one real batch of random maps after a
    warm-up step (the first call of a shape builds kernels)."""
    s = _Settings()
    rng = np.random.RandomState(0)
    on = device.current()
    maps = rng.standard_normal((s.batch_size, VIEWS, *shape)).astype(np.float16)
    labels = torch.as_tensor(rng.randint(2, size=s.batch_size)).to(on)
    with torch_threads(threads), torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        net = _Net(_module(backbone), k, 2, s.dropout).to(on).train()
        optimizer = _optimizer(net, s)

        def step() -> None:
            optimizer.zero_grad()
            with device.autocast(on):
                output = net(_augment(maps, s.shift, rng).to(on)).float()
            functional.cross_entropy(output, labels).backward()
            optimizer.step()

        step()
        device.synchronize()
        started = time.monotonic()
        step()
        device.synchronize()
        return (time.monotonic() - started) / s.batch_size


def estimate_finetune_seconds(inputs_shape: Sequence[int], n_rows: int, epochs: float, threads: int, *,
                              backbone: Backbone | None = None, k: int = DEFAULT_K,
                              predict_rows: int = 0) -> float:
    """Projected seconds for ImageFinetuneModel to train `epochs` epochs on `n_rows` rows of maps
    shaped like `inputs_shape` (a FinetuneInputs' shape, or just its (C, H, W)), validate on a
    quarter as many rows after each epoch, and predict `predict_rows` rows. Times a real batch
    once per process and shape. The backbone defaults to the cheapest EfficientNet-Lite."""
    if backbone is None:
        backbone = cheapest([b for b in available_backbones() if fine_tunable(b)])
        if backbone is None:
            return math.inf
    shape = tuple(int(d) for d in inputs_shape[-3:])
    key = (backbone.name, k, shape, max(1, threads), device.current().type)
    if key not in _PACES:
        _PACES[key] = _probe_pace(backbone, k, shape, threads)  # type: ignore[arg-type]
    pace = _PACES[key]
    forward_rows = math.ceil(epochs) * n_rows / 4 + predict_rows
    return pace * (epochs * n_rows + FORWARD_SHARE * forward_rows)
