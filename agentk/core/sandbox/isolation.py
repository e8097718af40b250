"""Namespaces for untrusted code: the bubblewrap command line a sandboxed child runs under.

Generated code sees a private filesystem made of the Python runtime and our packages (read-only),
the folders its stage reads (read-only) and the ones it writes; nothing of the user's home, the
competition folder, the run's logs or the orchestrator's /proc. It gets its own PID, network, IPC,
UTS and user namespaces, no capabilities, no way to make further user namespaces, and dies with
agentk (`--die-with-parent`: bubblewrap kills the namespace's init, and the kernel every process in
the namespace, so `setsid` daemons go too). The one exception is the solver of an LLM solve
(`Mounts.nests`): it may make user namespaces, to run the model's feature code in a sandbox nested
in its own (solve_pipeline/llm/feature_code.py), which again may not.

Bubblewrap is what Flatpak and several coding-agent sandboxes use; `make test` installs Debian's
package. Where it is missing or the kernel refuses user namespaces, `isolation_status()` says why
and the caller decides (LLM-written code is refused unless the user accepts running it unisolated).
"""

from __future__ import annotations

import functools
import importlib.util
import os
import shutil
import subprocess
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

# Our packages, imported by the sandboxed solver and checks; only these folders of the project are
# visible (the project folder itself also holds the default workspace root).
PACKAGES = ("agentk", "setup_pipeline", "solve_pipeline", "unit_tests_setup", "curriculum")

# What the dynamic linker and the numeric libraries read from /etc; not passwd, hosts or ssl.
_ETC_FILES = ("ld.so.cache", "ld.so.conf", "localtime", "nsswitch.conf")

# Set in every isolated child's environment: a process that finds it runs inside our sandbox.
SANDBOXED_ENV = "AGENTK_SANDBOXED"

# The uid/gid the code runs as inside its user namespace: not root, even when agentk runs as root.
SANDBOX_UID = 1000
SANDBOX_GID = 1000


@dataclass(frozen=True)
class IsolationStatus:
    available: bool
    reason: str  # why not, or which tool gives it
    proc: bool = True  # whether the sandbox gets a /proc of its own (not inside another sandbox)


@dataclass(frozen=True)
class Mounts:
    """What a sandboxed child may see: `read` folders or files read-only, `write` folders writable,
    `devices` device files usable (a GPU's). Paths keep their absolute location inside, so
    arguments naming them stay valid."""

    read: tuple[Path, ...] = ()
    write: tuple[Path, ...] = ()
    devices: tuple[Path, ...] = ()
    # A child that must start sandboxes of its own (the solver, for model-written feature code) may
    # make user namespaces; every other child may not.
    nests: bool = False
    # The size of its private /tmp (memory, not disk); None: the kernel's default, half the memory.
    tmp_mb: int | None = None

    @staticmethod
    def of(read: Iterable[Path] = (), write: Iterable[Path] = (), devices: Iterable[Path] = ()) -> Mounts:
        return Mounts(tuple(Path(p) for p in read), tuple(Path(p) for p in write), tuple(Path(p) for p in devices))

    @staticmethod
    def workspace(root: Path, *, write: Iterable[str], read: Iterable[Path] = ()) -> Mounts:
        """A workspace as generated code may see it: the data (raw/) and the setup's files (setup/)
        to read, the named subfolders to write; never its logs, state or LLM cache."""
        root = Path(root)
        return Mounts.of(read=[root / "raw", root / "setup", *read], write=[root / name for name in write])


# The device files CUDA opens: one per GPU (nvidia0, nvidia1, ...), the control device, unified
# memory and its tools, mode setting, and the capability files of MIG slices.
_GPU_DEVICE_GLOBS = ("nvidia[0-9]*", "nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia-modeset",
                     "nvidia-caps/*")


def gpu_device_files(dev: Path = Path("/dev")) -> tuple[Path, ...]:
    """The NVIDIA device files present under `dev` (none on a machine without a GPU)."""
    found = {path for pattern in _GPU_DEVICE_GLOBS for path in Path(dev).glob(pattern)}
    return tuple(sorted(found))


def bwrap_executable() -> str | None:
    return shutil.which("bwrap")


