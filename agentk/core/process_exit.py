"""The end of a process of ours without the interpreter's teardown.

A solver process has imported some 1,900 modules (sklearn, scipy, pandas, LightGBM), `agentk run`
some 1,500 (altair too); freeing them one by one at exit cost 0.6 s of CPU per process (measured),
three times a run (the light solve, the solve, the run itself). Nothing of that teardown is output:
every file we write is written and closed in a `with` block (atomic writes, the event log), and
progress goes to stdout. So once the work has returned, the atexit handlers run (joblib's workers,
temporary folders, logging), the standard streams are flushed, and the process ends at once.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
from collections.abc import Callable
from typing import NoReturn


def exit_now(code: int) -> NoReturn:
    """End the process with `code`: a normal exit (teardown included) while any non-daemon thread
    still runs, since a normal exit would wait for it; otherwise atexit handlers, flushed streams,
    and `os._exit`."""
    if any(t is not threading.main_thread() and t.is_alive() and not t.daemon for t in threading.enumerate()):
        sys.exit(code)
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):  # a closed or absent stream has nothing to flush
            pass
    os._exit(code)


def run_then_exit(entry: Callable[[], object]) -> NoReturn:
    """Run a Typer command line (it ends in SystemExit, a success too), then `exit_now` with its code;
    a SystemExit carrying a message is left for Python to print."""
    try:
        entry()
    except SystemExit as done:
        if done.code is not None and not isinstance(done.code, int):
            raise
        exit_now(done.code or 0)
    exit_now(0)
