"""Run untrusted Python (generated code, and our own solver that imports it) in a contained subprocess.

Where bubblewrap works, the child runs in its own namespaces and sees only the runtime and the
folders the caller names (agentk/core/sandbox/isolation.py). Always: its own session (so the whole process
group can be signalled), resource limits (address space, CPU, processes, file size), an
allow-listed environment without credentials, HOME pointed at its working directory, a timeout
that escalates SIGINT -> SIGTERM -> SIGKILL, and head+tail truncated output capture.
"""

from __future__ import annotations

import dataclasses
import errno
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from agentk.core.sandbox.capture import Capture, pump_chunks, pump_lines
from agentk.core.sandbox.cgroups import CgroupJail, open_jail
from agentk.core.sandbox.disk_quota import DiskWatch
from agentk.core.sandbox.isolation import SANDBOXED_ENV, Mounts, bwrap_argv, isolation_status, python_path
from agentk.core.sandbox.processes import group_alive
from agentk.core.secrets import is_secret_name, redact

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Limits:
    timeout_s: float = 600.0
    # RLIMIT_AS caps *virtual* address space, which runs far above resident memory for numeric
    # stacks: every OpenMP/torch worker thread maps an 8 MB stack, and glibc reserves a 64 MB heap
    # per malloc arena (up to 8 x cores arenas). Measured with `import numpy, pandas, sklearn,
    # lightgbm, torch` plus a LightGBM fit, a torch train step and a RandomForest(n_jobs=-1):
    # 1.4 GB at 2 threads, 3.9 GB at 64 threads and 5.2 GB at 128 threads, while RSS stayed at
    # ~0.5 GB. The child also gets MALLOC_ARENA_MAX=4 (128 threads: 4.9 GB). 8 GB therefore leaves
    # real room for data on machines up to ~64 cores; raise it on bigger boxes. Use None with CUDA,
    # which reserves tens of GB of address space and does not start under any sane RLIMIT_AS.
    memory_mb: int | None = 8192
    cpu_s: int | None = None
    # Processes and threads together (RLIMIT_NPROC counts tasks); enforced inside the sandbox's own
    # user namespace, where it counts only the sandbox's tasks. None: sized from the cores.
    max_processes: int | None = None
    # The largest file the child may write (RLIMIT_FSIZE).
    max_file_mb: int | None = 16384
    # All the child's processes together (a cgroup, where one can be made). None: 85% of the RAM.
    total_memory_mb: int | None = None
    # What the child may add to its writable folders, all files together (disk_quota.py); None: no cap.
    max_written_mb: int | None = None
    max_output_chars: int = 200_000
    grace_s: float = 5.0


@dataclass(frozen=True)
class ExecutionResult:
    returncode: int | None
    stdout: str
    stderr: str
    elapsed_s: float
    timed_out: bool
    timeout_s: float | None = None  # the limit that was hit, so the summary names it, not elapsed
    written_over_mb: int | None = None  # the disk quota it passed, when it was stopped for that

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out and self.written_over_mb is None

    def error_summary(self, max_lines: int = 30) -> str:
        """What went wrong, short enough to feed back to a policy; empty when ok."""
        if self.ok:
            return ""
        head: list[str] = []
        if self.written_over_mb is not None:
            head.append(f"stopped: it wrote more than {self.written_over_mb} MB into its folders "
                        "(the sandbox's disk quota, from the data's size)")
        elif self.timed_out:
            head.append(f"timed out after {self.timeout_s or self.elapsed_s:g} s")
        elif self.returncode is not None and self.returncode < 0:
            # Most often the OOM killer (SIGKILL) or the CPU limit (SIGXCPU).
            head.append(f"killed by signal {_signal_name(-self.returncode)}")
        # After a timeout this is usually the KeyboardInterrupt traceback from SIGINT, which
        # shows where the code was stuck.
        body = _last_traceback(self.stderr) or self.stderr.rstrip()
        if not body and not head:
            head.append(f"exited with code {self.returncode} and no output on stderr")
        lines = [_clip(line) for line in body.splitlines()[-max_lines:]]
        return "\n".join(head + lines)


