"""The process table (agentk/core/sandbox/processes.py): trees, groups and zombies as psutil reports them."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from agentk.core.sandbox.processes import group_alive, process_table


def test_a_child_is_in_the_table_with_its_parent_group_and_memory() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"], start_new_session=True)
    try:
        info = process_table()[child.pid]
        assert info.ppid == os.getpid() and info.pgrp == child.pid and info.rss_bytes > 0 and info.alive
        assert group_alive(child.pid)
    finally:
        child.kill()
    time.sleep(0.2)  # not reaped yet: a zombie, which no longer counts as alive
    assert not group_alive(child.pid)
    child.wait()
    assert child.pid not in process_table()
