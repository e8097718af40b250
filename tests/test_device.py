"""The device choice: how auto/cpu/cuda resolve, what the record says, the out-of-memory fallback
(halve the batch, then the CPU), and the GPU device files the sandbox may expose."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

from agentk.cli import app
from agentk.core.records.config import Device, RunConfig
from agentk.core.sandbox.isolation import Mounts, bwrap_argv, gpu_device_files
from solve_pipeline.networks import device

needs_no_gpu = pytest.mark.skipif(torch.cuda.is_available(), reason="checks the machine without a GPU")


@pytest.fixture(autouse=True)
def _fresh_choice():
    yield
    device.configure(Device.AUTO)


def test_cpu_is_the_cpu_and_says_so() -> None:
    device.configure("cpu")
    assert device.current() == torch.device("cpu") and not device.is_cuda()
    assert device.batch_scale(device.current()) == 1
    assert device.summary() == {"choice": "cpu", "used": "cpu", "parts": {}, "notes": []}


@needs_no_gpu
def test_auto_without_a_gpu_is_the_cpu_without_a_word() -> None:
    heard: list[str] = []
    device.configure("auto", say=heard.append)
    assert device.current().type == "cpu"
    assert heard == [] and device.summary()["notes"] == []


@needs_no_gpu
def test_asking_for_cuda_without_one_runs_on_the_cpu_and_says_it_once() -> None:
    heard: list[str] = []
    device.configure("cuda", say=heard.append)
    assert device.current().type == "cpu" and device.current().type == "cpu"
    assert len(heard) == 1 and "no CUDA device" in heard[0]
    record = device.summary()
    assert record["choice"] == "cuda" and record["used"] == "cpu" and record["notes"] == heard


def _oom() -> torch.cuda.OutOfMemoryError:
    return torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")


def test_out_of_gpu_memory_halves_the_batch_until_it_fits() -> None:
    heard: list[str] = []
    device.configure("auto", say=heard.append)
    tries: list[tuple[str, float]] = []

    def attempt(on: torch.device, factor: float) -> str:
        tries.append((on.type, factor))
        if factor > 0.3:
            raise _oom()
        return "fitted"

    assert device.with_fallback("text fine-tuning", attempt, start=torch.device("cuda")) == "fitted"
    assert tries == [("cuda", 1.0), ("cuda", 0.5), ("cuda", 0.25)]
    assert len(heard) == 2 and all("text fine-tuning ran out of GPU memory" in line for line in heard)
    assert device.summary()["parts"] == {"text fine-tuning": "cuda"}


def test_out_of_gpu_memory_at_the_smallest_batch_moves_to_the_cpu() -> None:
    device.configure("auto")
    tries: list[tuple[str, float]] = []

    def attempt(on: torch.device, factor: float) -> float:
        tries.append((on.type, factor))
        if on.type == "cuda":
            raise RuntimeError("CUDA out of memory. Tried to allocate 20.00 MiB")  # older torch's form
        return factor

    assert device.with_fallback("image maps", attempt, start=torch.device("cuda")) == 1.0
    assert tries == [("cuda", 1.0), ("cuda", 0.5), ("cuda", 0.25), ("cpu", 1.0)]
    record = device.summary()
    assert record["parts"] == {"image maps": "cpu"}
    assert "on the CPU instead" in record["notes"][-1]


def test_other_errors_are_not_swallowed() -> None:
    def cpu_oom(on: torch.device, factor: float) -> None:
        raise _oom()  # the CPU has no smaller step to take

    def broken(on: torch.device, factor: float) -> None:
        raise RuntimeError("mat1 and mat2 shapes cannot be multiplied")

    with pytest.raises(torch.cuda.OutOfMemoryError):
        device.with_fallback("fusion net", cpu_oom, start=torch.device("cpu"))
    with pytest.raises(RuntimeError, match="shapes"):
        device.with_fallback("fusion net", broken, start=torch.device("cuda"))


def test_the_sandbox_lists_only_gpu_device_files(tmp_path: Path) -> None:
    for name in ("nvidia0", "nvidia1", "nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "null", "nvme0n1", "kvm"):
        (tmp_path / name).touch()
    (tmp_path / "nvidia-caps").mkdir()
    (tmp_path / "nvidia-caps" / "nvidia-cap1").touch()
    found = {p.relative_to(tmp_path).as_posix() for p in gpu_device_files(tmp_path)}
    assert found == {"nvidia0", "nvidia1", "nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia-caps/nvidia-cap1"}
    assert gpu_device_files(tmp_path / "absent") == ()

    argv = bwrap_argv(["true"], cwd=tmp_path, mounts=Mounts.of(devices=[tmp_path / "nvidia0"]))
    at = argv.index("--dev-bind")
    assert argv[at:at + 3] == ["--dev-bind", str(tmp_path / "nvidia0"), str(tmp_path / "nvidia0")]
    assert argv.index("--dev") < at  # after the fresh /dev, or it would hide them
    assert "--dev-bind" not in bwrap_argv(["true"], cwd=tmp_path, mounts=Mounts())


def test_the_choice_reaches_the_config_and_a_wrong_one_is_one_line(tmp_path: Path) -> None:
    assert RunConfig(device="cuda").solve.device == Device.CUDA
    assert RunConfig().solve.device == Device.AUTO
    wrong = CliRunner().invoke(app, ["run", "titanic", "--device", "tpu", "-w", str(tmp_path)])
    assert wrong.exit_code != 0
    assert "--device must be auto, cpu or cuda, not 'tpu'" in wrong.output
    assert "Traceback" not in wrong.output
