"""Where the solver's torch work runs: one choice (auto, cpu or cuda) for every torch part, and
what each part actually ran on.

`configure` is called once per solve with the run's choice; the parts (image embedding and
fine-tuning, MiniLM embedding and fine-tuning, the fusion net, and the probes that price them)
ask `current()` for their device, so a probe always times the device its option will run on.
An out-of-memory error on the GPU is never a lost run: the part retries with half the batch,
then on the CPU, and says so in one line (`with_fallback`).

Torch is imported lazily: a tabular solve never loads it.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from agentk.core.records.config import Device

if TYPE_CHECKING:
    import torch

logger = logging.getLogger(__name__)

T = TypeVar("T")

# Batch shrinks tried on the GPU before a part moves to the CPU: 1/2, 1/4.
MAX_HALVINGS = 2
# Free GPU memory one unit of `batch_scale` stands for; a CPU batch is sized for a few GB of RAM.
GB_PER_SCALE = 4.0
MAX_SCALE = 8


@dataclass
class _State:
    choice: Device = Device.AUTO
    resolved: Literal["cpu", "cuda"] | None = None  # once asked
    name: str = "cpu"  # what ran it, in words
    parts: dict[str, str] = field(default_factory=dict)  # part -> device it ran on
    notes: list[str] = field(default_factory=list)  # fallbacks and unmet requests, one line each
    say: Callable[[str], None] | None = None


_STATE = _State()


def configure(choice: Device | str, say: Callable[[str], None] | None = None) -> None:
    """Set the solve's device choice; `say` receives the one-line notes (a fallback, a CUDA
    request without a GPU) as they happen."""
    global _STATE
    _STATE = _State(choice=Device(choice), say=say)


def _note(line: str) -> None:
    _STATE.notes.append(line)
    logger.warning(line)
    if _STATE.say is not None:
        _STATE.say(line)


def _resolve() -> str:
    if _STATE.resolved is not None:
        return _STATE.resolved
    resolved = "cpu"
    if _STATE.choice != Device.CPU:
        import torch

        if torch.cuda.is_available():
            resolved = "cuda"
            _STATE.name = f"cuda ({torch.cuda.get_device_name(0)})"
        elif _STATE.choice == Device.CUDA:
            _note("device: --device cuda, but torch sees no CUDA device here: everything runs on the CPU")
    _STATE.resolved = resolved
    return resolved


def current() -> torch.device:
    """The device torch parts run on now (the CPU after a fallback moved everything there)."""
    import torch

    return torch.device(_resolve())


def is_cuda() -> bool:
    return _resolve() == "cuda"


def record(part: str, device: torch.device | str) -> None:
    """Remember which device ran `part` (the last run of it wins)."""
    _STATE.parts[part] = str(getattr(device, "type", device))


def summary() -> dict[str, Any]:
    """What solve_result.json and the report say: the choice, the device, each part's device and
    every fallback."""
    used = _resolve() if _STATE.resolved is not None or _STATE.parts else "cpu"
    return {"choice": _STATE.choice.value, "used": _STATE.name if used == "cuda" else "cpu",
            "parts": dict(_STATE.parts), "notes": list(_STATE.notes)}


def synchronize() -> None:
    """Wait for queued GPU work, so a timer reads what the work cost (a no-op on the CPU)."""
    if _STATE.resolved == "cuda":
        import torch

        torch.cuda.synchronize()


def autocast(device: torch.device) -> contextlib.AbstractContextManager[Any]:
    """bfloat16 autocast on a GPU that has it: half the memory traffic, no loss scaling needed
    (float16 would need a gradient scaler, so older GPUs keep float32). The CPU keeps float32."""
    import torch

    if device.type == "cuda" and torch.cuda.is_bf16_supported():
        return torch.autocast("cuda", dtype=torch.bfloat16)
    return contextlib.nullcontext()


def batch_scale(device: torch.device) -> int:
    """How many times a CPU-sized batch fits on this device: 1 on the CPU, else from the free GPU
    memory (a power of two, at most MAX_SCALE)."""
    if device.type != "cuda":
        return 1
    import torch

    free, _total = torch.cuda.mem_get_info(device)
    scale = 1
    while scale * 2 <= min(MAX_SCALE, free / 2**30 / GB_PER_SCALE):
        scale *= 2
    return scale


def is_out_of_memory(error: BaseException) -> bool:
    import torch

    return isinstance(error, torch.cuda.OutOfMemoryError) or "CUDA out of memory" in str(error)


def with_fallback(part: str, attempt: Callable[[torch.device, float], T], start: torch.device | None = None) -> T:
    """`attempt(device, batch_factor)` on `start` (default: the current device); after a GPU
    out-of-memory error, again with half the batch (up to MAX_HALVINGS times), then once more on
    the CPU. Each step says one line; a CPU error is the caller's, as without a GPU."""
    import torch

    device, factor, halvings = start if start is not None else current(), 1.0, 0
    while True:
        try:
            result = attempt(device, factor)
            record(part, device)
            return result
        except (torch.cuda.OutOfMemoryError, RuntimeError) as error:
            if device.type != "cuda" or not is_out_of_memory(error):
                raise
            torch.cuda.empty_cache()
            if halvings < MAX_HALVINGS:
                halvings += 1
                factor /= 2
                _note(f"device: {part} ran out of GPU memory; again with 1/{2 ** halvings} of the batch")
            else:
                device, factor = torch.device("cpu"), 1.0
                _note(f"device: {part} ran out of GPU memory at 1/{2 ** halvings} of the batch; on the CPU instead")