_ALLOWED_EXACT = (
    "PATH", "LANG", "TZ", "TMPDIR", "PYTHONHASHSEED", "VIRTUAL_ENV",
    "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
)
_ALLOWED_PREFIXES = ("LC_",)
_FIXED = {
    "PYTHONDONTWRITEBYTECODE": "1",
    "PYTHONNOUSERSITE": "1",
    "MPLBACKEND": "Agg",
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    # Bounds the per-thread 64 MB arena reservations that otherwise eat the RLIMIT_AS budget.
    "MALLOC_ARENA_MAX": "4",
    # The sandbox's user has no passwd entry (/etc/passwd is not shown): getpass.getuser() reads
    # these first. Without them torch's compile cache (imported by transformers on a GPU machine)
    # raised KeyError: 'getpwuid(): uid not found', and the second import failed for good.
    "USER": "sandbox",
    "LOGNAME": "sandbox",
}


def scrubbed_env(extra: Mapping[str, str] | None = None, *, home: Path | None = None) -> dict[str, str]:
    """An allow-listed environment for a child; HOME is `home` (default: the current directory)
    so credential files under the real home (~/.kaggle/kaggle.json) are not found.

    Raises ValueError if `extra` names anything that looks like a credential."""
    extra = dict(extra or {})
    smuggled = sorted(k for k in extra if is_secret_name(k))
    if smuggled:
        raise ValueError(f"refusing to pass secret-looking variables to the sandbox: {', '.join(smuggled)}")
    env = {
        k: v for k, v in os.environ.items()
        if (k in _ALLOWED_EXACT or k.startswith(_ALLOWED_PREFIXES)) and not is_secret_name(k)
    }
    env.update(_FIXED)
    env["HOME"] = str(home if home is not None else Path.cwd())
    env.update(extra)
    return env


# Limits are applied by a tiny interpreter that sets them and execs the real command (same pid,
# so signals and returncode are unaffected). preexec_fn would do the same, but it runs Python
# between fork and exec and can deadlock when the parent has other threads holding locks, and
# a hang inside Popen() would not be covered by the timeout.
_TRAMPOLINE = """\
import os, resource, signal, sys
# A parent started in the background may hand down SIGINT ignored, and bubblewrap is started with
# SIGINT and SIGTERM ignored; the child gets them back, so the first step of a timeout shows
# where the code was stuck.
signal.signal(signal.SIGINT, signal.SIG_DFL)
signal.signal(signal.SIGTERM, signal.SIG_DFL)
def cap(which, soft, hard):
    _, old_hard = resource.getrlimit(which)
    if old_hard != resource.RLIM_INFINITY:
        soft, hard = min(soft, old_hard), min(hard, old_hard)
    resource.setrlimit(which, (soft, hard))
resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
as_mb, cpu_s, nproc, fsize_mb = sys.argv[1:5]
if as_mb != "-":
    cap(resource.RLIMIT_AS, int(as_mb) << 20, int(as_mb) << 20)
if cpu_s != "-":
    cap(resource.RLIMIT_CPU, int(cpu_s), int(cpu_s) + 5)
if nproc != "-":
    cap(resource.RLIMIT_NPROC, int(nproc), int(nproc))
if fsize_mb != "-":
    cap(resource.RLIMIT_FSIZE, int(fsize_mb) << 20, int(fsize_mb) << 20)
os.execv(sys.executable, [sys.executable] + sys.argv[5:])
"""


def run_python(
    args: Sequence[str],
    *,
    cwd: Path,
    limits: Limits = Limits(),
    env_extra: Mapping[str, str] | None = None,
    on_stdout_line: Callable[[str], None] | None = None,
    log_prefix: Path | None = None,
    mounts: Mounts | None = None,
) -> ExecutionResult:
    """Run `python -u *args` (this interpreter) in `cwd` under `limits`.

    Isolated, the child sees `mounts` (default: `cwd` writable, nothing else of the disk but the
    runtime); `cwd` is always writable. Without isolation (see `isolation_status`) it runs as a
    plain child with the same limits, and sees what this process sees.

    `on_stdout_line` is called from a reader thread with each stdout line (newline stripped; a
    line longer than 64 KiB arrives in pieces). If `log_prefix` is given, the captured (truncated)
    output is also written to `<log_prefix>.stdout.txt` and `<log_prefix>.stderr.txt`."""
    cmd = sandbox_command(args, cwd=cwd, limits=limits, env_extra=env_extra, mounts=mounts)
    try:
        result = _run(cmd.argv, Path(cwd), cmd.env, limits, on_stdout_line, log_prefix, time.monotonic(), cmd.watched)
    finally:
        if cmd.jail is not None:
            cmd.jail.close()
    if cmd.isolated and result.returncode is not None and 128 < result.returncode <= 128 + 64:
        # bubblewrap reports a child killed by signal N as exit code 128 + N.
        result = dataclasses.replace(result, returncode=128 - result.returncode)
    return result


