"""Limits that hold for the whole tree of a sandboxed child, not for each process alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentk.core.sandbox.cgroups import open_jail
from agentk.core.sandbox.sandbox import Limits, run_python


def _jail_possible() -> bool:
    jail = open_jail(64, 256)
    if jail is None:
        return False
    jail.close()
    return True


needs_cgroup = pytest.mark.skipif(not _jail_possible(), reason="no cgroup can be made here (not root, no delegated cgroup v2)")

# Two processes of 300 MB each: under any per-process cap of 8 GB, over a total of 400 MB.
TWO_HOGS = """
import subprocess, sys
code = "b = bytearray(300 << 20); b[::4096] = b'x' * len(b[::4096]); import time; time.sleep(3)"
children = [subprocess.Popen([sys.executable, "-c", code]) for _ in range(2)]
codes = [c.wait() for c in children]
print(codes)
sys.exit(0 if all(code == 0 for code in codes) else 1)
"""


@needs_cgroup
def test_total_memory_is_capped_across_processes(tmp_path: Path) -> None:
    capped = run_python(["-c", TWO_HOGS], cwd=tmp_path, limits=Limits(timeout_s=60, total_memory_mb=400))
    assert not capped.ok  # at least one hog was killed
    free = run_python(["-c", TWO_HOGS], cwd=tmp_path, limits=Limits(timeout_s=60, total_memory_mb=2000))
    assert free.ok, free.stderr


@needs_cgroup
def test_process_count_is_capped_for_root_too(tmp_path: Path) -> None:
    bomb = "import os\nn = 0\ntry:\n    for _ in range(500):\n        if os.fork() == 0:\n            import time; time.sleep(5); os._exit(0)\n        n += 1\nexcept OSError:\n    pass\nprint(n)"
    result = run_python(["-c", bomb], cwd=tmp_path, limits=Limits(timeout_s=60, max_processes=50))
    assert result.ok and 0 < int(result.stdout.strip()) < 50
