"""How long a record of a user's file may be, and the checks that hold every reader to it: a
parser given a 150 MB line of fields holds millions of them at once, tens of GB. Perception, the
source's split and the grader read through readers.py, which applies these first."""

from __future__ import annotations

import csv
import gzip
import io
from pathlib import Path

import numpy as np
import pandas as pd

# The longest record any reader of a user's file accepts; a file with no line break this far in
# is no table of rows.
MAX_RECORD_BYTES = 8 * 2**20
_SCAN_CHUNK = 16 * 2**20


class UnreadableTable(Exception):
    """The file is not a table any reader understands; the message is one line."""


def _longest_record(data: bytes) -> int:
    """The longest stretch between line breaks, in bytes, found in chunks (no copy of the data)."""
    view = np.frombuffer(data, dtype=np.uint8)
    longest, last = 0, -1
    for start in range(0, len(view), _SCAN_CHUNK):
        breaks = np.flatnonzero(view[start:start + _SCAN_CHUNK] == 10) + start
        if breaks.size:
            longest = max(longest, int(breaks[0]) - last - 1, int(np.diff(breaks).max(initial=1)) - 1)
            last = int(breaks[-1])
    return max(longest, len(view) - last - 1)


def _too_long(limit: int) -> UnreadableTable:
    return UnreadableTable(f"a record runs over {limit / 2**20:g} MB without a line break: not a table of rows")


def check_records(data: bytes, limit: int = MAX_RECORD_BYTES) -> None:
    """UnreadableTable when a record of `data` runs longer than `limit` bytes: refused before any
    parser sees it (a scan of the bytes, no copy)."""
    if len(data) > limit and _longest_record(data) > limit:
        raise _too_long(limit)


def read_csv_header(path: str | Path, max_record_bytes: int = MAX_RECORD_BYTES) -> list[str]:
    """The column names of a comma-separated file, as `read_csv_text` names them, read from at most
    `max_record_bytes` of it: UnreadableTable when no line ends there (one 150 MB line)."""
    path = Path(path)
    with open(path, "rb") as raw:
        gzipped = raw.read(2) == b"\x1f\x8b"
    with (gzip.open(path, "rb") if gzipped else open(path, "rb")) as fh:
        head = fh.read(max_record_bytes + 1)
    if len(head) > max_record_bytes:
        cut = head.rfind(b"\n")
        if cut < 0:
            raise _too_long(max_record_bytes)
        head = head[: cut + 1]  # whole lines only: a cut quoted field would not parse
    # The first record by the csv module (pandas' C parser sizes itself to the whole head: a
    # minute for a 20,000-column file); pandas names blank and repeated names itself.
    first = next(csv.reader(io.TextIOWrapper(io.BytesIO(head), encoding="utf-8-sig", newline="")), None)
    if first and "" not in first and len(set(first)) == len(first):
        return first
    frame = pd.read_csv(io.BytesIO(head), dtype=str, keep_default_na=False, na_filter=False, nrows=0)
    return [str(c) for c in frame.columns]
