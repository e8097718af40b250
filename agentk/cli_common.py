"""What every `agentk` command shares: the consoles, one line per error (with a crash log for
agentk's own bugs), the options the user gave, a choice flag's value, and scores as printed."""

from __future__ import annotations

import os
import sys
import time
import traceback
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import typer
from rich.console import Console

from agentk.core.errors import AgentKError

console = Console(highlight=False)
err_console = Console(stderr=True, highlight=False)
Member = TypeVar("Member", bound=StrEnum)
Result = TypeVar("Result")


def fail(message: str, code: int = 2) -> NoReturn:
    err_console.print(f"[red]error:[/] {message}", soft_wrap=True)
    raise typer.Exit(code)


def given(**values: Any) -> dict[str, Any]:
    """The options the user passed; RunConfig fills in the rest."""
    return {name: value for name, value in values.items() if value is not None}


def choice(kind: type[Member], flag: str, value: str | None) -> Member | None:
    """The named member, or one line saying which values the flag takes."""
    if value is None:
        return None
    try:
        return kind(value)
    except ValueError:
        names = [member.value for member in kind]
        fail(f"{flag} must be {', '.join(names[:-1])} or {names[-1]}, not {value!r}")


def guard(action: Callable[[], Result], workspace_root: Path | None = None) -> Result:
    """Run a command body: known errors become one line; unknown ones (agentk's own bugs) one line
    plus the traceback in a log file, under the workspace root's _logs/ (else the user's cache),
    never in whatever folder the command was started from."""
    try:
        return action()
    except AgentKError as exc:
        fail(str(exc))
    except KeyboardInterrupt:
        fail("interrupted; run the same command again to resume", code=130)
    except typer.Exit:
        raise
    except Exception as exc:  # noqa: BLE001 - the user gets one line, the traceback goes to a file
        log = _crash_log(workspace_root)
        fail(f"internal error: {type(exc).__name__}: {exc} (traceback in {log})", code=1)


def _crash_log(workspace_root: Path | None) -> Path:
    folder = Path(workspace_root) / "_logs" if workspace_root is not None else Path.home() / ".cache" / "agentk"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        log = folder / f"crash-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.log"
        log.write_text(traceback.format_exc(), encoding="utf-8")
        return log
    except OSError:  # nowhere writable: the traceback still reaches the user, on stderr
        sys.stderr.write(traceback.format_exc())
        return Path("stderr")


def wide_console() -> Console:
    """The console for tables: piped output has no terminal width, so the columns stay unwrapped
    for logs and notes."""
    return console if console.is_terminal else Console(highlight=False, width=200)


def fmt(value: object) -> str:
    return f"{value:.5f}" if isinstance(value, (int, float)) else "—"
