"""exit_now: a solve process ends without the interpreter's teardown, yet loses no output."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)


def test_exit_now_flushes_the_streams_runs_atexit_and_keeps_the_code(tmp_path: Path) -> None:
    marker = tmp_path / "atexit.txt"
    done = _run(f"""
import atexit, sys
from pathlib import Path
from agentk.core.process_exit import exit_now
atexit.register(lambda: Path({str(marker)!r}).write_text("ran"))
print("a line still in stdout's buffer")  # stdout is a pipe here: block-buffered
sys.stderr.write("and one in stderr's")
exit_now(3)
print("never printed")
""")
    assert done.returncode == 3
    assert done.stdout == "a line still in stdout's buffer\n"
    assert done.stderr == "and one in stderr's"
    assert marker.read_text() == "ran"


def test_exit_now_waits_like_a_normal_exit_for_a_running_thread(tmp_path: Path) -> None:
    marker = tmp_path / "thread.txt"
    done = _run(f"""
import threading, time
from pathlib import Path
from agentk.core.process_exit import exit_now

def late():
    time.sleep(0.5)
    Path({str(marker)!r}).write_text("finished")

threading.Thread(target=late).start()
exit_now(0)
""")
    assert done.returncode == 0, done.stderr
    assert marker.read_text() == "finished"
