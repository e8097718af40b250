"""Peak resident memory of the processes a bench system starts.

Every system in the bench (agentk's setup and solver subprocesses, each rival) runs as children of
the bench process, one system at a time. Two measurements are combined, because neither alone is
right for a process tree:

* sampling the process table (agentk.core.sandbox.processes) every `interval_s` and summing the RSS of all
  live descendants catches processes that run *at the same time* (a sandbox group, a worker pool), which `ru_maxrss` cannot: it is the
  peak of the single largest child, never a sum;
* `getrusage(RUSAGE_CHILDREN).ru_maxrss` is exact for a single process, so a spike shorter than the
  sampling interval is still seen. It is a process-wide high-water mark, so it only tells something
  about this window when it rose during it.
"""

from __future__ import annotations

import os
import resource
import threading
from types import TracebackType

from agentk.core.sandbox.processes import process_table, short_command


def tree_rss(root_pid: int, include_root: bool = False) -> dict[int, int]:
    """pid -> RSS of `root_pid`'s descendants (and of anything sharing a descendant's process
    group: the sandbox makes each child a group leader, so an orphaned grandchild still counts)."""
    table = process_table()
    children: dict[int, list[int]] = {}
    for pid, info in table.items():
        children.setdefault(info.ppid, []).append(pid)
    found: set[int] = set()
    stack = [root_pid]
    while stack:
        for child in children.get(stack.pop(), []):
            if child not in found:
                found.add(child)
                stack.append(child)
    groups = set(found)
    found |= {pid for pid, info in table.items() if info.pgrp in groups and pid != root_pid}
    if include_root and root_pid in table:
        found.add(root_pid)
    return {pid: table[pid].rss_bytes for pid in found if pid in table}


def tree_rss_bytes(root_pid: int, include_root: bool = False) -> int:
    """Summed RSS of `root_pid`'s descendants (see tree_rss)."""
    return sum(tree_rss(root_pid, include_root).values())


PEAK_PARTS = 4


class PeakRss:
    """`with PeakRss() as peak: ...` then `peak.mb`: the peak RSS of this process's children."""

    def __init__(self, interval_s: float = 0.2) -> None:
        self.interval_s = interval_s
        self._peak_bytes = 0
        # The processes that made the sampled peak, largest first: (command, MB).
        self.peak_parts: list[tuple[str, float]] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._maxrss_before_kb = 0
        self._maxrss_after_kb = 0

    def __enter__(self) -> PeakRss:
        self._maxrss_before_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        self._thread = threading.Thread(target=self._sample, name="peak-rss", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5.0)
        self._maxrss_after_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss

    def _sample(self) -> None:
        me = os.getpid()
        while not self._stop.is_set():
            parts = tree_rss(me)
            total = sum(parts.values())
            if total > self._peak_bytes:
                self._peak_bytes = total
                largest = sorted(parts.items(), key=lambda item: -item[1])[:PEAK_PARTS]
                self.peak_parts = [(short_command(pid), round(rss / 2**20, 1)) for pid, rss in largest if rss >= 2**20]
            self._stop.wait(self.interval_s)

    def breakdown(self) -> str:
        """What made the sampled peak, e.g. `6,210 MB python -m solve_pipeline.solver; 890 MB bwrap`."""
        return "; ".join(f"{mb:,.0f} MB {name}" for name, mb in self.peak_parts)

    @property
    def mb(self) -> float:
        sampled = self._peak_bytes / 2**20
        # ru_maxrss is in KiB on Linux; it speaks for this window only if it rose within it.
        single = self._maxrss_after_kb / 1024 if self._maxrss_after_kb > self._maxrss_before_kb else 0.0
        return round(max(sampled, single), 1)
