"""Where a campaign's tasks run: N local workers, or the tasks of an existing Ray cluster.

Both run each task the same way, `run_task`: a real `agentk run` subprocess with its share of the
cores, its output in a log file, killed if whoever started it dies (so that a campaign driver killed
with -9 leaves no orphan run holding a workspace lock), and its result.json read back. A run that
fails is an outcome with the run's one `error:` line, never an exception.

On Ray the subprocess runs on a worker node, so the workspace root, the task's log and any local
source folder must be on storage every node sees under the same path (NFS, a shared disk); agentk
must be installed on the workers as on the driver. result.json is read on the worker and returned,
so the driver needs no access to the workspaces to record outcomes.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_futures
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Protocol

import psutil

from agentk.core.errors import AgentKError
from agentk.core.records.workspace import Workspace, read_json_object

THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")
KILLED_ERROR = "killed: the campaign stopped it"
# A Ray cluster that accepts no TCP connection is reported after this long (ray.init itself retries
# an unreachable address for minutes).
RAY_CONNECT_TIMEOUT_S = 5.0
# ray.init on a reachable address that is not a healthy Ray head gives up after this long.
RAY_INIT_TIMEOUT_S = 60.0

# Runs in the child before `agentk run` replaces it: asks the kernel to SIGKILL the child when the
# thread that started it dies, then execs the run (the request survives exec). A launcher rather
# than Popen's preexec_fn, which may deadlock in a process with threads (the executors' workers).
_LAUNCHER = """
import ctypes, os, signal, sys
parent = int(sys.argv[1])
try:
    ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL))  # PR_SET_PDEATHSIG
except (OSError, AttributeError):
    pass  # not Linux: no parent-death signal; the executor's shutdown still kills the run
if os.getppid() != parent:
    os._exit(137)  # the parent died before the request was made
os.execv(sys.argv[2], sys.argv[2:])
"""


@dataclass(frozen=True)
class TaskJob:
    """One `agentk run` of a campaign's task."""

    key: str
    source: str  # what `agentk run` accepts: a folder, a Kaggle URL or slug
    workspace_root: Path  # the campaign's workspaces folder (`agentk run -w`)
    workspace: Path  # where this run's result.json will be: workspace_root / competition id
    run_args: list[str]  # further `agentk run` flags, e.g. ["--time-budget", "30", "--config-json", FILE]
    cpus: int  # the run's share of the cores (its BLAS/OpenMP threads; what Ray reserves)
    memory_gb: float | None  # what Ray reserves for it (None: nothing declared)
    log_path: Path  # the run's stdout and stderr
    config_json: str | None = None  # a RunConfig JSON file for `--config-json` (the campaign's warm start)
    timeout_s: float | None = None  # kill the run after this long (None: the run's own budgets bound it)


@dataclass
class TaskOutcome:
    key: str
    returncode: int
    result: dict[str, Any] | None  # the run's result.json, None when it wrote none (this time)
    error: str | None  # one line: the run's `error:` line, or why it did not finish
    elapsed_s: float


class Executor(Protocol):
    """What a campaign needs from the place its tasks run."""

    cpus_per_task: int

    def submit(self, job: TaskJob) -> None: ...

    def wait(self, timeout: float | None) -> list[TaskOutcome]: ...

    def running(self) -> set[str]: ...

    def shutdown(self) -> None: ...


# ---- one task ------------------------------------------------------------------------------------


def task_command(job: TaskJob) -> list[str]:
    """The `agentk run` command line of a job (without the launcher)."""
    command = [sys.executable, "-m", "agentk.cli", "run", job.source, "-w", str(job.workspace_root), "--quiet"]
    if job.config_json is not None:
        command += ["--config-json", job.config_json]
    return command + list(job.run_args)


def run_task(job: TaskJob) -> TaskOutcome:
    """Run one job to its end as a subprocess and read back what it left; a failed run is an outcome."""
    started_wall, started = time.time(), time.monotonic()
    return _finish(job, _spawn(job), started_wall, started)


