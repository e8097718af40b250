"""Late-fusion network of the Agent K paper: one embedder per modality, concatenated, one trunk.

`fusion_inputs.fusion_matrices` turns a FeatureSet into `ModalityBlocks` (standardised numerics,
category codes, a dense text representation, image tensors); `FusionModel` trains the network on
them with the task's loss, early stopping on the validation split and the solver's deadline.
"""

from __future__ import annotations

import copy
import math
import os
import time
from dataclasses import dataclass
from typing import Any

# Before torch's OpenMP starts: with other work on a 2-core machine, spinning worker threads made
# a small MLP's 2-thread epochs measured 3-30x slower than with passive waits (as in solver.py).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numpy as np  # noqa: E402
import torch  # noqa: E402
from torch import nn  # noqa: E402

from solve_pipeline import device  # noqa: E402
from solve_pipeline.baseline_models import (  # noqa: E402
    ConstantModel,
    ModelOptions,
    _ClassifierBase,
)
from solve_pipeline.fusion_inputs import ModalityBlocks, fusion_matrices  # noqa: E402
from solve_pipeline.registry import FUSION_DEFAULTS, NN_DEFAULTS  # noqa: E402
from solve_pipeline.setup_modules import TargetSpec  # noqa: E402
from solve_pipeline.torch_training import fit_on_device, start_head  # noqa: E402

__all__ = ["FusionModel", "ModalityBlocks", "fusion_matrices"]

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
class _Settings:
    # An untuned net runs at the registry's defaults, the point HEBO's search starts from.
    learning_rate: float = float(FUSION_DEFAULTS["learning_rate"])
    optimizer: str = str(FUSION_DEFAULTS["optimizer"])
    weight_decay: float = float(FUSION_DEFAULTS["weight_decay"])
    dropout: float = float(FUSION_DEFAULTS["dropout"])
    batch_size: int = int(FUSION_DEFAULTS["batch_size"])
    hidden_size: int = int(FUSION_DEFAULTS["hidden_size"])
    max_epochs: int = int(NN_DEFAULTS["max_epochs"])
    patience: int = 5

    @classmethod
    def from_params(cls, params: dict[str, Any] | None, light: bool) -> _Settings:
        params = dict(params or {})
        settings = cls()
        for name in ("learning_rate", "weight_decay", "dropout"):
            if name in params:
                setattr(settings, name, float(params.pop(name)))
        for name in ("batch_size", "hidden_size", "max_epochs", "patience"):
            if name in params:  # HEBO hands batch sizes over as category strings
                setattr(settings, name, max(1, int(float(params.pop(name)))))
        if "optimizer" in params:
            settings.optimizer = str(params.pop("optimizer"))
        if settings.optimizer not in ("Adam", "SGD", "AdamW"):
            raise ValueError(f"unknown optimizer {settings.optimizer!r}")
        if params:  # a misspelt name would otherwise be tuned without any effect
            raise ValueError(f"unknown fusion parameters: {sorted(params)}")
        if light:
            settings.max_epochs = min(settings.max_epochs, 2)
        return settings