@dataclass
class SandboxCommand:
    """How to start `python -u *args` in the sandbox: the command line, its environment, the cgroup
    it joins (the caller closes it when the child is gone) and the folders the disk quota watches."""

    argv: list[str]
    env: dict[str, str]
    jail: CgroupJail | None
    isolated: bool
    watched: list[Path]


def sandbox_command(
    args: Sequence[str], *, cwd: Path, limits: Limits, env_extra: Mapping[str, str] | None = None,
    mounts: Mounts | None = None,
) -> SandboxCommand:
    """The command run_python starts (also the stage host's, stage_host.py)."""
    cwd = Path(cwd)
    if not cwd.is_dir():
        raise ValueError(f"sandbox working directory does not exist: {cwd}")
    env = scrubbed_env(env_extra, home=cwd.resolve())
    # The same copy of our packages inside as here (an editable install or a worktree alike).
    env["PYTHONPATH"] = python_path()
    status = isolation_status()
    isolated = status.available
    if isolated:
        env[SANDBOXED_ENV] = "1"
    cmd = [sys.executable, "-I", "-S", "-c", _TRAMPOLINE, *_limit_args(limits, isolated), "-u", *args]
    if isolated:
        mounts = mounts or Mounts()
        cmd = bwrap_argv(cmd, cwd=cwd, mounts=dataclasses.replace(mounts, write=(*mounts.write, cwd)), proc=status.proc)
    jail = open_jail(limits.max_processes or default_max_processes(), limits.total_memory_mb or _default_total_mb())
    # bubblewrap must outlive a timeout's SIGINT and SIGTERM (its death kills the namespace before
    # Python has printed where it was stuck): it starts with both ignored, the trampoline restores
    # them. SIGKILL, the last step, ends bubblewrap and with it the namespace.
    script = "trap '' INT TERM" + (f" && {jail.join_script()}" if jail is not None else "")
    if isolated or jail is not None:
        cmd = ["/bin/sh", "-c", f'{script} && exec "$@"', "sh", *cmd]
    return SandboxCommand(cmd, env, jail, isolated, [cwd, *(mounts.write if mounts is not None else ())])


