"""A cap on what a sandboxed child writes to disk: the growth of its writable folders, checked every
few seconds by a watcher thread that stops the child when the cap is passed.

RLIMIT_FSIZE bounds one file; a loop writing many files, or a cache run wild, would fill the disk
first. The cap comes from the data's size (`quota_mb`): a solve writes caches, predictions and
candidate files proportional to its data, never hundreds of times more.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable
from pathlib import Path

# What a child may write: this many times the data's size, and never less than the floor.
QUOTA_FACTOR = 20
QUOTA_FLOOR_MB = 4096
WATCH_INTERVAL_S = 2.0


def folder_bytes(folders: Iterable[Path]) -> int:
    """Bytes of the regular files under the folders (links not followed, unreadable parts skipped)."""
    total = 0
    for folder in folders:
        for dirpath, _dirnames, filenames in os.walk(folder, onerror=lambda _error: None):
            for name in filenames:
                try:
                    stat = os.lstat(os.path.join(dirpath, name))
                except OSError:
                    continue  # removed while we looked
                total += stat.st_size
    return total


def quota_mb(data: Path) -> int:
    """The write cap for a child working on `data`: QUOTA_FACTOR times its size, at least the floor."""
    return max(QUOTA_FLOOR_MB, QUOTA_FACTOR * folder_bytes([Path(data)]) >> 20)


class DiskWatch:
    """Watches the growth of `folders` past their size at start; calls `on_exceeded` once when it
    passes `cap_mb`."""

    def __init__(self, folders: Iterable[Path], cap_mb: int, interval_s: float = WATCH_INTERVAL_S) -> None:
        # Each byte once: the working folder is usually also among the writable ones.
        unique = sorted({Path(f).resolve() for f in folders}, key=lambda p: len(p.parts))
        self.folders = [f for i, f in enumerate(unique) if not any(f.is_relative_to(g) for g in unique[:i])]
        self.cap_bytes = cap_mb << 20
        self.cap_mb = cap_mb
        self.interval_s = interval_s
        self.exceeded = False
        self._start = folder_bytes(self.folders)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def written(self) -> int:
        return folder_bytes(self.folders) - self._start

    def start(self, on_exceeded: Callable[[], None]) -> None:
        def watch() -> None:
            while not self._stop.wait(self.interval_s):
                if self.written() > self.cap_bytes:
                    self.exceeded = True
                    on_exceeded()
                    return

        self._thread = threading.Thread(target=watch, name="disk-quota", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=self.interval_s + 5)