class FusionModel(_ClassifierBase):
    """The late-fusion net over ModalityBlocks, following the solver's model protocol."""

    def __init__(self, spec: TargetSpec, options: ModelOptions | None = None,
                 params: dict[str, Any] | None = None) -> None:
        self.spec = spec
        self.options = options or ModelOptions()
        self.settings = _Settings.from_params(params, self.options.light)

    # -- fitting --

    def fit(self, X: ModalityBlocks, y: np.ndarray, *, X_val: ModalityBlocks | None = None,
            y_val: np.ndarray | None = None) -> FusionModel:
        self.fallback_: ConstantModel | None = None
        self.history_: list[float] = []  # validation loss per epoch
        self.best_epoch_: int | None = None
        self.epochs_run_ = 0
        self.device_ = torch.device("cpu")
        y = np.asarray(y)
        if len(y) == 0 or (self.spec.is_classification and len(np.unique(y)) < 2):
            self.fallback_ = ConstantModel(self.spec).fit(X, y)  # nothing to separate
            return self

        fit_on_device(self, "fusion net", lambda: self._train(X, y, X_val, y_val))
        return self

    def _train(self, X: ModalityBlocks, y: np.ndarray, X_val: ModalityBlocks | None,
               y_val: np.ndarray | None) -> None:
        s = self.settings
        deadline = self.options.deadline
        if deadline is not None and time.monotonic() > deadline:
            self.fallback_ = ConstantModel(self.spec).fit(X, y)  # no time to train at all
            return
        # Codes never seen in training rows would hit untrained embedding rows; they are read as
        # "missing" instead, the one level a net can be expected to have learnt something about.
        self.seen_ = [np.isin(np.arange(c), X.categories[:, j]) for j, c in enumerate(X.cardinalities)]
        if self.spec.is_classification:
            out_dim = self.spec.n_classes
            targets = torch.as_tensor(y.astype(np.int64))
        else:
            out_dim = 1
            self.y_mean_ = float(np.mean(y))
            self.y_std_ = float(np.std(y)) or 1.0
            targets = torch.as_tensor(((y - self.y_mean_) / self.y_std_).astype(np.float32))
        on = self.device_
        targets = targets.to(on)
        self.net_ = _FusionNet(X, out_dim, s.hidden_size, s.dropout).to(on)
        self.backbone_ = self.net_.backbone_name
        start_head(self.net_.head, self.spec, y)
        optimizer = self._optimizer()
        loss_fn = torch.nn.CrossEntropyLoss() if self.spec.is_classification else torch.nn.MSELoss()
        inputs = self._tensors(X)
        validate = X_val is not None and y_val is not None and len(y_val) > 0
        val_inputs = self._tensors(X_val) if validate else None
        generator = torch.Generator().manual_seed(self.options.seed)
        n, batch = len(y), max(1, int(s.batch_size * self.batch_factor_))
        best_loss, best_state, since_best = math.inf, None, 0
        trained_steps = 0
        for epoch in range(s.max_epochs):
            self.net_.train()
            out_of_time = False
            order = torch.randperm(n, generator=generator)
            for start in range(0, n, batch):
                if deadline is not None and time.monotonic() > deadline:
                    out_of_time = True
                    break
                rows = order[start:start + batch]
                optimizer.zero_grad()
                with device.autocast(on):
                    output = self.net_(*_take(inputs, rows, on)).float()
                loss = loss_fn(output if self.spec.is_classification else output[:, 0], targets[rows.to(on)])
                loss.backward()
                torch.nn.utils.clip_grad_norm_(self.net_.parameters(), 5.0)
                optimizer.step()
                trained_steps += 1
            if trained_steps == 0:
                self.fallback_ = ConstantModel(self.spec).fit(X, y)
                return
            self.epochs_run_ = epoch + 1
            if validate:
                val_loss = self._loss(val_inputs, np.asarray(y_val))
                self.history_.append(val_loss)
                if val_loss < best_loss:
                    best_loss, since_best, self.best_epoch_ = val_loss, 0, epoch
                    best_state = copy.deepcopy(self.net_.state_dict())
                else:
                    since_best += 1
            if out_of_time or (validate and since_best >= s.patience):
                break
        if best_state is not None:
            self.net_.load_state_dict(best_state)
        self.net_.eval()


    def _optimizer(self) -> Any:
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

    def _outputs(self, inputs: tuple) -> np.ndarray:
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

    def _loss(self, inputs: tuple, y: np.ndarray) -> float:
        """The validation loss in the training objective's own units."""
        from scipy.special import log_softmax

        outputs = self._outputs(inputs)
        if self.spec.is_classification:
            return float(-log_softmax(outputs, axis=1)[np.arange(len(y)), y.astype(int)].mean())
        return float(np.mean((outputs[:, 0] - (y - self.y_mean_) / self.y_std_) ** 2))

    # -- prediction --

    def predict_proba(self, X: ModalityBlocks) -> np.ndarray:
        from scipy.special import softmax

        if self.fallback_ is not None:
            return self.fallback_.predict_proba(X)
        return softmax(self._outputs(self._tensors(X)), axis=1)

    def _values(self, X: ModalityBlocks) -> np.ndarray:
        if self.fallback_ is not None:
            return self.fallback_._values(X)
        return self._outputs(self._tensors(X))[:, 0] * self.y_std_ + self.y_mean_


def _take(inputs: tuple, rows: Any, on: torch.device) -> tuple:
    """The rows of each block, on the device (inputs stay in host memory: an image block of a
    large set need not fit the GPU)."""
    return tuple(None if block is None else block[rows].to(on, non_blocking=True) for block in inputs)

