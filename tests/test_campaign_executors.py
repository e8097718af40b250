"""Where a campaign's tasks run: real `agentk run` subprocesses under the local pool and on a local
Ray node, their thread share, their error lines, and that they die with whoever started them."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from agentk.campaign.executors import (
    LocalExecutor,
    RayExecutor,
    TaskJob,
    available_cores,
    run_task,
)
from agentk.core.records.config import RunConfig, WarmStart
from agentk.core.errors import AgentKError
from agentk.core.records.workspace_lock import LOCK_NAME, workspace_lock
from agentk.sources import load_competition
from agentk.sources.demo import make_demo_competition

# The demo's linear model finishes within a few seconds; no tuning keeps a run near 25 s.
FAST = ["--time-budget", "3", "--folds", "2", "--no-tune"]


def demo_job(tmp: Path, key: str, *, source: Path | None = None, run_args: list[str] = FAST, **changes) -> TaskJob:
    """A job on the demo competition, in its own workspace root (two demo runs in one root would
    share a workspace and its lock)."""
    source = source or make_demo_competition(tmp / "demo")
    root = tmp / key / "ws"
    competition_id = load_competition(source).id if source.exists() else source.name
    values = dict(key=key, source=str(source), workspace_root=root, workspace=root / competition_id,
                  run_args=run_args, cpus=1, memory_gb=None, log_path=tmp / "logs" / f"{key}.log")
    return TaskJob(**{**values, **changes})


def run_processes(ancestor: int) -> list[psutil.Process]:
    """The `agentk run` processes below a pid (after the launcher has exec'd)."""
    found = []
    try:
        children = psutil.Process(ancestor).children(recursive=True)
    except psutil.NoSuchProcess:
        return []
    for proc in children:
        try:
            if proc.cmdline()[1:4] == ["-m", "agentk.cli", "run"]:
                found.append(proc)
        except psutil.Error:
            pass
    return found


def wait_for(condition, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def gone(procs: list[psutil.Process], timeout: float) -> bool:
    _, alive = psutil.wait_procs(procs, timeout=timeout)
    return not alive


def test_a_failing_source_is_an_outcome_with_its_error_line(tmp_path: Path) -> None:
    job = demo_job(tmp_path, "missing", source=tmp_path / "no-such-competition")
    outcome = run_task(job)
    assert outcome.key == "missing" and outcome.returncode == 2 and outcome.result is None
    assert outcome.error == f"competition folder not found: {tmp_path / 'no-such-competition'}"
    assert "agentk.cli run" in job.log_path.read_text()  # the log holds the command and its output


def test_a_bad_config_json_is_refused_in_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "config.json"
    bad.write_text(json.dumps({"solve": {"folds": 1}}))
    outcome = run_task(demo_job(tmp_path, "bad", config_json=str(bad)))
    assert outcome.returncode == 2
    assert outcome.error == f"--config-json {bad} is not a run config: Input should be greater than or equal to 2"


def test_local_pool_shares_the_cores_and_refuses_nonsense() -> None:
    cores = available_cores()
    assert LocalExecutor(1).cpus_per_task == cores
    assert LocalExecutor(2).cpus_per_task == max(1, cores // 2)
    assert LocalExecutor(cores * 4).cpus_per_task == 1
    with pytest.raises(AgentKError):
        LocalExecutor(0)


def test_shutdown_kills_running_tasks_and_drops_queued_ones(tmp_path: Path) -> None:
    executor = LocalExecutor(1)
    executor.submit(demo_job(tmp_path, "first"))
    executor.submit(demo_job(tmp_path, "second"))
    assert executor.running() == {"first", "second"}
    runs = wait_for(lambda: run_processes(os.getpid()), 60, "the first run to start")
    assert len(runs) == 1  # one worker: the second waits
    executor.shutdown()
    assert gone(runs, 5)
    assert executor.running() == set() and executor.wait(0) == []
    assert not (tmp_path / "second" / "ws").exists()  # never started
    with pytest.raises(AgentKError):
        executor.submit(demo_job(tmp_path, "third"))


def test_wait_returns_nothing_when_idle_and_a_killed_run_says_so(tmp_path: Path) -> None:
    executor = LocalExecutor(1)
    assert executor.wait(None) == []
    executor.submit(demo_job(tmp_path, "victim"))
    [run] = wait_for(lambda: run_processes(os.getpid()), 60, "the run to start")
    started = time.monotonic()
    assert executor.wait(0.2) == []  # still running
    assert time.monotonic() - started < 5
    run.kill()  # killed from outside (OOM killer, a user): an outcome, not an exception
    [outcome] = executor.wait(30)
    assert outcome.key == "victim" and outcome.returncode == -signal.SIGKILL
    assert outcome.error == "the run was killed by SIGKILL" and outcome.result is None
    executor.shutdown()


DRIVER = """
import sys
from pathlib import Path
from agentk.campaign.executors import TaskJob, run_task
root = Path(sys.argv[2])
run_task(TaskJob(key="orphan", source=sys.argv[1], workspace_root=root, workspace=root / sys.argv[3],
                 run_args=["--time-budget", "60", "--no-tune"], cpus=1, memory_gb=None, log_path=root / "run.log"))
"""


def test_a_run_dies_with_its_killed_driver_and_frees_the_workspace(tmp_path: Path) -> None:
    source = make_demo_competition(tmp_path / "demo")
    competition_id = load_competition(source).id
    root = tmp_path / "ws"
    driver = subprocess.Popen([sys.executable, "-c", DRIVER, str(source), str(root), competition_id])
    runs: list[psutil.Process] = []
    try:
        runs += wait_for(lambda: run_processes(driver.pid), 60, "the run to start")
        [run] = runs
        lock = root / competition_id / LOCK_NAME

        def run_holds_lock() -> bool:
            try:
                return json.loads(lock.read_text()).get("pid") == run.pid
            except (OSError, ValueError):
                return False

        wait_for(run_holds_lock, 60, "the run to take its workspace lock")
        driver.send_signal(signal.SIGKILL)
        driver.wait(10)
        assert gone([run], 5), "the run outlived its driver"
        with workspace_lock(root / competition_id):  # nothing holds it any more
            pass
    finally:
        driver.kill()
        for proc in runs:  # a failed test must not leave an orphan behind either
            try:
                proc.kill()
            except psutil.NoSuchProcess:
                pass


def test_an_unreachable_ray_address_is_one_line_within_seconds() -> None:
    pytest.importorskip("ray")
    started = time.monotonic()
    with pytest.raises(AgentKError, match=r"^cannot reach the Ray cluster at 127\.0\.0\.1:1: "):
        RayExecutor("127.0.0.1:1", 1)
    assert time.monotonic() - started < 20
    with pytest.raises(AgentKError, match="--ray-address must be"):
        RayExecutor("nonsense", 1)


def test_without_ray_installed_the_error_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # what `import ray` meets where it is not installed
    with pytest.raises(AgentKError, match=r"pip install 'agentk\[ray\]'"):
        RayExecutor("auto", 1)


@pytest.mark.integration
def test_two_local_workers_run_two_demo_tasks_with_their_share_and_config(tmp_path: Path) -> None:
    config = tmp_path / "warm.json"
    warm = WarmStart(families=["linear"], sources=["an-earlier-task"])
    base = RunConfig(folds=2, time_budget_s=600).with_solve(warm_start=warm)
    config.write_text(base.model_dump_json())
    executor = LocalExecutor(2)
    try:
        # The base says 600 s; the flag must win, while the warm start comes from the base.
        executor.submit(demo_job(tmp_path, "warm", run_args=["--time-budget", "3", "--no-tune"], config_json=str(config)))
        executor.submit(demo_job(tmp_path, "cold"))
        runs = wait_for(lambda: len(found := run_processes(os.getpid())) == 2 and found, 60, "both runs to start")
        for run in runs:
            env = run.environ()
            assert {env[v] for v in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")} == {str(executor.cpus_per_task)}
        # Both ran side by side with their share; "cold" has shown all it has to show, and the
        # shutdown below kills it (a run's worth of CPU saved): only "warm" is waited for.
        outcomes = []
        while "warm" not in {o.key for o in outcomes}:
            outcomes += executor.wait(300)
    finally:
        executor.shutdown()
    by_key = {o.key: o for o in outcomes}
    outcome = by_key["warm"]
    assert outcome.returncode == 0 and outcome.error is None, outcome
    assert outcome.result is not None and outcome.result["valid_submission"] and outcome.result["phase"] == "done"
    assert outcome.elapsed_s > 0
    saved = RunConfig.model_validate_json((tmp_path / "warm" / "ws" / by_key["warm"].result["competition_id"] / "config.json").read_text())
    assert saved.solve.warm_start == warm and saved.solve.time_budget_s == 3 and saved.solve.folds == 2 and not saved.solve.tune


@pytest.mark.integration
def test_a_local_ray_node_returns_a_failure_and_cancels_a_run(tmp_path: Path) -> None:
    pytest.importorskip("ray")
    executor = RayExecutor("local", 2)
    try:
        assert executor.cpus_per_task == max(1, available_cores() // 2)
        # A demo run solved on Ray is test_campaign's Ray test (the campaign's tasks run through
        # this executor); here a failure comes back as an outcome, and a cancel kills its run.
        executor.submit(demo_job(tmp_path, "missing", source=tmp_path / "no-such-competition", cpus=1))
        assert executor.running() == {"missing"}
        outcomes = []
        while executor.running():
            outcomes += executor.wait(300)
        # Shutdown cancels a running task: Ray kills its worker, and the run dies with it.
        executor.submit(demo_job(tmp_path, "cut", cpus=1, memory_gb=0.5))
        runs = wait_for(lambda: run_processes(os.getpid()), 60, "the run on the Ray worker to start")
    finally:
        executor.shutdown()
    assert gone(runs, 15), "a cancelled Ray task left its run behind"
    [missing] = outcomes
    assert missing.key == "missing" and missing.returncode == 2 and missing.error.startswith("competition folder not found")
