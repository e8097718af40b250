"""What the solver's torch models share: torch's threads scoped to a block, a head started at the
class prior, and for the fine-tuned pretrained networks the whole fit protocol around training
(constant fallback, a private seeded RNG stream)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np
import torch
from torch import nn

from solve_pipeline import device
from solve_pipeline.baseline_models import ConstantModel, ModelOptions, _ClassifierBase
from solve_pipeline.setup_modules import TargetSpec

T = TypeVar("T")


class torch_threads:  # noqa: N801 - used like a function: `with torch_threads(2):`
    """torch's intra-op threads set for a block and restored after (the solver keeps pools at 1)."""

    def __init__(self, n: int) -> None:
        self.n = max(1, n)

    def __enter__(self) -> None:
        self.previous = torch.get_num_threads()
        torch.set_num_threads(self.n)

    def __exit__(self, *_: object) -> None:
        torch.set_num_threads(self.previous)


def start_head(head: nn.Linear, spec: TargetSpec, y: np.ndarray) -> None:
    """Start from the class prior (or the mean) so early steps refine rather than recover."""
    with torch.no_grad():
        bias = head.bias
        if spec.is_classification:
            counts = np.bincount(y.astype(int), minlength=spec.n_classes) + 0.5
            bias.copy_(torch.as_tensor(np.log(counts / counts.sum()), dtype=bias.dtype))
        else:
            bias.zero_()


def fit_on_device(model: Any, part: str, train: Callable[[], None]) -> None:
    """`train()` on the solve's device with device.py's out-of-memory fallback: each attempt sets
    `model.device_` and `model.batch_factor_`, starts the fit's record afresh, and runs in the
    model's thread scope on a private RNG stream (same seed, same weights and dropout masks,
    without disturbing the caller's torch state)."""

    def attempt(on: torch.device, batch_factor: float) -> None:
        model.device_, model.batch_factor_ = on, batch_factor
        with torch_threads(model.options.threads), torch.random.fork_rng(devices=[]):
            torch.manual_seed(model.options.seed)
            model.history_, model.best_epoch_, model.epochs_run_ = [], None, 0
            train()

    device.with_fallback(part, attempt)


class FineTunedModel(_ClassifierBase):
    """A pretrained network fine-tuned under the solver's model protocol; subclasses name their
    `Settings` (with `from_params(params, light)`) and write `_train`."""

    Settings: Any
    PART: str = "fine-tuning"  # its name in the device record

    def __init__(self, spec: TargetSpec, options: ModelOptions | None = None,
                 params: dict[str, Any] | None = None) -> None:
        self.spec = spec
        self.options = options or ModelOptions()
        self.settings = self.Settings.from_params(params, self.options.light)

    def fit(self, X: Any, y: np.ndarray, *, X_val: Any = None, y_val: np.ndarray | None = None) -> Any:
        self.fallback_: ConstantModel | None = None
        self.history_: list[float] = []  # validation loss per evaluation
        self.best_epoch_: int | None = None
        self.epochs_run_ = 0.0  # fractional when the deadline cut an epoch short
        self.device_ = torch.device("cpu")
        y = np.asarray(y)
        deadline = self.options.deadline
        if len(y) == 0 or (self.spec.is_classification and len(np.unique(y)) < 2) or \
                (deadline is not None and time.monotonic() > deadline):
            self.fallback_ = ConstantModel(self.spec).fit(X, y)  # nothing to learn or no time
            return self

        fit_on_device(self, self.PART, lambda: self._train(X, y, X_val, y_val))
        return self

    def _train(self, X: Any, y: np.ndarray, X_val: Any, y_val: np.ndarray | None) -> None:
        """Fit on `self.device_` with batches `self.batch_factor_` times the settings' size."""
        raise NotImplementedError

    def _on_device(self, predict: Callable[[], T]) -> T:
        """A prediction on the device the net trained on; out of GPU memory, on the CPU instead."""
        try:
            return predict()
        except (torch.cuda.OutOfMemoryError, RuntimeError) as error:
            if self.device_.type != "cuda" or not device.is_out_of_memory(error):
                raise
            torch.cuda.empty_cache()
            self.device_ = torch.device("cpu")
            self.net_.to(self.device_)
            device.record(self.PART, self.device_)
            return predict()
