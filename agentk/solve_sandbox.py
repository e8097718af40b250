"""The solver's sandbox, and the run's warm solve host started in it.

A tiny run used to start three sandboxed Pythons that each imported pandas, scipy, sklearn and our
solver before any work (the maps probe, the light solve, the solve): most of their seconds. The run
now owns one solve host (a StageHost, agentk/core/sandbox/stage_host.py) started with the solver's
settings, which imports them once and forks each of the three as a child with its own limits; if
the host breaks, each falls back to a fresh run_python as before. The runner opens it, hands it to
the setup's meta checks, runs the solver in it and closes it at the end of the run.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from agentk.core.local_image_models import solver_env, solver_mounts
from agentk.core.records.config import CONFIG_FILE, Device, RunConfig
from agentk.core.records.workspace import Workspace
from agentk.core.sandbox.disk_quota import quota_mb
from agentk.core.sandbox.isolation import Mounts, gpu_device_files
from agentk.core.sandbox.sandbox import Limits, data_room_mb
from agentk.core.sandbox.stage_host import StageHost

# What the solver and the probe import before any work (measured with -X importtime: sklearn,
# scipy.stats and pandas are most of it). solve_pipeline comes first, as in a fresh solver: its
# __init__ sets OMP_WAIT_POLICY, which each OpenMP runtime reads once when loaded (sklearn loads
# one). Neither imports torch at the top, so no CUDA context exists in the host when it forks, and
# no OpenMP pool (made at the first parallel region); OpenBLAS stops its threads around a fork.
# The children import torch and LightGBM themselves.
SOLVE_PRELOAD = ("solve_pipeline", "numpy", "pandas", "sklearn", "scipy.stats", "solve_pipeline.solver",
                 "unit_tests_setup.probe_batch")


def solver_mounts_for(workspace: Workspace, config: RunConfig) -> Mounts:
    """The solver's view: writable solve/ and submissions/, the run's config.json and the user's
    image models read-only, a GPU's device files unless the run asked for the CPU, and room for
    the LLM's feature code to nest its own sandbox."""
    gpus = _gpus(config)
    models = solver_mounts(config.solve.image_backbone)
    mounts = Mounts.workspace(workspace.root, write=["solve", "submissions"], read=[workspace.root / CONFIG_FILE, *models])
    return dataclasses.replace(mounts, nests=bool(config.solve.llm_solve), devices=gpus)


def solver_limits(workspace: Workspace, config: RunConfig) -> Limits:
    """The solver stops itself at its budget; the sandbox timeout is only a backstop. CUDA reserves
    far more address space than any RLIMIT_AS allows: with a GPU only the cgroup's memory limit
    holds."""
    return Limits(timeout_s=config.solve.time_budget_s * 1.5 + 120, max_written_mb=quota_mb(workspace.raw),
                  memory_mb=None if _gpus(config) else data_room_mb())


def open_solve_host(workspace: Workspace, config: RunConfig) -> StageHost:
    """The run's solve host (not started yet: it starts at its first child). Its own limits are the
    solver's, the largest any of its children gets (the probe's and light solve's are lower)."""
    host_limits = dataclasses.replace(solver_limits(workspace, config), timeout_s=Limits.timeout_s, max_written_mb=None)
    return StageHost(workspace.solve, solver_mounts_for(workspace, config), SOLVE_PRELOAD, host_limits=host_limits,
                     env_extra=solver_env())


def solver_command(workspace_root: Path) -> list[str]:
    # No flags: the solver takes config.solve from the workspace's config.json.
    return ["-m", "solve_pipeline.solver", str(workspace_root)]


def _gpus(config: RunConfig) -> tuple[Path, ...]:
    return gpu_device_files() if config.solve.device != Device.CPU else ()
