"""EfficientNet-Lite fine-tuned on the task, affordably on a CPU: only its last blocks train.

The frozen part of the network runs once per image and its mirror, its maps kept on disk
(`image_maps`); the model trains a copy of the last `k` blocks, the 1x1 head convolution and a new
linear head on those maps, with augmentation done on the maps themselves (the mirrored view,
small translations), in torch_loop's training loop. `estimate_finetune_seconds` times a real batch
so the solver can tell beforehand whether a run fits its budget.
"""
from __future__ import annotations

import copy
import math
import time
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import torch
from torch import nn
from torch.nn import functional

from solve_pipeline.networks import device
from solve_pipeline.images.image_backbones import Backbone, available_backbones, cheapest
from solve_pipeline.images.image_maps import DEFAULT_K, VIEWS, FinetuneInputs, fine_tunable, pretrained_module
from solve_pipeline.networks.torch_loop import Loop, Pace, TorchModel, TrainSettings
from solve_pipeline.networks.torch_training import start_head, torch_threads

PREDICT_BATCH = 256
# Of a training step's time per row, what a forward pass over both views costs (validation,
# prediction): forward ~1/3 of forward+backward, twice; rounded up to err on the safe side.
FORWARD_SHARE = 0.8


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
class _Settings(TrainSettings):
    block_learning_rate: float = 3e-4
    head_learning_rate: float = 1e-3
    weight_decay: float = 0.01
    batch_size: int = 32
    max_epochs: int = 15
    patience: int = 3
    dropout: float = 0.3
    shift: int = field(default=1, metadata={"min": 0})
    # Epochs that train the new head alone first: its random start would otherwise send large,
    # meaningless gradients into the pretrained blocks (the linear-probe-then-fine-tune recipe).
    head_epochs: int = field(default=0, metadata={"min": 0})


def _optimizer(net: _Net, s: _Settings) -> torch.optim.Optimizer:
    """AdamW, a small rate for the pretrained layers and a large one for the new head."""
    return torch.optim.AdamW([
        {"params": net.pretrained_parameters(), "lr": s.block_learning_rate},
        {"params": list(net.head.parameters()), "lr": s.head_learning_rate},
    ], weight_decay=s.weight_decay)


class ImageFinetuneModel(TorchModel):
    """The last blocks of an EfficientNet-Lite fine-tuned on FinetuneInputs, following the
    solver's model protocol; its outputs are probabilities averaged over both views."""

    Settings = _Settings
    PART = "image fine-tuning"
    PROBABILITIES = True

    def _train(self, X: FinetuneInputs, y: np.ndarray, X_val: FinetuneInputs | None,
               y_val: np.ndarray | None) -> None:
        s, deadline, on = self.settings, self.options.deadline, self.device_
        batch_size = max(1, int(s.batch_size * self.batch_factor_))
        out_dim, targets = self._targets(y)
        self.net_ = _Net(pretrained_module(X.backbone), X.k, out_dim, s.dropout).to(on)
        start_head(self.net_.head, self.spec, y)
        rng = np.random.RandomState(self.options.seed)
        validate = X_val is not None and y_val is not None and len(y_val) > 0
        n_val = len(y_val) if validate else 0
        pace = Pace()  # per row

        def batches(epoch: int) -> list[np.ndarray]:
            for parameter in self.net_.pretrained_parameters():
                parameter.requires_grad_(epoch >= s.head_epochs)
            if epoch == s.head_epochs:
                pace.reset()  # head-only steps were cheaper: pace anew
            order = rng.permutation(len(y))
            return [order[i:i + batch_size] for i in range(0, len(order), batch_size)]

        def stop_before(rows: np.ndarray, steps: int) -> bool:
            return deadline is not None and _out_of_time(deadline, pace.seconds / max(pace.units, 1),
                                                         len(rows), n_val, steps)

        self._run(Loop(_optimizer(self.net_, s), targets, batches,
                       forward=lambda rows: self.net_(_augment(X.maps[rows], s.shift, rng).to(on, non_blocking=True)),
                       stop_before=stop_before,
                       validation=(lambda: self._on_device(lambda: self._raw(X_val))) if validate else None,
                       y_val=np.asarray(y_val) if validate else None, patience=s.patience,
                       after_step=lambda rows, seconds: pace.add(len(rows), seconds)), X, y)

    def _raw(self, X: FinetuneInputs) -> np.ndarray:
        """Probabilities (classification) or standardised values, averaged over both views."""
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

    def _outputs(self, X: FinetuneInputs) -> np.ndarray:
        with torch_threads(self.options.threads):
            return self._on_device(lambda: self._raw(X))


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
        net = _Net(pretrained_module(backbone), k, 2, s.dropout).to(on).train()
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