def _spawn(job: TaskJob) -> subprocess.Popen[bytes]:
    job.log_path.parent.mkdir(parents=True, exist_ok=True)
    job.workspace_root.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    env.update({name: str(job.cpus) for name in THREAD_VARIABLES})
    env["PYTHONUNBUFFERED"] = "1"  # the log shows where a killed run was
    with open(job.log_path, "ab") as log:
        log.write(f"\n$ {' '.join(task_command(job))}\n".encode())
        log.flush()
        # Own session: a Ctrl-C at the driver's terminal reaches the driver only, which then stops
        # the runs itself; and a kill of the session takes the run's unsandboxed children too.
        return subprocess.Popen(
            [sys.executable, "-c", _LAUNCHER, str(os.getpid()), *task_command(job)],
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            cwd=job.workspace_root, env=env, start_new_session=True, close_fds=True,
        )


def _kill(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _finish(job: TaskJob, proc: subprocess.Popen[bytes], started_wall: float, started: float,
            stopped: Callable[[], bool] = lambda: False) -> TaskOutcome:
    """Wait for a spawned run (killing it at its timeout, or if this wait is interrupted) and read
    back its outcome; `stopped` says the executor killed it."""
    error = None
    try:
        returncode = proc.wait(timeout=job.timeout_s)
    except subprocess.TimeoutExpired:
        _kill(proc)
        returncode, error = proc.wait(), f"timed out after {job.timeout_s:g} s"
    finally:
        if proc.poll() is None:  # interrupted while waiting: the run must not outlive us
            _kill(proc)
            proc.wait()
    if stopped():
        error = KILLED_ERROR
    result = _fresh_result(job.workspace, started_wall)
    if returncode != 0 and error is None:
        error = _error_line(job.log_path) or _exit_note(returncode)
    return TaskOutcome(key=job.key, returncode=returncode, result=result, error=error,
                       elapsed_s=time.monotonic() - started)


def _fresh_result(workspace: Path, since: float) -> dict[str, Any] | None:
    """result.json when this run wrote it; a resumed task's older one does not speak for this run."""
    path = Workspace(workspace).result_path
    try:
        if path.stat().st_mtime < since - 1.0:  # a second of slack for coarse file-system clocks
            return None
    except OSError:
        return None
    return read_json_object(path) or None


def _error_line(log_path: Path) -> str | None:
    """The last `error: ...` line the run printed (the CLI's one line for a failure)."""
    try:
        lines = log_path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    for line in reversed(lines):
        if line.startswith("error:"):
            return line[len("error:"):].strip()
    return None


def _exit_note(returncode: int) -> str:
    if returncode < 0:
        try:
            return f"the run was killed by {signal.Signals(-returncode).name}"
        except ValueError:
            pass
    return f"the run exited with code {returncode}"


def _absolute(job: TaskJob) -> TaskJob:
    """The job with every path absolute, so that it means the same in any working folder (a Ray
    worker's is its own); a source that is no existing path (a Kaggle slug or URL) stays as it is."""
    source = Path(job.source).expanduser()
    config = job.config_json
    return replace(
        job, source=str(source.resolve()) if source.exists() else job.source,
        workspace_root=job.workspace_root.resolve(), workspace=job.workspace.resolve(), log_path=job.log_path.resolve(),
        config_json=str(Path(config).resolve()) if config is not None else None,
    )


# ---- N local workers ---------------------------------------------------------------------------


def available_cores() -> int:
    """The cores this process may use: its CPU affinity, capped by a cgroup v2 CPU quota."""
    try:
        cores = len(psutil.Process().cpu_affinity() or []) or psutil.cpu_count() or 1
    except (AttributeError, psutil.Error):  # cpu_affinity is not on every platform
        cores = psutil.cpu_count() or 1
    try:
        quota, period = Path("/sys/fs/cgroup/cpu.max").read_text().split()[:2]
        if quota != "max":
            cores = min(cores, max(1, int(quota) // int(period)))
    except (OSError, ValueError):
        pass
    return max(1, cores)


@dataclass
class LocalExecutor:
    """N tasks at once on this machine, each with an equal share of the cores."""

    workers: int
    cpus_per_task: int = field(init=False)

    def __post_init__(self) -> None:
        if self.workers < 1:
            raise AgentKError(f"--workers must be at least 1, not {self.workers}")
        self.cpus_per_task = max(1, available_cores() // self.workers)
        self._pool = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="agentk-task")
        self._futures: dict[Future[TaskOutcome], str] = {}
        self._procs: dict[str, subprocess.Popen[bytes]] = {}
        self._lock = threading.Lock()
        self._closed = False

    def submit(self, job: TaskJob) -> None:
        """Queue a job; it starts when a worker is free. Its cpus become this machine's share."""
        if self._closed:
            raise AgentKError("the executor was shut down")
        if job.key in self.running():
            raise AgentKError(f"task {job.key} is already running")
        job = replace(_absolute(job), cpus=self.cpus_per_task)
        self._futures[self._pool.submit(self._work, job)] = job.key

    def wait(self, timeout: float | None) -> list[TaskOutcome]:
        """The outcomes of the tasks that finished (at least one, unless timeout passes first or
        nothing is running); each is handed back once."""
        if not self._futures:
            return []
        done, _ = wait_futures(list(self._futures), timeout=timeout, return_when=FIRST_COMPLETED)
        outcomes = []
        for future in done:
            key = self._futures.pop(future)
            outcome = future.result() if not future.cancelled() else None
            outcomes.append(outcome or TaskOutcome(key, -int(signal.SIGKILL), None, KILLED_ERROR, 0.0))
        return outcomes

    def running(self) -> set[str]:
        """Keys submitted and not yet handed back by wait (queued, running or finished unseen)."""
        return set(self._futures.values())

    def shutdown(self) -> None:
        """Kill every running task and drop the queued ones."""
        with self._lock:
            self._closed = True
            procs = list(self._procs.values())
        for future in self._futures:
            future.cancel()
        for proc in procs:
            _kill(proc)
        self._pool.shutdown(wait=True)
        self._futures.clear()

    def _work(self, job: TaskJob) -> TaskOutcome:
        started_wall, started = time.time(), time.monotonic()
        with self._lock:  # shutdown either sees this run or stops it from starting
            if self._closed:
                return TaskOutcome(job.key, -int(signal.SIGKILL), None, KILLED_ERROR, 0.0)
            proc = self._procs[job.key] = _spawn(job)
        try:
            return _finish(job, proc, started_wall, started, stopped=lambda: self._closed)
        finally:
            with self._lock:
                self._procs.pop(job.key, None)


# ---- a Ray cluster ------------------------------------------------------------------------------


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise AgentKError("Ray is not installed: pip install 'agentk[ray]'") from None
    return ray


class RayExecutor:
    """Tasks as Ray tasks on an existing cluster (`address`: auto, HOST:PORT, ray://HOST:PORT), or
    on a Ray node started here for tests (`address="local"`). At most `workers` at once; each
    declares its job's cpus and memory, so Ray places it where they are free."""

    def __init__(self, address: str, workers: int) -> None:
        if workers < 1:
            raise AgentKError(f"--workers must be at least 1, not {workers}")
        self.address, self.workers = address, workers
        self._ray = ray = _ray()
        self._owns_ray = not ray.is_initialized()
        if self._owns_ray:
            _connect(ray, address)
        self.cpus_per_task = self._cpus_per_task()
        self._queue: list[TaskJob] = []
        self._refs: dict[Any, str] = {}
        self._remote = ray.remote(run_task)  # module level: workers import it by reference

    def _cpus_per_task(self) -> int:
        """An equal share of the cluster's CPUs, no more than its largest node has (a task asking
        for more would never be placed)."""
        total = int(self._ray.cluster_resources().get("CPU", 1))
        largest = max((int(node.get("Resources", {}).get("CPU", 0)) for node in self._ray.nodes() if node.get("Alive")), default=total)
        return max(1, min(total // self.workers, largest or total))

    def submit(self, job: TaskJob) -> None:
        if job.key in self.running():
            raise AgentKError(f"task {job.key} is already running")
        self._queue.append(_absolute(job))
        self._dispatch()

    def _dispatch(self) -> None:
        while self._queue and len(self._refs) < self.workers:
            job = self._queue.pop(0)
            options: dict[str, Any] = {"num_cpus": job.cpus, "max_retries": 0}
            if job.memory_gb is not None:
                options["memory"] = int(job.memory_gb * 2**30)
            self._refs[self._remote.options(**options).remote(job)] = job.key

    def wait(self, timeout: float | None) -> list[TaskOutcome]:
        if not self._refs:
            return []
        ready, _ = self._ray.wait(list(self._refs), num_returns=1, timeout=timeout)
        if ready:  # take every other finished one too
            ready, _ = self._ray.wait(list(self._refs), num_returns=len(self._refs), timeout=0)
        outcomes = []
        for ref in ready:
            key = self._refs.pop(ref)
            try:
                outcomes.append(self._ray.get(ref))
            except Exception as exc:  # noqa: BLE001 - a lost worker or node is the task's outcome
                outcomes.append(TaskOutcome(key, -1, None, f"Ray: {type(exc).__name__}: {_first_line(exc)}", 0.0))
        self._dispatch()
        return outcomes

    def running(self) -> set[str]:
        return set(self._refs.values()) | {job.key for job in self._queue}

    def shutdown(self) -> None:
        """Cancel every task (Ray kills their workers, and with them their runs) and leave the
        cluster; a Ray started here stops."""
        self._queue.clear()
        for ref in list(self._refs):
            try:
                self._ray.cancel(ref, force=True)
            except Exception:  # noqa: BLE001 - already finished or its node is gone
                pass
        self._refs.clear()
        if self._owns_ray:
            self._ray.shutdown()


def _connect(ray: Any, address: str) -> None:
    """ray.init, bounded: one line within seconds when the cluster cannot be reached."""
    quiet = {"log_to_driver": False, "include_dashboard": False, "configure_logging": False}
    if address == "local":
        ray.init(num_cpus=available_cores(), **quiet)
        return
    _check_reachable(address)
    failure: list[BaseException] = []
    # Ray Client (ray://) would forward these to the cluster's own ray.init: they are the driver's.
    options = {} if address.startswith("ray://") else quiet

    def init() -> None:
        try:
            ray.init(address=address, **options)
        except BaseException as exc:  # noqa: BLE001 - reported by the caller's thread
            failure.append(exc)

    thread = threading.Thread(target=init, daemon=True, name="agentk-ray-init")
    thread.start()
    thread.join(RAY_INIT_TIMEOUT_S)
    if thread.is_alive():
        raise AgentKError(f"the Ray cluster at {address} did not answer within {RAY_INIT_TIMEOUT_S:g} s")
    if failure:
        raise AgentKError(f"cannot join the Ray cluster at {address}: {_first_line(failure[0])}")


def _check_reachable(address: str) -> None:
    """A TCP connect to HOST:PORT (also behind ray://); `auto` is left to Ray, which finds the
    local cluster's address or says there is none at once."""
    if address == "auto":
        return
    hostport = address.split("://", 1)[-1].rstrip("/")
    host, _, port = hostport.rpartition(":")
    if not host or not port.isdigit():
        raise AgentKError(f"--ray-address must be auto, HOST:PORT or ray://HOST:PORT, not {address!r}")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=RAY_CONNECT_TIMEOUT_S):
            pass
    except OSError as exc:
        raise AgentKError(f"cannot reach the Ray cluster at {address}: {exc.strerror or exc}") from None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def make_executor(workers: int, ray_address: str | None) -> LocalExecutor | RayExecutor:
    """The executor a campaign's options ask for."""
    return RayExecutor(ray_address, workers) if ray_address else LocalExecutor(workers)
