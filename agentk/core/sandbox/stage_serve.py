"""The stage host's inside: a warm Python in the sandbox that runs scripts and modules one by one.

Started by stage_host.py as `python -u -m agentk.core.sandbox.stage_serve FD MODULE...` through the
same sandbox as run_python's children, it imports the modules generated code needs (pandas, numpy,
pyarrow, our contracts) once, then serves requests on the socket FD. For each it forks a child that
takes the per-run rlimits, its own session and the request's stdout/stderr pipes, and runs the
script as `python -u script` (or a module as `python -u -m module`) would; the host answers with its exit status once the child is gone
and every other process of the sandbox's PID namespace is killed (nothing a stage started outlives
it). Only the standard library is imported before the preloads, so a failed preload costs nothing.

Protocol (one JSON object per SOCK_SEQPACKET message): in, {"op": "run", "script" or "module", "args", "cwd",
"rlimits": [as_mb, cpu_s, nproc, fsize_mb]} with the stdout and stderr pipes' write ends attached,
and {"op": "signal", "sig": N} for the running child's group; out, {"op": "exit", "status": N}
(-N: killed by signal N). The socket's end (EOF) tells the host to stop.
"""

from __future__ import annotations

import importlib
import json
import os
import select
import signal
import socket
import sys
import time

_PR_SET_DUMPABLE = 4
# This file's frames, left out of a child's tracebacks.
_OURS = __file__


def main(argv: list[str]) -> None:
    sock = socket.socket(fileno=int(argv[0]))
    for name in argv[1:]:
        try:
            importlib.import_module(name)
        except (Exception, SystemExit) as exc:  # a missing optional module costs the stage its import, nothing more
            print(f"stage host: preloading {name} failed: {exc!r}", file=sys.stderr)
    # Stage code runs as our uid: not dumpable, it cannot ptrace us or read our memory.
    _set_dumpable(False)
    while True:
        try:
            data, fds, _flags, _addr = socket.recv_fds(sock, 1 << 16, 2)
        except OSError:
            return
        if not data:
            return  # agentk closed the socket: the setup is over
        request = json.loads(data)
        if request.get("op") != "run" or len(fds) != 2:
            for fd in fds:
                os.close(fd)
            continue
        pid = os.fork()
        if pid == 0:
            _child(sock, request, fds[0], fds[1])  # never returns
        for fd in fds:
            os.close(fd)
        status = _wait(sock, pid)
        _sweep()
        if status is None:
            return  # agentk is gone
        try:
            sock.send(json.dumps({"op": "exit", "status": status}).encode())
        except OSError:
            return


def _wait(sock: socket.socket, pid: int) -> int | None:
    """The child's exit status, relaying agentk's signals to its group meanwhile; None when the
    socket closed first (the child's group is killed then)."""
    try:
        pidfd: int | None = os.pidfd_open(pid)
    except (AttributeError, OSError):
        pidfd = None  # an old kernel: poll instead
    try:
        while True:
            watched = [sock] + ([pidfd] if pidfd is not None else [])
            readable, _, _ = select.select(watched, [], [], None if pidfd is not None else 0.05)
            if sock in readable:
                data = sock.recv(1 << 16)
                if not data:
                    _signal_group(pid, signal.SIGKILL)
                    os.waitpid(pid, 0)
                    return None
                message = json.loads(data)
                if message.get("op") == "signal":
                    _signal_group(pid, signal.Signals(int(message["sig"])))
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                return os.waitstatus_to_exitcode(status)
    finally:
        if pidfd is not None:
            os.close(pidfd)


def _signal_group(pid: int, sig: signal.Signals) -> None:
    try:
        os.killpg(pid, sig)
    except OSError:
        pass  # gone already


