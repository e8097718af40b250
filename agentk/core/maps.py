"""Setup maps (`train_tab_input_map.csv` and the like) read the one way every reader reads them."""

from __future__ import annotations

import csv
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv


WIDE_MAP_COLUMNS = 1000
# Cells per slice of rows a writer converts at once: bounds its memory, not its pace.
_WRITE_CELLS = 2_000_000


class MapError(ValueError):
    """A map file is missing or unreadable; the message is one line."""


def read_map(path: Path, text: bool = False, columns: list[str] | None = None) -> pd.DataFrame:
    """Read a setup map the one way every reader does.

    `id` is kept as text, so ids such as `007` survive, with surrounding spaces stripped: the
    sample submission's ids, the submission validator and `normalise_ids` all strip them, so a
    padded id in a map is the same row there. A missing id stays missing (NaN) for the checks to
    report. Number columns are read as pandas infers them (a cell "NA" in one is missing); a text
    column keeps every word as written ("None", "NA", "null" are labels or words like any other)
    and only its blank cells are missing. `text`: every cell as written ("" when blank), for a
    reader of texts that a column of numbers-only cells must not turn into floats ("007").
    `columns`: only those (each must be in the map), in the map's order.
    """
    path = Path(path)
    if not path.exists():
        raise MapError(f"{path.name} was not written")
    header = map_columns(path)
    missing = [c for c in columns or [] if c not in header]
    if missing:
        raise MapError(f"{path.name} has no column {missing[0]!r}")
    try:
        # A wide map in one chunk: the parser's chunks shrink as columns grow, and it converts every
        # column once per chunk (a map 10,000 columns wide read five times slower in chunks).
        whole = {"low_memory": False} if len(header) > WIDE_MAP_COLUMNS else {}
        if text:
            frame = _text_by_arrow(path, header, columns)
            if frame is None:
                frame = pd.read_csv(path, dtype=str, keep_default_na=False, na_filter=False, usecols=columns, **whole)
        else:
            frame = _words_kept(path, pd.read_csv(path, dtype={"id": str}, usecols=columns, **whole))
    except (pd.errors.EmptyDataError, pd.errors.ParserError, UnicodeDecodeError, ValueError) as exc:
        raise MapError(f"{path.name} cannot be read as CSV: {str(exc).splitlines()[0]}") from exc
    if "id" in frame.columns:
        frame["id"] = id_text(frame["id"])
    return frame


def _text_by_arrow(path: Path, header: list[str], columns: list[str] | None) -> pd.DataFrame | None:
    """Every cell as written, read by Arrow's parser (threads, no Python object per cell: ten
    million rows in seconds, where pandas' took a minute); None where Arrow reads the file
    otherwise than pandas would (repeated or blank names, ragged rows, bytes that are not UTF-8),
    and pandas reads it."""
    if "" in header or len(set(header)) != len(header):
        return None
    convert = pa_csv.ConvertOptions(column_types={c: pa.string() for c in header}, include_columns=columns,
                                    strings_can_be_null=False, quoted_strings_can_be_null=False)
    try:
        table = pa_csv.read_csv(path, parse_options=pa_csv.ParseOptions(newlines_in_values=True),
                                convert_options=convert)
    except (pa.ArrowException, ValueError):
        return None
    if table.column_names != (columns if columns is not None else header):
        return None
    return pd.DataFrame({name: pd.Series(table.column(name), dtype=pd.StringDtype("pyarrow", na_value=np.nan))
                         for name in table.column_names})


def id_text(values: pd.Series) -> pd.Series:
    """Ids as one spelling: stripped, and a whole number written as a float (`892.0`, what a table
    saved through floats holds) as its digits, so that it meets the sample's `892`. Other ids keep
    every character (`007`, `1.50`, `0013_01`)."""
    text = values.astype(str).str.strip() if values.dtype != object else values.str.strip()
    whole = text.str.fullmatch(r"-?\d+\.0+", na=False)
    if whole.any():
        text = text.where(~whole, text.str.replace(r"\.0+$", "", regex=True))
    return text


def _words_kept(path: Path, frame: pd.DataFrame) -> pd.DataFrame:
    """`frame` with its text columns, ids included (and columns pandas read as nothing but
    missing), read again as written, blanks alone missing: pandas' default reading turns the word
    "None" (or an id "NA") into NaN."""
    # Dtypes and missing cells asked of the whole frame at once (its number columns share blocks):
    # asked per column, a map 10,000 columns wide took seconds.
    numeric = frame.dtypes.map(pd.api.types.is_numeric_dtype).to_numpy(dtype=bool)
    empty = frame.isna().all().to_numpy(dtype=bool)
    columns = [c for c, number, blank in zip(frame.columns, numeric, empty) if not number or blank]
    if not columns or not frame[columns].isna().any().any():
        return frame
    text = _text_by_arrow(path, map_columns(path), columns)
    if text is None:
        text = pd.read_csv(path, usecols=columns, dtype=str, keep_default_na=False, na_filter=False)
    for column in columns:
        cells = text[column]
        if pd.api.types.is_numeric_dtype(frame[column]) and not (cells.str.strip() != "").any():
            continue  # wholly blank: stays an empty number column
        frame[column] = cells.where(cells.str.strip() != "")
    return frame


def map_columns(path: Path) -> list[str]:
    """A map's columns as read_map names them, from its header alone (a million rows need not be
    read to compare two maps' columns)."""
    path = Path(path)
    if not path.exists():
        raise MapError(f"{path.name} was not written")
    try:
        with path.open(newline="", encoding="utf-8") as fh:
            header = next(csv.reader(fh), [])
        if header and "" not in header and len(set(header)) == len(header):
            return header  # as pandas names them; it renames only blank and repeated names
        return list(pd.read_csv(path, dtype={"id": str}, nrows=0).columns)
    except (pd.errors.EmptyDataError, pd.errors.ParserError, UnicodeDecodeError, ValueError) as exc:
        raise MapError(f"{path.name} cannot be read as CSV: {str(exc).splitlines()[0]}") from exc


