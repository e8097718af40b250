"""A control group per sandboxed child: caps on its processes and its total memory.

RLIMIT_NPROC cannot stop a fork bomb run as root (the kernel exempts root's own uid, even mapped
into a user namespace), and RLIMIT_AS caps each process's address space, not their sum. A cgroup
caps both for the whole tree. Made under our own cgroup where we may write there (root, or a
delegated cgroup v2 subtree); elsewhere `open_jail` returns None and the rlimits stand alone.
"""

from __future__ import annotations

import itertools
import os
import shlex
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path

_ROOT = Path("/sys/fs/cgroup")
_counter = itertools.count()


@dataclass
class CgroupJail:
    """Folders of one child's cgroups (one per v1 controller, or one v2 group)."""

    dirs: list[Path] = field(default_factory=list)

    def join_script(self) -> str:
        """Shell lines that move the shell into the jail (what it execs next stays there)."""
        return " && ".join(f"echo $$ > {shlex.quote(str(d / 'cgroup.procs'))}" for d in self.dirs)

    def close(self) -> None:
        """Kill whatever is left inside, then remove the folders."""
        for folder in self.dirs:
            for _ in range(50):
                pids = _read_pids(folder)
                for pid in pids:
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except OSError:
                        pass
                try:
                    folder.rmdir()
                    break
                except OSError:
                    time.sleep(0.02)


def open_jail(max_processes: int | None, memory_mb: int | None) -> CgroupJail | None:
    """A fresh cgroup with the caps set, or None where cgroups cannot be written."""
    name = f"agentk-{os.getpid()}-{next(_counter)}"
    try:
        if (_ROOT / "cgroup.controllers").exists():
            return _open_v2(name, max_processes, memory_mb)
        return _open_v1(name, max_processes, memory_mb)
    except OSError:
        return None


def _open_v2(name: str, max_processes: int | None, memory_mb: int | None) -> CgroupJail | None:
    own = _own_paths().get("")
    if own is None:
        return None
    parent = _ROOT / own.lstrip("/")
    enabled = (parent / "cgroup.subtree_control").read_text().split()
    wanted = [c for c, v in (("pids", max_processes), ("memory", memory_mb)) if v is not None]
    if any(c not in enabled for c in wanted):
        return None  # enabling controllers here would move our own processes; not ours to do
    folder = parent / name
    folder.mkdir()
    jail = CgroupJail([folder])
    try:
        if max_processes is not None:
            (folder / "pids.max").write_text(str(max_processes))
        if memory_mb is not None:
            (folder / "memory.max").write_text(str(memory_mb << 20))
            if (folder / "memory.swap.max").exists():
                (folder / "memory.swap.max").write_text("0")
    except OSError:
        jail.close()
        return None
    return jail


def _open_v1(name: str, max_processes: int | None, memory_mb: int | None) -> CgroupJail | None:
    own = _own_paths()
    jail = CgroupJail()
    limits = {"pids": ("pids.max", max_processes), "memory": ("memory.limit_in_bytes", None if memory_mb is None else memory_mb << 20)}
    try:
        for controller, (knob, value) in limits.items():
            if value is None or controller not in own:
                continue
            base = _ROOT / controller / own[controller].lstrip("/")
            if not base.is_dir():
                continue
            folder = base / name
            folder.mkdir()
            jail.dirs.append(folder)
            (folder / knob).write_text(str(value))
    except OSError:
        jail.close()
        return None
    return jail if jail.dirs else None


def _own_paths() -> dict[str, str]:
    """controller -> our cgroup path ('' is the v2 unified hierarchy)."""
    paths: dict[str, str] = {}
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        for controller in controllers.split(",") if controllers else [""]:
            paths[controller] = path
    return paths


def _read_pids(folder: Path) -> list[int]:
    try:
        return [int(x) for x in (folder / "cgroup.procs").read_text().split()]
    except (OSError, ValueError):
        return []