def _sweep(timeout_s: float = 5.0) -> None:
    """Kill every process of the namespace but us and its init (bubblewrap), and wait until none is
    left: kill(-1) fails with ESRCH once there is nobody to signal. Orphans are reaped by the init."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            os.kill(-1, signal.SIGKILL)
        except ProcessLookupError:
            return
        except OSError:
            return
        try:
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
        except ChildProcessError:
            pass
        time.sleep(0.005)


def _child(sock: socket.socket, request: dict, out_fd: int, err_fd: int) -> None:
    """In the forked child: become `python -u script` under the request's limits; never returns."""
    code = 1
    try:
        sock.close()  # the stage may not speak for the host
        os.setsid()
        _set_dumpable(True)
        signal.signal(signal.SIGINT, signal.default_int_handler)  # a timeout's SIGINT shows where it was
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        _set_limits(request["rlimits"])
        null = os.open(os.devnull, os.O_RDONLY)
        for fd, target in ((null, 0), (out_fd, 1), (err_fd, 2)):
            os.dup2(fd, target)
            os.close(fd)
        os.chdir(request["cwd"])
        if request.get("module"):
            code = _run_module(request["module"], request.get("args", []))
        else:
            code = _run_script(os.path.abspath(request["script"]), request["script"], request.get("args", []))
    except BaseException:  # the stage's own errors are handled in _run_script; this is ours
        try:
            import traceback
            traceback.print_exc()
        except BaseException:
            pass
    finally:
        os._exit(code)


def _run_script(path: str, arg0: str, args: list[str]) -> int:
    """Run the script as `python -u script` does: a fresh __main__ with __file__ absolute, argv[0]
    as given, the script's folder first on sys.path; its traceback without our frames."""
    import types

    sys.argv = [arg0, *args]
    sys.path[0] = os.path.dirname(path)
    main = types.ModuleType("__main__")
    main.__file__ = path
    sys.modules["__main__"] = main

    def run() -> None:
        with open(path, "rb") as handle:
            source = handle.read()
        exec(compile(source, path, "exec"), main.__dict__)

    return _as_main(run)


def _run_module(name: str, args: list[str]) -> int:
    """Run the module as `python -u -m module` does: as __main__ with its own spec, argv[0] its
    file (runpy sets it), the working folder first on sys.path. A preloaded module runs afresh, as
    a new process would run it (and runpy warns about one found already imported)."""
    import runpy

    sys.argv = [name, *args]
    sys.path[0] = os.getcwd()
    sys.modules.pop(name, None)
    return _as_main(lambda: runpy.run_module(name, run_name="__main__", alter_sys=True))


def _as_main(run) -> int:  # type: ignore[no-untyped-def]
    """Run `run` as the process's main code: its exit code, its tracebacks without our frames, the
    atexit handlers, a death by SIGINT after a KeyboardInterrupt (as Python does)."""
    import atexit
    import traceback

    code, interrupted = 0, False
    try:
        run()
    except SystemExit as exc:
        code = _exit_code(exc)
    except KeyboardInterrupt as exc:
        traceback.print_exception(exc.with_traceback(_their_frames(exc)))
        interrupted = True
    except BaseException as exc:
        sys.excepthook(type(exc), exc, exc.with_traceback(_their_frames(exc)).__traceback__)
        code = 1
    try:
        atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.flush()
    except BaseException:
        pass
    if interrupted:  # as Python does: die by the signal, so the status says SIGINT
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    return code


def _their_frames(exc: BaseException):  # type: ignore[no-untyped-def]
    """The traceback from the first frame that is not ours, as `python script` (or `python -m`,
    runpy's frames first) prints it."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename == _OURS:
        tb = tb.tb_next
    return tb if tb is not None else exc.__traceback__


def _exit_code(exc: SystemExit) -> int:
    if exc.code is None:
        return 0
    if isinstance(exc.code, int):
        return exc.code & 0xFF
    print(exc.code, file=sys.stderr)
    return 1


def _set_limits(rlimits: list[int | None]) -> None:
    """The trampoline's limits (sandbox.py): address space, CPU seconds, tasks, file size; no core."""
    import resource

    def cap(which: int, soft: int, hard: int) -> None:
        _, old_hard = resource.getrlimit(which)
        if old_hard != resource.RLIM_INFINITY:
            soft, hard = min(soft, old_hard), min(hard, old_hard)
        resource.setrlimit(which, (soft, hard))

    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    as_mb, cpu_s, nproc, fsize_mb = rlimits
    if as_mb is not None:
        cap(resource.RLIMIT_AS, as_mb << 20, as_mb << 20)
    if cpu_s is not None:
        cap(resource.RLIMIT_CPU, cpu_s, cpu_s + 5)
    if nproc is not None:
        cap(resource.RLIMIT_NPROC, nproc, nproc)
    if fsize_mb is not None:
        cap(resource.RLIMIT_FSIZE, fsize_mb << 20, fsize_mb << 20)


def _set_dumpable(on: bool) -> None:
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_DUMPABLE, int(on), 0, 0, 0)
    except (OSError, AttributeError):
        pass


if __name__ == "__main__":
    main(sys.argv[1:])