def _run(
    cmd: list[str], cwd: Path, env: dict[str, str], limits: Limits,
    on_stdout_line: Callable[[str], None] | None, log_prefix: Path | None, start: float,
    watched: list[Path],
) -> ExecutionResult:
    out = Capture(limits.max_output_chars)
    err = Capture(limits.max_output_chars)
    proc = subprocess.Popen(
        cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, start_new_session=True, close_fds=True,
    )
    assert proc.stdout is not None and proc.stderr is not None
    readers = [
        threading.Thread(target=pump_lines, args=(proc.stdout, out, on_stdout_line), daemon=True),
        threading.Thread(target=pump_chunks, args=(proc.stderr, err), daemon=True),
    ]
    timed_out = False
    quota = DiskWatch(watched, limits.max_written_mb) if limits.max_written_mb is not None else None
    if quota is not None:
        quota.start(lambda: _kill_group(proc.pid, signal.SIGKILL))
    try:
        for reader in readers:
            reader.start()
        try:
            proc.wait(timeout=limits.timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
            _stop_group(proc, limits.grace_s)
        # Leftovers (background processes the script started) would outlive the run and hold
        # our pipes open; nothing of a finished run may survive it.
        _kill_group(proc.pid, signal.SIGKILL)
        _wait_group_gone(proc, 5.0)
    except BaseException:
        _kill_group(proc.pid, signal.SIGKILL)
        proc.wait()
        raise
    finally:
        if quota is not None:
            quota.stop()
    result = collected_result(proc.returncode, out, err, readers, start, limits, timed_out, quota)
    if log_prefix is not None:
        write_logs(result, log_prefix)
    return result


def collected_result(returncode: int | None, out: Capture, err: Capture, readers: list[threading.Thread],
                     start: float, limits: Limits, timed_out: bool, quota: DiskWatch | None) -> ExecutionResult:
    """A finished child's answer, once its output readers are done (run_python and the stage host)."""
    elapsed = time.monotonic() - start
    for reader in readers:
        # Only a process that escaped the group (setsid) or a broken stage host can still hold the
        # pipe; give up on it rather than hang. The daemon thread stays blocked and costs nothing.
        reader.join(timeout=5.0)
    # Whatever the child printed may be a secret it found: nothing downstream (logs, state, the
    # next prompt, the error line) gets it.
    return ExecutionResult(
        returncode=returncode, stdout=redact(out.text()), stderr=redact(err.text()), elapsed_s=elapsed,
        timed_out=timed_out, timeout_s=limits.timeout_s if timed_out else None,
        written_over_mb=quota.cap_mb if quota is not None and quota.exceeded else None,
    )


def write_logs(result: ExecutionResult, log_prefix: Path) -> None:
    """The captured output as `<log_prefix>.stdout.txt` and `<log_prefix>.stderr.txt`."""
    log_prefix = Path(log_prefix)
    log_prefix.parent.mkdir(parents=True, exist_ok=True)
    Path(f"{log_prefix}.stdout.txt").write_text(result.stdout, encoding="utf-8")
    Path(f"{log_prefix}.stderr.txt").write_text(result.stderr, encoding="utf-8")


def data_room_mb() -> int:
    """An address-space cap for a child that holds the competition's data in memory (the solver):
    the default's room for thread stacks and malloc arenas plus 85% of the machine's memory, since
    a fixed 8 GB refused a 4M-row table's 860 MB feature block. What is resident stays bounded by
    the cgroup (85% of the memory) where one can be made."""
    total = _default_total_mb()
    return Limits.memory_mb + (total or 0)


def _default_total_mb() -> int | None:
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") * 0.85) >> 20
    except (ValueError, OSError):
        return None


def default_max_processes() -> int:
    """Room for the numeric stack's thread pools (a few per core) but not for a fork bomb."""
    return 128 + 16 * (os.cpu_count() or 1)


def _limit_args(limits: Limits, isolated: bool) -> list[str]:
    def arg(value: float | None) -> str:
        return "-" if value is None else str(int(value))

    # Outside a user namespace RLIMIT_NPROC counts every process of the user (and root is exempt),
    # so it is only a sandbox limit inside one.
    nproc = (limits.max_processes or default_max_processes()) if isolated else None
    return [arg(limits.memory_mb), arg(limits.cpu_s), arg(nproc), arg(limits.max_file_mb)]


def _stop_group(proc: subprocess.Popen[bytes], grace_s: float) -> None:
    """SIGINT (Python code gets a KeyboardInterrupt traceback showing where it was), then
    SIGTERM, then SIGKILL, each step given `grace_s` for the whole group to go away."""
    for sig in (signal.SIGINT, signal.SIGTERM):
        _kill_group(proc.pid, sig)
        if _wait_group_gone(proc, grace_s):
            return
    _kill_group(proc.pid, signal.SIGKILL)
    proc.wait()


def _wait_group_gone(proc: subprocess.Popen[bytes], timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while True:
        proc.poll()  # reap the leader; a zombie leader would keep the group "alive"
        if proc.returncode is not None and not _group_alive(proc.pid):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.02)


def _group_alive(pgid: int) -> bool:
    """Whether any non-zombie process is in the group. Zombies have closed their pipes and
    can take seconds to be reaped when they were orphaned (a slow init in containers)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return group_alive(pgid)


def _kill_group(pgid: int, sig: signal.Signals) -> None:
    try:
        os.killpg(pgid, sig)
    except OSError as exc:
        if exc.errno != errno.ESRCH:
            raise


def _last_traceback(stderr: str) -> str | None:
    idx = stderr.rfind("Traceback (most recent call last):")
    return stderr[idx:].rstrip() if idx >= 0 else None


def _clip(line: str, limit: int = 500) -> str:
    return line if len(line) <= limit else line[:limit] + f" ... [{len(line) - limit} more characters]"


def _signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return str(signum)
