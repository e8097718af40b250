"""What both memories need from lancedb: a quiet connection to a database folder, and SQL string
literals for their filters."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any


def connect(folder: Path) -> Any:
    """The lancedb database in `folder` (created if missing)."""
    # lancedb's Rust core logs warnings to stderr unless told otherwise.
    os.environ.setdefault("LANCEDB_LOG", "error")
    import lancedb

    Path(folder).mkdir(parents=True, exist_ok=True)
    return lancedb.connect(str(folder))


def sql_literal(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"
