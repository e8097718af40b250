"""One run per workspace: an OS lock on a file in the folder, held for the whole run.

An flock belongs to the open file, so the kernel releases it when the holder dies however it
dies (SIGKILL included): a lock left behind can never block. The holder's pid is written into
the file only to name it in the error; the pid is never what decides.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from agentk.core.errors import WorkspaceInUse

LOCK_NAME = ".agentk.lock"
# The holder writes its pid just after taking the lock; a rival that looks in that instant
# waits this long for it rather than naming no one.
_PID_WAIT_S = 1.0


@contextmanager
def workspace_lock(folder: Path) -> Iterator[Path]:
    """Hold `folder`'s lock until the block ends; raises WorkspaceInUse (one line) at once if a
    live process holds it. Yields the lock file's path."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / LOCK_NAME
    # O_NOFOLLOW: a lock file swapped for a symlink must not make us truncate its target.
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    try:
        _acquire(fd, path, folder)
        # Never replace or delete the file: a rival may already be waiting on this very inode.
        record = json.dumps({"pid": os.getpid(), "started": time.strftime("%Y-%m-%d %H:%M:%S")})
        os.ftruncate(fd, 0)
        os.pwrite(fd, (record + "\n").encode(), 0)
        yield path
    finally:
        os.close(fd)  # closing the file releases the lock


def _acquire(fd: int, path: Path, folder: Path) -> None:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return
    except OSError as exc:
        if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            # A filesystem without flock (some network mounts): fall back on the recorded pid,
            # which blocks only while that process is alive.
            holder = _holder(path)
            if holder is not None and holder.get("pid") != os.getpid() and _alive(holder.get("pid")):
                raise _in_use(holder, folder) from exc
            return
    raise _in_use(_wait_for_holder(path), folder)


def _wait_for_holder(path: Path) -> dict | None:
    deadline = time.monotonic() + _PID_WAIT_S
    while True:
        holder = _holder(path)
        if (holder is not None and _alive(holder.get("pid"))) or time.monotonic() >= deadline:
            return holder
        time.sleep(0.05)


def _holder(path: Path) -> dict | None:
    try:
        record = json.loads(path.read_text(encoding="utf-8") or "null")
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) and isinstance(record.get("pid"), int) else None


def _alive(pid: object) -> bool:
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)  # signal 0: only asks whether the process exists
    except ProcessLookupError:
        return False
    except PermissionError:  # it exists, under another user
        return True
    return True


def _in_use(holder: dict | None, folder: Path) -> WorkspaceInUse:
    who = f"pid {holder['pid']}" if holder else "another process"
    since = f"since {holder['started']}, " if holder and holder.get("started") else ""
    return WorkspaceInUse(
        f"workspace in use by {who} ({since}{folder}); wait for that run to finish or use another --workspace-root"
    )
