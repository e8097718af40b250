"""What the solver's torch code shares: torch's threads scoped to a block, a head started at the
class prior, and a fit run on the solve's device with its out-of-memory fallback on a private
seeded RNG stream (the training loop itself is torch_loop's)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from torch import nn

from solve_pipeline.networks import device
from solve_pipeline.base.setup_modules import TargetSpec


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
