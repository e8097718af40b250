"""The machine's process table (psutil), for what the kernel cannot say about a group or a tree in
one call: whether a process group still has live members, and how much memory a tree holds."""

from __future__ import annotations

import os
from dataclasses import dataclass

import psutil

_GONE = {psutil.STATUS_ZOMBIE, psutil.STATUS_DEAD}


@dataclass(frozen=True)
class ProcessInfo:
    pid: int
    ppid: int
    pgrp: int
    rss_bytes: int
    alive: bool  # False for a zombie: it has exited and closed its pipes, only its exit status waits


def process_table() -> dict[int, ProcessInfo]:
    """pid -> ProcessInfo for every visible process; processes that exit while we look are left out."""
    table: dict[int, ProcessInfo] = {}
    for proc in psutil.process_iter(["ppid", "status", "memory_info"]):
        info = proc.info
        try:
            pgrp = os.getpgid(proc.pid)
        except OSError:
            continue  # exited while we looked
        if info["ppid"] is None:
            continue
        memory = info["memory_info"]
        table[proc.pid] = ProcessInfo(
            proc.pid, info["ppid"], pgrp, memory.rss if memory is not None else 0, info["status"] not in _GONE
        )
    return table


def group_alive(pgid: int) -> bool:
    """Whether any process of the group is still running (zombies do not count). The sandbox polls
    this every 20 ms: it reads only each process's group and status, and stops at the first live one."""
    for proc in psutil.process_iter(["status"]):
        try:
            if os.getpgid(proc.pid) == pgid and proc.info["status"] not in _GONE:
                return True
        except OSError:
            continue  # exited while we looked
    return False


def short_command(pid: int) -> str:
    """A process's command, short: `python -m solve_pipeline.solver`, `python code_metric.py`."""
    try:
        words = psutil.Process(pid).cmdline()
    except (psutil.Error, OSError):
        return f"pid {pid}"
    if not words:
        return f"pid {pid}"
    rest = [w if w.startswith("-") else os.path.basename(w) for w in words[1:3]]
    return " ".join([os.path.basename(words[0]), *rest])
