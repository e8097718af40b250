"""What every section of a run's report shares: its record base, the builder that turns a missing or
odd input into `NotAvailable(reason)`, and the lenient readers of the values a run's files hold."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict

from agentk.report.page import NotAvailable

T = TypeVar("T")


class Missing(Exception):
    """A section's input is not there; the message is the reason the page shows."""


class Record(BaseModel):
    model_config = ConfigDict(arbitrary_types_allowed=True)


def section(what: str, build: Callable[[], T]) -> T | NotAvailable:
    """`build()`, or why it could not be built: a report never fails because of its data."""
    try:
        return build()
    except Missing as exc:
        return NotAvailable(str(exc))
    except Exception as exc:  # noqa: BLE001 - any odd file becomes a note on the page, not an error
        return NotAvailable(f"{what} could not be read ({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})")


def json_or_empty(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def number_or_none(value: object) -> float | None:
    """A finite number as a float; None for anything else (a bool, text, NaN)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def as_list(value: object) -> list[Any]:
    if value is None:
        return []
    return list(value) if isinstance(value, list | tuple) else [value]


def as_text(value: object) -> str:
    """A recorded value in words: a list or a mapping joined by commas."""
    if isinstance(value, list | tuple):
        return ", ".join(str(v) for v in value)
    if isinstance(value, dict):
        return ", ".join(f"{k}: {v}" for k, v in value.items())
    return str(value)