@functools.cache
def isolation_status() -> IsolationStatus:
    """Whether bubblewrap runs here with every namespace we ask for (checked once per process).

    Inside another sandbox (the solver's) a fresh /proc cannot be mounted (the kernel refuses one
    where the outer /proc is partly covered), so the child gets its own PID namespace without a
    /proc: it sees no process, ours included, and dies with its namespace all the same."""
    if os.environ.get("AGENTK_NO_ISOLATION"):
        return IsolationStatus(False, "AGENTK_NO_ISOLATION is set")
    if not sys.platform.startswith("linux"):
        return IsolationStatus(False, f"bubblewrap needs Linux, this is {sys.platform}")
    exe = bwrap_executable()
    if exe is None:
        return IsolationStatus(False, "bubblewrap (bwrap) is not installed; on Debian/Ubuntu: apt-get install bubblewrap")
    cwd = Path(sys.prefix)
    failure = ""
    # Without a /proc of its own only inside our own sandbox, where the kernel refuses to mount one;
    # elsewhere a sandbox that cannot mount /proc is no sandbox we know.
    for proc in (True, False) if os.environ.get(SANDBOXED_ENV) else (True,):
        argv = bwrap_argv([sys.executable, "-I", "-S", "-c", "pass"], cwd=cwd, mounts=Mounts(), bwrap=exe, proc=proc)
        try:
            probe = subprocess.run(argv, capture_output=True, text=True, timeout=30, env={"PATH": os.environ.get("PATH", "")})
        except (OSError, subprocess.TimeoutExpired) as exc:
            return IsolationStatus(False, f"bubblewrap did not start: {exc}")
        if probe.returncode == 0:
            return IsolationStatus(True, f"bubblewrap ({exe})" + ("" if proc else ", inside another sandbox: no /proc"),
                                   proc=proc)
        detail = (probe.stderr or probe.stdout).strip().splitlines()
        failure = failure or (detail[-1] if detail else str(probe.returncode))
    return IsolationStatus(False, f"bubblewrap cannot make a sandbox here: {failure}")


def bwrap_argv(command: Sequence[str], *, cwd: Path, mounts: Mounts, bwrap: str | None = None,
               proc: bool = True) -> list[str]:
    """The full command line: bubblewrap's options, then `command` to run inside (`proc`: with
    the namespace's own /proc, which only a sandbox not inside another can mount)."""
    argv = [
        bwrap or bwrap_executable() or "bwrap",
        "--unshare-user", "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts",
        "--unshare-cgroup-try",
        "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_GID),
        # No nested user namespace, where the code would get capabilities again (bubblewrap 0.8+),
        # unless it must start sandboxes of its own.
        *(["--disable-userns"] if not mounts.nests and _supports(bwrap, "--disable-userns") else []),
        "--cap-drop", "ALL",
        # No --new-session: the child stays in our process group so a timeout's SIGINT reaches it
        # (it has no terminal to inject keystrokes into: the sandbox starts a session without one).
        "--die-with-parent",
        "--hostname", "sandbox",
        *(["--proc", "/proc"] if proc else []), "--dev", "/dev",
        *(["--size", str(mounts.tmp_mb << 20)] if mounts.tmp_mb is not None and _supports(bwrap, "--size") else []),
        "--tmpfs", "/tmp",
    ]
    for device in mounts.devices:  # a fresh /dev has none of the GPU's files
        argv += ["--dev-bind", str(device), str(device)]
    for path in ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        argv += _system_path(path)
    for name in _ETC_FILES:
        etc = Path("/etc") / name
        if etc.exists():
            argv += ["--ro-bind", str(etc), str(etc)]
    # Parents before children, whatever their mode: a later parent mount would hide a child.
    writable = {Path(os.path.abspath(p)) for p in mounts.write}
    for path in _unique([*runtime_paths(), *mounts.read, *mounts.write]):
        argv += ["--bind" if path in writable else "--ro-bind", str(path), str(path)]
    argv += ["--chdir", str(Path(cwd).absolute()), "--", *command]
    return argv


@functools.cache
def _runtime_paths() -> tuple[Path, ...]:
    # The venv and the interpreter it points at (its real path: a pyenv build under the home).
    prefixes = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    paths = [Path(p) for prefix in prefixes for p in (prefix, os.path.realpath(prefix))]
    return tuple(p for p in _unique([*paths, *package_roots()]) if p.exists())


def runtime_paths() -> list[Path]:
    """The interpreter, its libraries and our packages, as the child needs them to start."""
    return list(_runtime_paths())


@functools.cache
def package_roots() -> tuple[Path, ...]:
    """Each of our packages' folders (an editable install or a worktree alike)."""
    roots: list[Path] = []
    for name in PACKAGES:
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.submodule_search_locations:
            roots += [Path(p).resolve() for p in spec.submodule_search_locations]
    return tuple(roots)


def python_path() -> str:
    """PYTHONPATH for the child, so it imports the same copy of our packages as this process."""
    return os.pathsep.join(dict.fromkeys(str(root.parent) for root in package_roots()))


@functools.cache
def _supports(bwrap: str | None, option: str) -> bool:
    try:
        usage = subprocess.run([bwrap or "bwrap", "--help"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired):
        return False
    return option in usage


def _system_path(path: str) -> list[str]:
    if os.path.islink(path):
        return ["--symlink", os.readlink(path), path]
    if os.path.isdir(path):
        return ["--ro-bind", path, path]
    return []


def _unique(paths: Iterable[Path]) -> list[Path]:
    """Absolute paths without repeats, parents before children (bubblewrap mounts in order, and a
    later parent mount would hide an earlier child)."""
    seen = dict.fromkeys(Path(os.path.abspath(p)) for p in paths)
    return sorted(seen, key=lambda p: len(p.parts))
