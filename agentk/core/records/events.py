"""The run's event stream: a JSONL log in the workspace and one line per outcome on the console.

Both carry output of generated code and error messages, so every record and line is redacted
(agentk/core/secrets.py) before it is written or shown.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from rich.console import Console

from agentk.core.secrets import redact, redact_obj


class EventLog:
    """Appends events to `logs/events.jsonl` and echoes the important ones to the console."""

    def __init__(self, path: Path | None, *, quiet: bool = False, console: Console | None = None) -> None:
        self.path = path
        self.quiet = quiet
        self.console = console or Console(stderr=True, highlight=False)
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)

    def emit(self, event: str, **fields: Any) -> None:
        if self.path is None:
            return
        record = redact_obj({"t": round(time.time(), 3), "event": event, **fields})
        line = json.dumps(record, default=lambda value: redact(str(value)))
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(line + "\n")

    def say(self, message: str) -> None:
        """A line for a person; suppressed by --quiet."""
        if not self.quiet:
            # No hard line breaks: a long path stays on one line for logs, pipes and grep.
            self.console.print(redact(message), soft_wrap=True)

    def status(self, message: str):
        """A spinner while something slow runs (a no-op context when quiet)."""
        if self.quiet:
            return _NullContext()
        return self.console.status(redact(message))


class _NullContext:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None
