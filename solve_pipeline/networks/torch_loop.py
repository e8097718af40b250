"""The one training loop of the solver's torch models (the late-fusion net, image and text
fine-tuning): settings read from (tuned) parameters, the target standardised for regression, the
task's loss, epochs with validation-based early stopping and the best epoch's weights restored, and
predict / predict_proba. Each model keeps only its network, its batches and its schedule.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

import numpy as np
import torch
from torch import nn

from solve_pipeline.networks import device
from solve_pipeline.base.baseline_models import ConstantModel, ModelOptions, ClassifierBase
from solve_pipeline.base.setup_modules import TargetSpec
from solve_pipeline.networks.torch_training import fit_on_device

T = TypeVar("T")
S = TypeVar("S", bound="TrainSettings")

Rows = Any  # a batch's row indices: a numpy array, or a torch tensor


@dataclass
class TrainSettings:
    """A torch model's settings, each field read from the params by its type. Integers are at
    least 1 unless the field's metadata gives another "min"; HEBO hands integers over as
    category strings, hence int(float(value))."""

    max_epochs: int = 1

    KIND: ClassVar[str] = "fine-tuning"  # how an unknown parameter's error names the model
    LIGHT_EPOCHS: ClassVar[int] = 1  # the epochs a light (smoke) run allows

    @classmethod
    def from_params(cls: type[S], params: dict[str, Any] | None, light: bool) -> S:
        params = dict(params or {})
        settings = cls()
        for field in dataclasses.fields(cls):
            if field.name in params:
                setattr(settings, field.name, _parsed(field, params.pop(field.name)))
        settings.check()
        if params:  # a misspelt name would otherwise be tuned without any effect
            raise ValueError(f"unknown {cls.KIND} parameters: {sorted(params)}")
        if light:
            settings.max_epochs = min(settings.max_epochs, cls.LIGHT_EPOCHS)
        return settings

    def check(self) -> None:
        """Raise ValueError on a value outside what the model understands."""


def _parsed(field: dataclasses.Field, value: Any) -> Any:
    kind = field.type if isinstance(field.type, str) else field.type.__name__
    if kind == "int":
        return max(field.metadata.get("min", 1), int(float(value)))
    if kind == "float":
        return float(value)
    if kind == "bool":
        return bool(value)
    return str(value)


class Pace:
    """Training seconds per unit of work (a row, a padded token) over the steps timed so far; the
    first `skip` steps are left out (one-off allocations made a first step several times slower)."""

    def __init__(self, skip: int = 0) -> None:
        self.skip = skip
        self.reset()

    def reset(self) -> None:
        self.units, self.seconds = 0, 0.0

    def add(self, units: int, seconds: float) -> None:
        if self.skip > 0:
            self.skip -= 1
            return
        self.units += units
        self.seconds += seconds


@dataclass
class Loop:
    """What a model hands the loop: its optimizer and targets, and per batch how to run the net."""

    optimizer: torch.optim.Optimizer
    targets: torch.Tensor  # on the training device, standardised for regression
    batches: Callable[[int], Sequence[Rows]]  # an epoch's batches, once the epoch's set-up is done
    forward: Callable[[Rows], torch.Tensor]  # a batch's network outputs
    stop_before: Callable[[Rows, int], bool]  # the deadline's rule: (next batch, steps so far)
    validation: Callable[[], np.ndarray] | None = None  # the validation rows' outputs
    y_val: np.ndarray | None = None
    patience: int | None = None  # evaluations without improvement before stopping; None: never
    clip: float = 5.0  # gradient norm
    after_step: Callable[[Rows, float], None] | None = None  # (batch, its seconds): pace, schedule


class TorchModel(ClassifierBase):
    """A torch network under the solver's model protocol. Subclasses name their `Settings` and
    write `_train` (build the net, then `self._run(Loop(...), X, y)`) and `_outputs` (the net's
    outputs on a matrix: logits, or probabilities where `PROBABILITIES`)."""

    Settings: type[TrainSettings]
    PART: str = "fine-tuning"  # its name in the device record
    PROBABILITIES: bool = False

    def __init__(self, spec: TargetSpec, options: ModelOptions | None = None,
                 params: dict[str, Any] | None = None) -> None:
        self.spec = spec
        self.options = options or ModelOptions()
        self.settings: Any = self.Settings.from_params(params, self.options.light)

    # -- fitting --

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

    def _targets(self, y: np.ndarray) -> tuple[int, torch.Tensor]:
        """(the head's width, the targets on the device): class indices, or for regression the
        target standardised (its mean and spread kept to undo it)."""
        if self.spec.is_classification:
            return self.spec.n_classes, torch.as_tensor(y.astype(np.int64)).to(self.device_)
        self.y_mean_ = float(np.mean(y))
        self.y_std_ = float(np.std(y)) or 1.0
        return 1, torch.as_tensor(((y - self.y_mean_) / self.y_std_).astype(np.float32)).to(self.device_)

    def _deadline_passed(self, rows: Rows, steps: int) -> bool:
        deadline = self.options.deadline
        return deadline is not None and time.monotonic() > deadline

    def _run(self, loop: Loop, X: Any, y: np.ndarray) -> None:
        """Epochs until `max_epochs`, the deadline or `patience` evaluations without a better
        validation loss; the best epoch's weights are kept. Without a single step, the constant
        model stands in."""
        net, on = self.net_, self.device_
        loss_fn = nn.CrossEntropyLoss() if self.spec.is_classification else nn.MSELoss()
        best_loss, best_state, since_best, steps = math.inf, None, 0, 0
        for epoch in range(self.settings.max_epochs):
            net.train()
            batches = loop.batches(epoch)
            out_of_time, epoch_steps = False, 0
            for done, rows in enumerate(batches):
                if loop.stop_before(rows, steps):
                    out_of_time = True
                    self.epochs_run_ = epoch + done / len(batches)
                    break
                started = time.monotonic()
                loop.optimizer.zero_grad()
                with device.autocast(on):
                    output = loop.forward(rows).float()
                loss = loss_fn(output if self.spec.is_classification else output[:, 0],
                               loop.targets[torch.as_tensor(rows, device=on)])
                loss.backward()
                torch.nn.utils.clip_grad_norm_(net.parameters(), loop.clip)
                loop.optimizer.step()
                if loop.after_step is not None:
                    loop.after_step(rows, time.monotonic() - started)
                steps += 1
                epoch_steps += 1
            if not out_of_time:
                self.epochs_run_ = float(epoch + 1)
            if loop.validation is not None and loop.y_val is not None and epoch_steps:
                val_loss = self._validation_loss(loop.validation(), loop.y_val)
                self.history_.append(val_loss)
                if val_loss < best_loss:
                    best_loss, since_best, self.best_epoch_ = val_loss, 0, epoch
                    best_state = {k: v.detach().clone() for k, v in net.state_dict().items()}
                else:
                    since_best += 1
            if out_of_time or (loop.patience is not None and since_best >= loop.patience):
                break
        if steps == 0:
            self.fallback_ = ConstantModel(self.spec).fit(X, y)  # not even one batch fitted
            del self.net_
            return
        if best_state is not None:
            net.load_state_dict(best_state)
        net.eval()

    def _validation_loss(self, outputs: np.ndarray, y: np.ndarray) -> float:
        """The validation loss in the training objective's own units."""
        from scipy.special import log_softmax

        if not self.spec.is_classification:
            return float(np.mean((outputs[:, 0] - (y - self.y_mean_) / self.y_std_) ** 2))
        if self.PROBABILITIES:
            picked = outputs[np.arange(len(y)), y.astype(int)]
            return float(-np.log(np.clip(picked, 1e-12, None)).mean())
        return float(-log_softmax(outputs, axis=1)[np.arange(len(y)), y.astype(int)].mean())

    # -- prediction --

    def _outputs(self, X: Any) -> np.ndarray:
        """The net's outputs on X, (n, classes or 1)."""
        raise NotImplementedError

    def predict_proba(self, X: Any) -> np.ndarray:
        from scipy.special import softmax

        if self.fallback_ is not None:
            return self.fallback_.predict_proba(X)
        outputs = self._outputs(X)
        return outputs if self.PROBABILITIES else softmax(outputs, axis=1)

    def _values(self, X: Any) -> np.ndarray:
        if self.fallback_ is not None:
            return self.fallback_._values(X)
        return self._outputs(X)[:, 0] * self.y_std_ + self.y_mean_

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
