"""Per column of a table of text cells, what every column-wise decision asks first, computed in one
pass by Arrow: how many distinct cells it holds and how long its longest is.

A table 20,000 columns wide pays pandas' cost per column for each question it asks a column; asked
once here, constant columns are dropped and number columns set aside without another pass.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc


@dataclass(frozen=True)
class ColumnProfile:
    distinct: int  # distinct cells as written, a blank one included
    longest: int  # characters in the longest cell


def arrow_text(column: pd.Series) -> pa.Array | pa.ChunkedArray:
    """A column's cells as Arrow text (large strings), without a copy where pandas holds them in
    Arrow already (a pandas Series converted by `pa.array` costs as much again, per column)."""
    dtype = column.dtype
    if isinstance(dtype, pd.StringDtype) and dtype.storage == "pyarrow" and hasattr(column.array, "__arrow_array__"):
        cells = column.array.__arrow_array__()
    else:
        cells = pa.array(column if isinstance(dtype, pd.StringDtype) else column.astype(str))
    return cells.cast(pa.large_string()) if cells.type != pa.large_string() else cells


def column_profiles(frame: pd.DataFrame) -> dict[str, ColumnProfile]:
    """Every column's profile, one Arrow pass each (no column copied into Python objects)."""
    return profiles_of({str(name): arrow_text(column) for name, column in frame.items()})


def profiles_of(texts: dict[str, pa.Array | pa.ChunkedArray]) -> dict[str, ColumnProfile]:
    """The profile of each column given as Arrow text (`arrow_text`)."""
    profiles: dict[str, ColumnProfile] = {}
    for name, cells in texts.items():
        longest = pc.max(pc.utf8_length(cells)).as_py() if len(cells) else 0
        profiles[name] = ColumnProfile(distinct=pc.count_distinct(cells, mode="all").as_py(), longest=int(longest or 0))
    return profiles


def constant_columns(frame: pd.DataFrame, profiles: dict[str, ColumnProfile]) -> list[str]:
    """Columns holding one value in every row: nothing a model can learn from (two rows at least,
    so a one-row table keeps its columns)."""
    if len(frame) < 2:
        return []
    return [str(c) for c in frame.columns if profiles[str(c)].distinct <= 1]
