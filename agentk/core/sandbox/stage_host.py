"""A warm stage host: one sandboxed Python that runs a setup's code stages (or a run's probe, light
solve and solve) one after another.

Each setup stage used to be a fresh sandbox and a fresh `python -u code_<stage>.py`, and most of
its second went to importing pandas, numpy, pyarrow and our contracts. All stages of a setup share
their mounts, working folder and limits, so one sandbox (started exactly as run_python starts its
children: bubblewrap, scrubbed environment, cgroup, trampoline rlimits) imports them once and forks
a child per stage (stage_serve.py). What a stage gets is what run_python gives: its rlimits, its own
session, a timeout that escalates SIGINT -> SIGTERM -> SIGKILL, the disk quota, the same captured
output and log files; nothing it started survives it (the host kills the rest of its PID namespace).

The host is an optimisation, never a new way to fail: if it dies or misbehaves (a stage killed it,
a preload crashed it), that stage runs again in a fresh run_python and the rest of the setup goes
on with run_python. Without isolation there is no host: run_python as before.

The run's solve host (agentk/solve_sandbox.py) is the same machinery started with the solver's
sandbox (its mounts, environment and limits): it runs the maps probe, the light solve and the
solver as modules (`-m pkg.mod`), streaming each stdout line to the caller as run_python does.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import select
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from agentk.core.sandbox.capture import Capture, pump_chunks, pump_lines
from agentk.core.sandbox.disk_quota import DiskWatch
from agentk.core.sandbox.isolation import Mounts, isolation_status
from agentk.core.sandbox.sandbox import (
    ExecutionResult, Limits, SandboxCommand, collected_result, default_max_processes, run_python, sandbox_command,
    write_logs,
)

logger = logging.getLogger(__name__)

# Set to anything: every stage runs in its own run_python, as before the host (a way to compare).
NO_HOST_ENV = "AGENTK_NO_STAGE_HOST"

# How long the host may take to answer after a stage's last signal before it counts as broken.
_ANSWER_S = 10.0


class _HostBroken(Exception):
    """The host died or stopped answering: the stage runs again in a fresh run_python."""


class StageHost:
    """Runs `python -u script` (or `-m module`) for each stage in `cwd` with `mounts`; `run`
    mirrors run_python's answer. Close it (or use it as a context manager) when the setup ends.

    `host_limits`: the host's own rlimits and cgroup, which no child's may exceed (a child can only
    lower them); by default the first stage's. `env_extra`: the environment every child gets, as
    run_python's `env_extra`."""

    def __init__(self, cwd: Path, mounts: Mounts, preload: Sequence[str] = (), *, host_limits: Limits | None = None,
                 env_extra: Mapping[str, str] | None = None) -> None:
        self.cwd = Path(cwd)
        self.mounts = mounts
        self.preload = tuple(preload)
        self.host_limits = host_limits
        self.env_extra = dict(env_extra or {})
        self._proc: subprocess.Popen[bytes] | None = None
        self._cmd: SandboxCommand | None = None
        self._sock: socket.socket | None = None
        self._send_lock = threading.Lock()
        # One failure is enough: the rest of the setup runs as it did before the host.
        self._given_up = bool(os.environ.get(NO_HOST_ENV)) or not isolation_status().available

    def __enter__(self) -> StageHost:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def active(self) -> bool:
        return self._proc is not None

    def run(self, args: Sequence[str], *, limits: Limits = Limits(), log_prefix: Path | None = None,
            on_stdout_line: Callable[[str], None] | None = None) -> ExecutionResult:
        """`python -u *args` in the host (args the script and its arguments, or `-m module ...`),
        else in a fresh run_python; `on_stdout_line` as run_python's."""
        args = list(args)
        if not self._given_up and (not args[0].startswith("-") or (args[0] == "-m" and len(args) > 1)):
            start = time.monotonic()
            try:
                self._start(limits)
                result = self._run(args, limits, start, on_stdout_line)
            except _HostBroken as exc:
                logger.info("stage host broke (%s); the stage runs in a fresh sandbox", exc)
                self._give_up()
                spent = time.monotonic() - start
                limits = dataclasses.replace(limits, timeout_s=max(1.0, limits.timeout_s - spent))
            except BaseException:
                self.close()
                raise
            else:
                if log_prefix is not None:
                    write_logs(result, log_prefix)
                return result
        return run_python(args, cwd=self.cwd, limits=limits, env_extra=self.env_extra, on_stdout_line=on_stdout_line,
                          log_prefix=log_prefix, mounts=self.mounts)

    def start(self) -> None:
        """Start the host now rather than at its first child, so that its imports overlap the
        caller's other work; one that cannot start leaves its children to run_python."""
        if self._given_up:
            return
        try:
            self._start(self.host_limits or Limits())
        except _HostBroken as exc:
            logger.info("stage host did not start (%s); its stages run in fresh sandboxes", exc)
            self._give_up()

    def close(self) -> None:
        """Stop the host and everything in its sandbox (killing bubblewrap ends the namespace)."""
        proc, cmd, sock = self._proc, self._cmd, self._sock
        self._proc = self._cmd = self._sock = None
        if sock is not None:
            sock.close()
        if proc is not None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except OSError:
                pass
            proc.wait()
        if cmd is not None and cmd.jail is not None:
            cmd.jail.close()

    # ---- the host's life --------------------------------------------------------------------

    def _start(self, limits: Limits) -> None:
        if self._proc is not None:
            return
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        # The host's own rlimits are the stages' (a child may only lower them), but no CPU cap:
        # the host lives through every stage.
        host_limits = dataclasses.replace(self.host_limits or limits, cpu_s=None)
        cmd = sandbox_command(["-m", "agentk.core.sandbox.stage_serve", str(theirs.fileno()), *self.preload],
                              cwd=self.cwd, limits=host_limits, env_extra=self.env_extra, mounts=self.mounts)
        try:
            proc = subprocess.Popen(cmd.argv, cwd=self.cwd, env=cmd.env, stdin=subprocess.DEVNULL,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                    start_new_session=True, pass_fds=(theirs.fileno(),))
        except OSError as exc:
            if cmd.jail is not None:
                cmd.jail.close()
            raise _HostBroken(f"it did not start: {exc}") from exc
        finally:
            theirs.close()
        self._proc, self._cmd, self._sock = proc, cmd, ours

    def _give_up(self) -> None:
        self._given_up = True
        self.close()

    # ---- one stage ----------------------------------------------------------------------------

    def _run(self, args: list[str], limits: Limits, start: float,
             on_stdout_line: Callable[[str], None] | None) -> ExecutionResult:
        assert self._cmd is not None
        out, err = Capture(limits.max_output_chars), Capture(limits.max_output_chars)
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        readers = [
            threading.Thread(target=pump_lines, args=(os.fdopen(out_r, "rb"), out, on_stdout_line), daemon=True),
            threading.Thread(target=pump_chunks, args=(os.fdopen(err_r, "rb"), err), daemon=True),
        ]
        program = {"module": args[1], "args": args[2:]} if args[0] == "-m" else {"script": args[0], "args": args[1:]}
        request = {"op": "run", **program, "cwd": str(self.cwd.resolve()), "rlimits": _rlimits(limits)}
        try:
            self._send(request, fds=[out_w, err_w])
        finally:
            os.close(out_w)
            os.close(err_w)
        for reader in readers:
            reader.start()
        quota = DiskWatch(self._cmd.watched, limits.max_written_mb) if limits.max_written_mb is not None else None
        if quota is not None:
            quota.start(lambda: self._signal(signal.SIGKILL))
        timed_out = False
        try:
            status = self._answer(start + limits.timeout_s)
            if status is None:
                timed_out = True
                status = self._stop(limits.grace_s)
        except _HostBroken:
            if quota is not None and quota.exceeded:
                status = -signal.SIGKILL  # the quota's kill took the host: the stage failed, not the host
                self._give_up()
            else:
                raise
        finally:
            if quota is not None:
                quota.stop()
        return collected_result(status, out, err, readers, start, limits, timed_out, quota)

    def _stop(self, grace_s: float) -> int:
        """A timeout: SIGINT (a traceback shows where it was), SIGTERM, SIGKILL, each given `grace_s`."""
        for sig in (signal.SIGINT, signal.SIGTERM):
            self._signal(sig)
            status = self._answer(time.monotonic() + grace_s)
            if status is not None:
                return status
        self._signal(signal.SIGKILL)
        status = self._answer(time.monotonic() + _ANSWER_S)
        if status is None:
            raise _HostBroken("it did not end a timed-out stage")
        return status

    def _answer(self, deadline: float) -> int | None:
        """The host's exit status for the stage, or None at `deadline`."""
        sock = self._sock
        if sock is None:
            raise _HostBroken("it is closed")
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            readable, _, _ = select.select([sock], [], [], left)
            if not readable:
                continue
            try:
                data = sock.recv(1 << 16)
            except OSError as exc:
                raise _HostBroken(f"its socket failed: {exc}") from exc
            if not data:
                raise _HostBroken("it died")
            try:
                message = json.loads(data)
                if message.get("op") == "exit":
                    return int(message["status"])
            except (ValueError, TypeError, KeyError) as exc:
                raise _HostBroken(f"it answered nonsense: {data[:80]!r}") from exc

    def _signal(self, sig: signal.Signals) -> None:
        try:
            self._send({"op": "signal", "sig": int(sig)})
        except _HostBroken:
            pass  # a dead host has no stage left to signal; the answer says so

    def _send(self, message: dict, fds: Sequence[int] = ()) -> None:
        with self._send_lock:
            sock = self._sock
            if sock is None:
                raise _HostBroken("it is closed")
            try:
                socket.send_fds(sock, [json.dumps(message).encode()], list(fds))
            except OSError as exc:
                raise _HostBroken(f"it does not listen: {exc}") from exc


def _rlimits(limits: Limits) -> list[int | None]:
    """The trampoline's limits for one stage (sandbox.py's _limit_args, isolated)."""
    def value(x: float | None) -> int | None:
        return None if x is None else int(x)

    return [value(limits.memory_mb), value(limits.cpu_s), limits.max_processes or default_max_processes(),
            value(limits.max_file_mb)]
