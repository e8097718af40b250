"""Rows that repeat a table's header (two exports concatenated), found and dropped once for every
reader of a user's table (agentk.core.readers)."""

from __future__ import annotations

import numpy as np
import pandas as pd

REPEATED_HEADER_ROWS = "repeated_header_rows"  # frame.attrs: the file lines dropped for repeating the header


def without_repeated_headers(frame: pd.DataFrame) -> pd.DataFrame:
    """The table without rows that repeat its header (two exports concatenated); the file lines
    they were on (1 is the header) in `frame.attrs[REPEATED_HEADER_ROWS]`."""
    if frame.shape[1] < 2 or frame.empty:
        return frame
    repeated = np.ones(len(frame), dtype=bool)
    for column in frame.columns:
        # Only rows still matching are compared: a table 20,000 columns wide stops at its first.
        rows = np.flatnonzero(repeated)
        cells = frame[column].iloc[rows].astype(str).str.strip()
        repeated[rows] = (cells == str(column).strip()).to_numpy()
        if not repeated.any():
            return frame
    lines = (np.flatnonzero(repeated) + 2).tolist()
    kept = frame[~repeated].reset_index(drop=True)
    kept.attrs[REPEATED_HEADER_ROWS] = lines
    return kept