def write_map(frame: pd.DataFrame, path: Path) -> None:
    """Write a map as every stage does: CSV without the index, CRLF records, cells quoted only
    where they must be (a cell holding a \r or \n is quoted, so it reads back as one cell).

    A frame of text columns none of whose cells needs quotes goes through Arrow's writer, which
    writes the same bytes as pandas in a fraction of the time (seconds on a million rows);
    anything else, or a cell Arrow refuses to write unquoted, goes through pandas.
    """
    path = Path(path)
    if frame.shape[1] > WIDE_MAP_COLUMNS and _text_columns(frame):
        write_text_csv(frame, path, "\r\n")
        return
    if _all_text(frame):
        try:
            # An older pyarrow lacks `eol`/`quoting_header` (TypeError): pandas writes the same bytes.
            options = pa_csv.WriteOptions(eol="\r\n", quoting_style="none", quoting_header="none")
            pa_csv.write_csv(pa.Table.from_pandas(frame, preserve_index=False), path, write_options=options)
            return
        except (pa.ArrowException, ValueError, TypeError):
            # Cells that need quotes (a column of punctuation): quoted by Arrow too, as the csv writer quotes.
            write_text_csv(frame, path, "\r\n")
            return
    # Chunks of whole rows bounded by cells: pandas' default of 100,000 cells converts every
    # column once per chunk, and a wide frame's chunks are a few rows each.
    frame.to_csv(path, index=False, lineterminator="\r\n", chunksize=max(1, _WRITE_CELLS // max(1, frame.shape[1])))


def _all_text(frame: pd.DataFrame) -> bool:
    """Text columns under distinct text names, at least two (pandas quotes a lone empty cell)."""
    names = list(frame.columns)
    return (frame.shape[1] >= 2 and all(isinstance(c, str) for c in names) and len(set(names)) == len(names)
            and all((isinstance(t, pd.StringDtype) and t.storage == "pyarrow")
                    # Python strings only (ids taken out of a text column as an array): Arrow writes them alike.
                    or (pd.api.types.is_object_dtype(t) and pd.api.types.infer_dtype(frame.iloc[:, i], skipna=False) == "string")
                    for i, t in enumerate(frame.dtypes)))


def _text_columns(frame: pd.DataFrame) -> bool:
    """Every column holds text (pandas' string dtypes), under distinct text names."""
    names = list(frame.columns)
    return (all(isinstance(c, str) for c in names) and len(set(names)) == len(names)
            and all(isinstance(t, pd.StringDtype) for t in frame.dtypes))


def write_text_csv(frame: pd.DataFrame, path: Path, lineterminator: str) -> None:
    """A frame of text columns as Python's csv writer writes it (pandas' own: QUOTE_MINIMAL, a
    missing cell empty), byte for byte, made by Arrow a slice of rows at a time: the cells needing
    quotes are found in one pass over every column, and each slice's records are joined across all
    columns at once. pandas and the csv writer convert every column once per chunk of a few rows,
    which took minutes at 10,000 columns."""
    # What the csv writer quotes: the delimiter, the quote, and the characters of the line end.
    specials = [",", '"', *dict.fromkeys(lineterminator)]
    text = pa.large_string()
    columns = [_arrow_cells(series).cast(text) for _, series in frame.items()]
    every = pa.chunked_array([chunk for column in columns for chunk in column.chunks], type=text)
    needs = np.zeros(len(every), dtype=bool)
    for special in specials:
        needs |= pc.fill_null(pc.match_substring(every, special), False).to_numpy()
    # Whether any cell of a column needs them: a sum over each column's run of cells.
    starts = np.cumsum([0] + [len(column) for column in columns[:-1]])
    quoted = set(np.flatnonzero(np.add.reduceat(needs, starts) > 0).tolist()) if len(frame) else set()
    columns = [_quoted(column, specials) if i in quoted else column for i, column in enumerate(columns)]
    step = max(1, _WRITE_CELLS // len(columns))
    comma = pa.scalar(",", text)
    with open(path, "w", newline="", encoding="utf-8") as handle:
        csv.writer(handle, lineterminator=lineterminator).writerow(list(frame.columns))
        for start in range(0, len(frame), step):
            records = pc.binary_join_element_wise(*(c.slice(start, step) for c in columns), comma,
                                                  null_handling="replace", null_replacement="")
            handle.write("".join(f"{record}{lineterminator}" for record in records.to_pylist()))


def _arrow_cells(series: pd.Series) -> pa.ChunkedArray:
    """A text column's cells in Arrow, without a copy where pandas holds them in Arrow already."""
    cells = series.array
    arrow = cells.__arrow_array__() if hasattr(cells, "__arrow_array__") else pa.array(series)
    return arrow if isinstance(arrow, pa.ChunkedArray) else pa.chunked_array([arrow])


def _quoted(cells: pa.ChunkedArray, specials: list[str]) -> pa.ChunkedArray:
    """Cells as the csv writer spells them: in quotes, their quotes doubled, where they hold one
    of `specials`; as they are otherwise."""
    needs = pc.match_substring_regex(cells, "[" + "".join(re.escape(c) for c in specials) + "]")
    doubled = pc.replace_substring(cells, pattern='"', replacement='""')
    quote = pa.scalar('"', pa.large_string())
    wrapped = pc.binary_join_element_wise(quote, doubled, quote, pa.scalar("", pa.large_string()))
    return pc.if_else(needs, wrapped, cells)
