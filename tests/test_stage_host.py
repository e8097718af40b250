"""The warm stage host against real sandboxed processes: scripts in a row, timeouts, leftovers, a
stage that kills the host, limits, the disk quota; each stage's answer is run_python's."""

from __future__ import annotations

import signal
import textwrap
from pathlib import Path

import pytest

from agentk.core.sandbox.isolation import Mounts, isolation_status
from agentk.core.sandbox.sandbox import Limits
from agentk.core.sandbox.stage_host import NO_HOST_ENV, StageHost
from tests.test_sandbox import HEARTBEAT, stops_beating

pytestmark = pytest.mark.skipif(not isolation_status().available, reason=isolation_status().reason)

FAST = Limits(timeout_s=30.0, grace_s=1.0)


def host(folder: Path) -> StageHost:
    return StageHost(folder, Mounts.of(write=[folder]), preload=("json",))


def script(folder: Path, name: str, body: str) -> str:
    (folder / name).write_text(textwrap.dedent(body))
    return name


def test_runs_scripts_in_a_row_with_their_outputs_codes_and_logs(tmp_path: Path) -> None:
    first = script(tmp_path, "first.py", """
        import sys
        from pathlib import Path
        print("first", sys.argv[1:], __name__, Path(__file__).name)
        print("to stderr", file=sys.stderr)
        Path("made.txt").write_text("x")
        sys.exit(3)
    """)
    second = script(tmp_path, "second.py", """
        import os
        print("second sees", sorted(os.listdir(".")))
        def fail():
            raise ValueError("broken on purpose")
        fail()
    """)
    with host(tmp_path) as stages:
        one = stages.run([first, "an-arg"], limits=FAST, log_prefix=tmp_path / "logs" / "stage_first")
        two = stages.run([second], limits=FAST, log_prefix=tmp_path / "logs" / "stage_second")
        assert stages.active  # both ran in the host, not in a fallback
    assert (one.returncode, one.stdout, one.stderr) == (3, "first ['an-arg'] __main__ first.py\n", "to stderr\n")
    assert not one.ok and not one.timed_out
    assert (tmp_path / "logs" / "stage_first.stdout.txt").read_text() == one.stdout
    assert (tmp_path / "logs" / "stage_second.stderr.txt").read_text() == two.stderr
    assert two.returncode == 1 and "made.txt" in two.stdout
    # The traceback is the script's own, as `python -u second.py` prints it.
    assert two.stderr.startswith("Traceback (most recent call last):\n  File \"")
    assert "stage_serve" not in two.stderr and "ValueError: broken on purpose" in two.error_summary()


def test_a_timed_out_stage_shows_where_it_was_and_the_next_runs(tmp_path: Path) -> None:
    stuck = script(tmp_path, "stuck.py", """
        import time
        print("started", flush=True)
        while True:
            time.sleep(0.05)
    """)
    fine = script(tmp_path, "fine.py", "print('fine')\n")
    with host(tmp_path) as stages:
        slow = stages.run([stuck], limits=Limits(timeout_s=2.0, grace_s=1.0))
        after = stages.run([fine], limits=FAST)
        assert stages.active
    assert slow.timed_out and slow.returncode == -signal.SIGINT and slow.stdout == "started\n"
    assert "KeyboardInterrupt" in slow.stderr and "stuck.py" in slow.stderr
    assert "timed out after 2 s" in slow.error_summary()
    assert after.ok and after.stdout == "fine\n"


def test_nothing_a_stage_started_outlives_it(tmp_path: Path) -> None:
    (tmp_path / "beat.py").write_text(HEARTBEAT)
    leaves = script(tmp_path, "leaves.py", """
        import os, subprocess, sys, time
        # A daemon of its own session (out of the stage's group) and a plain child.
        subprocess.Popen([sys.executable, "beat.py", "daemon.txt"], start_new_session=True)
        subprocess.Popen([sys.executable, "beat.py", "child.txt"])
        while not (os.path.exists("daemon.txt") and os.path.exists("child.txt")):
            time.sleep(0.02)
    """)
    fine = script(tmp_path, "fine.py", "print('fine')\n")
    with host(tmp_path) as stages:
        result = stages.run([leaves], limits=FAST)
        assert result.ok
        assert stops_beating(tmp_path / "daemon.txt", within_s=1.0)
        assert stops_beating(tmp_path / "child.txt", within_s=1.0)
        assert stages.run([fine], limits=FAST).ok and stages.active


def test_a_stage_that_kills_the_host_runs_again_in_a_fresh_sandbox(tmp_path: Path) -> None:
    killer = script(tmp_path, "killer.py", """
        import os, signal, time
        os.kill(os.getppid(), signal.SIGKILL)  # the host; under run_python the namespace's init, which ignores it
        time.sleep(0.5)
        print("survived")
    """)
    fine = script(tmp_path, "fine.py", "print('fine')\n")
    with host(tmp_path) as stages:
        result = stages.run([killer], limits=FAST, log_prefix=tmp_path / "stage_killer")
        assert not stages.active  # given up: the rest of the setup runs as before the host
        after = stages.run([fine], limits=FAST)
    assert result.ok and result.stdout == "survived\n"
    assert (tmp_path / "stage_killer.stdout.txt").read_text() == "survived\n"
    assert after.ok and after.stdout == "fine\n"


def test_memory_and_cpu_limits_fail_the_stage_not_the_host(tmp_path: Path) -> None:
    hungry = script(tmp_path, "hungry.py", "block = bytearray(2 << 30)\n")
    spinning = script(tmp_path, "spinning.py", "while True:\n    pass\n")
    fine = script(tmp_path, "fine.py", "print('fine')\n")
    with host(tmp_path) as stages:
        assert stages.run([fine], limits=FAST).ok
        memory = stages.run([hungry], limits=Limits(timeout_s=30.0, grace_s=1.0, memory_mb=1024))
        cpu = stages.run([spinning], limits=Limits(timeout_s=60.0, grace_s=1.0, cpu_s=1))
        after = stages.run([fine], limits=FAST)
        assert stages.active
    assert memory.returncode == 1 and "MemoryError" in memory.stderr
    assert cpu.returncode == -signal.SIGXCPU and not cpu.timed_out
    assert after.ok


def test_the_disk_quota_stops_a_stage(tmp_path: Path) -> None:
    writer = script(tmp_path, "writer.py", """
        import time
        with open("big.bin", "wb") as handle:
            handle.write(b"x" * (3 << 20))
        time.sleep(60)
    """)
    fine = script(tmp_path, "fine.py", "print('fine')\n")
    with host(tmp_path) as stages:
        result = stages.run([writer], limits=Limits(timeout_s=30.0, grace_s=1.0, max_written_mb=1))
        assert stages.run([fine], limits=FAST).ok
    assert result.written_over_mb == 1 and not result.ok and not result.timed_out


def test_switched_off_it_runs_each_stage_in_run_python(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(NO_HOST_ENV, "1")
    fine = script(tmp_path, "fine.py", "print('fine')\n")
    with host(tmp_path) as stages:
        assert stages.run([fine], limits=FAST).stdout == "fine\n"
        assert not stages.active
