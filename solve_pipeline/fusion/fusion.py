"""Late-fusion network of the Agent K paper: one embedder per modality, concatenated, one trunk.

`fusion_inputs.fusion_matrices` turns a FeatureSet into `ModalityBlocks` (standardised numerics,
category codes, a dense text representation, image tensors); `FusionModel` trains the network on
them in torch_loop's training loop (the task's loss, early stopping on the validation split, the
solver's deadline).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from solve_pipeline.networks import device
from solve_pipeline.fusion.fusion_defaults import FUSION_DEFAULTS, NN_DEFAULTS
from solve_pipeline.fusion.fusion_inputs import ModalityBlocks
from solve_pipeline.networks.torch_loop import Loop, TorchModel, TrainSettings
from solve_pipeline.networks.torch_training import start_head

PREDICT_BATCH = 1024


# ---- network ----


def _embedding_dim(cardinality: int) -> int:
    # fast.ai's rule of thumb, capped: CPU time matters more than the last bit of capacity.
    return int(min(16, max(2, round(1.6 * cardinality ** 0.56))))


def _image_backbone(channels: int, height: int, width: int) -> tuple[nn.Module, int, str]:
    """(module, output width, name): a small CNN for pixels too small for pretrained features
    (pretrained ones arrive as vectors, see fusion_inputs)."""
    layers: list[nn.Module] = []
    size, c_in = min(height, width), channels
    for c_out in (32, 64, 64):
        layers += [nn.Conv2d(c_in, c_out, 3, padding=1), nn.BatchNorm2d(c_out), nn.ReLU()]
        if size >= 8:
            layers.append(nn.MaxPool2d(2))
            size //= 2
        c_in = c_out
    # A 2x2 pool rather than a global one keeps a little of where strokes and objects sit.
    layers += [nn.AdaptiveAvgPool2d(2), nn.Flatten()]
    return nn.Sequential(*layers), c_in * 4, "small_cnn"


class _FusionNet(nn.Module):
    """Embedders per modality → concatenation → shared trunk → one head."""

    def __init__(self, blocks: ModalityBlocks, out_dim: int, hidden: int, dropout: float) -> None:
        super().__init__()

        def embedder(width: int) -> nn.Module:
            return nn.Sequential(nn.Linear(width, hidden), nn.ReLU(), nn.Dropout(dropout))

        self.embeddings = nn.ModuleList(nn.Embedding(c, _embedding_dim(c)) for c in blocks.cardinalities)
        tab_width = blocks.numeric.shape[1] + sum(e.embedding_dim for e in self.embeddings)
        self.tab = embedder(tab_width) if tab_width else None
        self.text = embedder(blocks.text.shape[1]) if blocks.text is not None else None
        self.image = None
        self.backbone_name: str | None = None
        if blocks.image is not None and blocks.image.ndim == 2:  # frozen pretrained features
            self.image, self.backbone_name = embedder(blocks.image.shape[1]), "pretrained"
        elif blocks.image is not None:
            backbone, width, self.backbone_name = _image_backbone(*blocks.image.shape[1:])
            self.image = nn.Sequential(backbone, embedder(width))
        n_parts = sum(part is not None for part in (self.tab, self.text, self.image))
        self.trunk = nn.Sequential(nn.Linear(n_parts * hidden, hidden), nn.ReLU(), nn.Dropout(dropout))
        self.head = nn.Linear(hidden, out_dim)

    def forward(self, numeric: torch.Tensor, categories: torch.Tensor,
                text: torch.Tensor | None, image: torch.Tensor | None) -> torch.Tensor:
        parts = []
        if self.tab is not None:
            tab = [numeric] + [emb(categories[:, j]) for j, emb in enumerate(self.embeddings)]
            parts.append(self.tab(torch.cat(tab, dim=1)))
        if self.text is not None:
            parts.append(self.text(text))
        if self.image is not None:
            parts.append(self.image(image))
        return self.head(self.trunk(torch.cat(parts, dim=1)))


# ---- model ----


@dataclass
class _Settings(TrainSettings):
    # An untuned net runs at the registry's defaults, the point HEBO's search starts from.
    learning_rate: float = float(FUSION_DEFAULTS["learning_rate"])
    optimizer: str = str(FUSION_DEFAULTS["optimizer"])
    weight_decay: float = float(FUSION_DEFAULTS["weight_decay"])
    dropout: float = float(FUSION_DEFAULTS["dropout"])
    batch_size: int = int(FUSION_DEFAULTS["batch_size"])
    hidden_size: int = int(FUSION_DEFAULTS["hidden_size"])
    max_epochs: int = int(NN_DEFAULTS["max_epochs"])
    patience: int = 5

    KIND = "fusion"
    LIGHT_EPOCHS = 2

    def check(self) -> None:
        if self.optimizer not in ("Adam", "SGD", "AdamW"):
            raise ValueError(f"unknown optimizer {self.optimizer!r}")


class FusionModel(TorchModel):
    """The late-fusion net over ModalityBlocks, following the solver's model protocol."""

    Settings = _Settings
    PART = "fusion net"

    def _train(self, X: ModalityBlocks, y: np.ndarray, X_val: ModalityBlocks | None,
               y_val: np.ndarray | None) -> None:
        s, on = self.settings, self.device_
        # Codes never seen in training rows would hit untrained embedding rows; they are read as
        # "missing" instead, the one level a net can be expected to have learnt something about.
        self.seen_ = [np.isin(np.arange(c), X.categories[:, j]) for j, c in enumerate(X.cardinalities)]
        out_dim, targets = self._targets(y)
        self.net_ = _FusionNet(X, out_dim, s.hidden_size, s.dropout).to(on)
        self.backbone_ = self.net_.backbone_name
        start_head(self.net_.head, self.spec, y)
        inputs = self._tensors(X)
        validate = X_val is not None and y_val is not None and len(y_val) > 0
        val_inputs = self._tensors(X_val) if validate else None
        generator = torch.Generator().manual_seed(self.options.seed)
        n, batch = len(y), max(1, int(s.batch_size * self.batch_factor_))

        def batches(epoch: int) -> list[torch.Tensor]:
            order = torch.randperm(n, generator=generator)
            return [order[start:start + batch] for start in range(0, n, batch)]

        self._run(Loop(self._optimizer(), targets, batches,
                       forward=lambda rows: self.net_(*_take(inputs, rows, on)),
                       stop_before=self._deadline_passed,
                       validation=(lambda: self._on_device(lambda: self._raw(val_inputs))) if validate else None,
                       y_val=np.asarray(y_val) if validate else None, patience=s.patience), X, y)

    def _optimizer(self) -> torch.optim.Optimizer:
        s = self.settings
        parameters = self.net_.parameters()
        if s.optimizer == "SGD":
            return torch.optim.SGD(parameters, lr=s.learning_rate, momentum=0.9,
                                   weight_decay=s.weight_decay, nesterov=True)
        kind = torch.optim.AdamW if s.optimizer == "AdamW" else torch.optim.Adam
        return kind(parameters, lr=s.learning_rate, weight_decay=s.weight_decay)

    def _tensors(self, X: ModalityBlocks) -> tuple:
        codes = X.categories.copy()
        for j, seen in enumerate(self.seen_):
            column = codes[:, j]
            known = (column >= 0) & (column < len(seen))
            known[known] = seen[column[known]]
            codes[:, j] = np.where(known, column, 0)
        return (
            torch.as_tensor(np.ascontiguousarray(X.numeric, dtype=np.float32)),
            torch.as_tensor(codes),
            None if X.text is None else torch.as_tensor(np.ascontiguousarray(X.text, dtype=np.float32)),
            None if X.image is None else torch.as_tensor(np.ascontiguousarray(X.image, dtype=np.float32)),
        )

    def _raw(self, inputs: tuple) -> np.ndarray:
        self.net_.eval()
        on = self.device_
        n = inputs[0].shape[0]
        chunks = []
        batch = PREDICT_BATCH * device.batch_scale(on)
        with torch.inference_mode(), device.autocast(on):
            for start in range(0, n, batch):
                rows = torch.arange(start, min(start + batch, n))
                chunks.append(self.net_(*_take(inputs, rows, on)).double().cpu().numpy())
        width = self.spec.n_classes if self.spec.is_classification else 1
        return np.vstack(chunks) if chunks else np.zeros((0, width))

    def _outputs(self, X: ModalityBlocks) -> np.ndarray:
        return self._on_device(lambda: self._raw(self._tensors(X)))


def _take(inputs: tuple, rows: Any, on: torch.device) -> tuple:
    """The rows of each block, on the device (inputs stay in host memory: an image block of a
    large set need not fit the GPU)."""
    return tuple(None if block is None else block[rows].to(on, non_blocking=True) for block in inputs)
