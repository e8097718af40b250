"""Read any table a competition ships into a frame of text cells, deciding the format from content.

Every reader returns the cells as the file spells them (str; a missing cell is ""), so ids keep
their leading zeros and labels their case; numbers are parsed later, by whoever needs them. The
format comes from the first bytes (parquet and zip magic, gzip, JSON brackets), never from the
extension alone; delimited text is sniffed for encoding, BOM, delimiter and decimal comma.

Generated setup code imports `read_table` too, so the setup reads files exactly as perception did.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import re
import zipfile
from pathlib import Path
from typing import IO, Literal

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv
from charset_normalizer import from_bytes

from agentk.core.reading.archives import check_zip, open_zip
from agentk.core.reading.bracket_lists import looks_bracketed, read_bracket_lists
from agentk.core.reading.json_tables import json_frame
from agentk.core.errors import ArchiveError
from agentk.core.reading.header_rows import without_repeated_headers
from agentk.core.pictures import ARRAY_EXTENSIONS, PICTURE_EXTENSIONS, picture_form
# Imported from here by most callers; their home is record_bounds.py.
from agentk.core.reading.record_bounds import MAX_RECORD_BYTES, UnreadableTable, check_records
from agentk.core.reading.record_bounds import read_csv_header as read_csv_header
from agentk.core.sound_files import is_audio
from agentk.core.reading.tars import decompressed_head, is_tar_head

TableFormat = Literal["csv", "json", "jsonl", "parquet", "excel"]
FileKind = Literal["table", "image", "audio", "archive", "text", "other"]

IMAGE_EXTENSIONS = PICTURE_EXTENSIONS  # a file so named may be a picture; arrays are checked by shape
_SNIFF_BYTES = 64 * 1024
# How far a file's head may grow to hold a few records of a very wide table; a file with no line
# break that far in is no table of rows.
_WIDE_SNIFF_BYTES = MAX_RECORD_BYTES
_DELIMITERS = ",\t;|"
_DECIMAL_COMMA = re.compile(r"^[+-]?\d+,\d+$")
_PLAIN_NUMBER = re.compile(r"^[+-]?\d+$")
# Delimited files this large are read by Arrow (same cells, a tenth of the time); smaller ones by
# pandas' C parser alone, whose reading every test pins down.
ARROW_MIN_BYTES = 4 * 2**20
_ARROW_BLOCK_BYTES = 2**20
# Wider tables are read in one block per thread, and their first rows checked in one chunk.
WIDE_READ_COLUMNS = 1000
_ARROW_CHECK_ROWS = 500
# ... and at most this many cells: the C parser pays per column and chunk, and a check of 500 rows
# of a table 20,000 columns wide took a minute.
_ARROW_CHECK_CELLS = 200_000


def _read_head(fh: IO[bytes]) -> bytes:
    """The first _SNIFF_BYTES, or more, up to _WIDE_SNIFF_BYTES, until three records' worth of
    lines are in: a table 20,000 columns wide has a header longer than the usual window."""
    head = fh.read(_SNIFF_BYTES)
    # Only text grows: a binary file per row (audio, arrays) has NUL bytes early and no lines.
    while head.count(b"\n") < 3 and len(head) < _WIDE_SNIFF_BYTES and b"\x00" not in head[:4096]:
        more = fh.read(len(head))
        if not more:
            break
        head += more
    return head


def _head(path: Path) -> bytes:
    with open(path, "rb") as fh:
        return _read_head(fh)


def _gunzip_head(path: Path) -> bytes:
    with gzip.open(path, "rb") as fh:
        return _read_head(fh)


def file_kind(path: Path) -> FileKind:
    """What a file is, from its first bytes (extension for images, whose magic varies; arrays by
    their shape, DICOM and NumPy by their magic whatever the name)."""
    name = path.name.lower()
    if name.endswith(ARRAY_EXTENSIONS):
        return "image" if picture_form(path) is not None else "other"
    if name.endswith(IMAGE_EXTENSIONS):
        return "image"
    if is_audio(path):  # a dozen bytes: a folder of 100,000 clips is not read 64 KB at a time
        return "audio"
    try:
        head = _head(path)
    except OSError:
        return "other"
    if head[128:132] == b"DICM" or (head.startswith(b"\x93NUMPY") and picture_form(path) is not None):
        return "image"
    if head.startswith(b"PK\x03\x04"):
        return "table" if _is_xlsx(path) else "archive"
    if head.startswith(b"\x1f\x8b"):
        try:
            head = _gunzip_head(path)
        except (OSError, EOFError):
            return "other"
        if is_tar_head(head):
            return "archive"
        return "table" if _text_table_format(head, path.name) is not None else "other"
    if is_tar_head(head):
        return "archive"
    if head.startswith((b"BZh", b"\xfd7zXZ\x00")):
        inner = decompressed_head(path)
        return "archive" if inner is not None and is_tar_head(inner) else "other"
    if head.startswith(b"PAR1"):
        return "table"
    # Prose has commas too: a .txt is a table only when several lines split alike.
    if name.endswith((".md", ".txt", ".html", ".htm", ".pdf")) and not _looks_delimited(head, min_records=3) \
            and not (_is_text(head) and looks_bracketed(_decode(head))):
        return "text"
    if _text_table_format(head, path.name) is not None:
        return "table"
    return "text" if _is_text(head) else "other"


def _is_xlsx(path: Path) -> bool:
    try:
        with zipfile.ZipFile(path) as archive:
            return "[Content_Types].xml" in archive.namelist() and any(n.startswith("xl/") for n in archive.namelist())
    except (zipfile.BadZipFile, OSError):
        return False


def _is_text(head: bytes) -> bool:
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        return True  # UTF-16: NUL bytes are half its characters
    return bool(head) and b"\x00" not in head[:4096]


def _decode(data: bytes) -> str:
    """Text with any BOM removed; UTF-8 first (Kaggle's norm), else the detected encoding."""
    for bom, codec in ((b"\xef\xbb\xbf", "utf-8"), (b"\xff\xfe", "utf-16-le"), (b"\xfe\xff", "utf-16-be")):
        if data.startswith(bom):
            return data[len(bom):].decode(codec, errors="replace")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start >= len(data) - 3:  # a multi-byte character cut by the sniffing window
            return data[: exc.start].decode("utf-8")
    best = from_bytes(data).best()
    return str(best) if best is not None else data.decode("latin-1")


def _text_table_format(head: bytes, name: str = "") -> TableFormat | None:
    if not _is_text(head):
        return None
    if name.lower().endswith((".csv", ".tsv", ".csv.gz", ".tsv.gz")) and len(_decode(head).splitlines()) >= 2:
        return "csv"  # a one-column CSV (y_train) has no delimiter to sniff
    text = _decode(head).lstrip()
    if text.startswith("["):
        return "json"
    if text.startswith("{"):
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        if len(lines) > 1 and all(line.startswith("{") for line in lines[:-1][:20]):
            return "jsonl"
        return "json"
    # `rec_id,[labels]` then rows of varying length: no delimiter sniffs it (reading/bracket_lists.py).
    return "csv" if _looks_delimited(head) or looks_bracketed(text) else None


def _records(text: str, delimiter: str, limit: int = 20) -> list[int]:
    """Field counts of the first complete records (quoted fields may span lines)."""
    counts = []
    try:
        for row in csv.reader(io.StringIO(text), delimiter=delimiter):
            if row:
                counts.append(len(row))
            if len(counts) > limit:
                break
    except csv.Error:
        return []
    return counts[:-1] if len(counts) > limit else counts


def _looks_delimited(head: bytes, min_records: int = 2) -> bool:
    return _delimiter(_decode(head), min_records) is not None


def _delimiter(text: str, min_records: int = 2) -> str | None:
    """The delimiter that splits every sampled record into the same number (>1) of fields."""
    best = None
    for delimiter in _DELIMITERS:
        counts = _records(text, delimiter)
        if len(counts) > 1 and counts[-1] != counts[0]:
            counts = counts[:-1]  # the sniffing window may cut the last record
        # A header and at least one row: a single line of prose with commas is not a table.
        if len(counts) >= min_records and len(set(counts)) == 1 and counts[0] > 1 and (best is None or counts[0] > best[1]):
            best = (delimiter, counts[0])
    return best[0] if best else None


def table_format(path: Path) -> TableFormat:
    """The table format of `path`, from content; UnreadableTable when it is not a table."""
    head = _head(path)
    if head.startswith(b"PAR1"):
        return "parquet"
    if head.startswith(b"PK\x03\x04") and _is_xlsx(path):
        return "excel"
    if head.startswith(b"\x1f\x8b"):
        head = _gunzip_head(path)
    found = _text_table_format(head, path.name)
    if found is None:
        if head.startswith(b"PK\x03\x04"):
            raise UnreadableTable(f"{path.name} is a zip archive, not a table: perception unpacks it beside itself "
                                  f"({path.name.split('.')[0]}_unpacked/)")
        raise UnreadableTable(f"{path.name} is not a table (not delimited text, JSON, parquet or Excel)")
    return found


def _check_workbook(path: Path) -> None:
    """An .xlsx is a zip: the same bomb and corruption checks as any archive, before pandas inflates it."""
    try:
        with open_zip(path) as workbook:
            check_zip(workbook, None, name=path.name)  # read in memory, not to disk
    except ArchiveError as exc:
        raise UnreadableTable(str(exc)) from None


def _raw_bytes(path: Path) -> bytes:
    data = path.read_bytes()
    return gzip.decompress(data) if data.startswith(b"\x1f\x8b") else data


def _as_text_cells(frame: pd.DataFrame) -> pd.DataFrame:
    """Typed cells (JSON, parquet, Excel) as the text a CSV would hold; missing as ""."""
    out = pd.DataFrame(index=frame.index)
    for column in frame.columns:
        values = frame[column]
        gaps = values.isna().any()
        if gaps and pd.api.types.is_float_dtype(values) and values.dropna().eq(values.dropna().round()).all():
            # An integer column that gained NaNs reads as float: keep "3", not "3.0".
            text = values.map(lambda v: "" if pd.isna(v) else str(int(v)))
        else:
            text = values.map(_cell_text)
        out[str(column).strip()] = text
    return out.reset_index(drop=True)


def _cell_text(value: object) -> str:
    if value is None or (isinstance(value, float) and value != value):
        return ""
    if isinstance(value, (list, dict)):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def _one_column_delimiter(text: str) -> str | None:
    """A character absent from `text` when its header names one column, else None.

    A one-column file (a `text` column, a y_train) has no delimiter to sniff, and its cells may hold
    any character the writer did not need to quote: a `;`-separated file's sentences keep their
    commas unquoted. Splitting on a character that never occurs keeps each record whole (quotes
    still group lines), whatever the writer's delimiter was.
    """
    header = next(csv.reader(io.StringIO(text)), None)
    if header is None or len(header) != 1 or any(d in header[0] for d in _DELIMITERS):
        return None
    return next((c for c in "\x1f\x1e\x1d\x1c" if c not in text), None)


def _read_delimited(data: bytes, nrows: int | None) -> pd.DataFrame:
    check_records(data)
    text = _decode(data)
    listed = read_bracket_lists(text)
    if listed is not None:
        return listed.head(nrows) if nrows is not None else listed
    sniffed = _delimiter(text[:max(_SNIFF_BYTES, _nth_line_end(text, 3))])
    one_column = _one_column_delimiter(text) if sniffed is None else None
    delimiter = sniffed or one_column or ","
    frame = None
    if sniffed is not None and nrows is None and len(data) >= ARROW_MIN_BYTES:
        # ASCII text is its own UTF-8: the bytes read go to Arrow as they are, not a copy.
        frame = _read_with_arrow(data if data.isascii() else text.encode("utf-8"), text, delimiter)
    if frame is None:
        frame = _c_parser(text, delimiter, nrows)
    frame.columns = [str(c).strip().lstrip("\ufeff") for c in frame.columns]
    # A one-column file of "3,25" cells is European too: a comma-separated writer would have quoted them.
    if delimiter == ";" or one_column is not None:
        frame = _undo_decimal_comma(frame)
    return frame


def _arrow_block_bytes(size: int, columns: int, text: str) -> int:
    """Blocks of a hundred records at least, parsed in parallel; a wide table's, one per thread:
    Arrow pays per column and block (20,000 columns read in 8 s in seven blocks, in 4 s in two)."""
    block = max(_ARROW_BLOCK_BYTES, 40 * _nth_line_end(text, 3))
    return max(block, -(-size // pa.cpu_count())) if columns > WIDE_READ_COLUMNS else block


def _read_with_arrow(utf8: bytes, text: str, delimiter: str) -> pd.DataFrame | None:
    """The frame pandas' C parser gives from `text` (`utf8` holds it encoded), read by Arrow's
    multithreaded reader (a million rows in seconds rather than half a minute); None when Arrow
    cannot read the file or reads its first rows otherwise than the C parser does (a header pandas
    would rename, ragged rows, another reading of a quote), and the C parser reads it then."""
    header = next(csv.reader(io.StringIO(text[:_nth_line_end(text, 1)]), delimiter=delimiter), None)
    if not header or "" in header or len(set(header)) != len(header):
        return None  # pandas names these columns itself ("Unnamed: 0", "a.1")
    try:
        table = pa_csv.read_csv(
            pa.py_buffer(utf8),
            read_options=pa_csv.ReadOptions(block_size=_arrow_block_bytes(len(utf8), len(header), text)),
            parse_options=pa_csv.ParseOptions(delimiter=delimiter, quote_char='"', double_quote=True, escape_char=False,
                                              newlines_in_values=True, ignore_empty_lines=True),
            convert_options=pa_csv.ConvertOptions(column_types={c: pa.large_string() for c in header}, null_values=[],
                                                  strings_can_be_null=False, quoted_strings_can_be_null=False))
    except (pa.ArrowException, ValueError):
        return None
    if table.column_names != header:
        return None
    frame = table.to_pandas(types_mapper={pa.large_string(): pd.StringDtype("pyarrow", na_value=np.nan)}.get)
    # The C parser reads the first rows too, from a head of the text (not a copy of all of it).
    check_rows = max(2, min(_ARROW_CHECK_ROWS, _ARROW_CHECK_CELLS // len(header)))
    end = -1
    for _ in range(2 * check_rows):
        end = text.find("\n", end + 1)
        if end < 0:
            break
    try:
        head = _c_parser(text[:end + 1] if end >= 0 else text, delimiter, check_rows, whole=len(header) > WIDE_READ_COLUMNS)
    except (ValueError, pd.errors.ParserError):
        return None
    if list(head.columns) != header or not head.equals(frame.head(len(head))):
        return None
    return frame


def read_csv_text(path: str | Path, max_record_bytes: int = MAX_RECORD_BYTES,
                  columns: list[str] | None = None) -> pd.DataFrame:
    """A comma-separated file exactly as written: every cell its text, blanks kept, nothing sniffed
    or converted (a submission is read so, as Kaggle's scorer reads it). Arrow reads a large one
    (a per-pixel submission has millions of rows) when it reads it as the C parser would.
    `columns`: only those (in the file's order), read by the C parser, which converts no other
    (the grader's two answer columns of a 20,000-column train). UnreadableTable when a record runs
    past `max_record_bytes` (`check_records`)."""
    data = _raw_bytes(Path(path))
    check_records(data, max_record_bytes)
    text = data.decode("utf-8")
    if columns is not None:
        return pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False, na_filter=False, usecols=columns)
    frame = _read_with_arrow(data, text, ",") if len(data) >= ARROW_MIN_BYTES else None
    return frame if frame is not None else _c_parser(text, ",", None)


def numbers_from_text(column: pd.Series) -> pd.Series:
    """A text column's numbers, NaN where a cell is none. Arrow parses a column of millions at once;
    a cell it cannot read sends the column to pandas, which finds which cells are not numbers."""
    stripped = column.astype(str).str.strip()
    try:
        parsed = pc.cast(pa.array(stripped, type=pa.large_string()), pa.float64())
        return pd.Series(parsed.to_numpy(zero_copy_only=False), index=column.index)
    except (pa.ArrowException, TypeError, ValueError):
        return pd.to_numeric(stripped, errors="coerce")


def _c_parser(text: str, delimiter: str, nrows: int | None, whole: bool = False) -> pd.DataFrame:
    """Every cell as its text, blanks kept: how every delimited table is read (Arrow must match it).
    `whole`: in one chunk (the same cells; a wide table's chunks are a few rows, each converting
    every column again)."""
    return pd.read_csv(io.StringIO(text), sep=delimiter, dtype=str, keep_default_na=False, na_filter=False,
                       nrows=nrows, skipinitialspace=False, **({"low_memory": False} if whole else {}))


def _nth_line_end(text: str, n: int) -> int:
    """Where the n-th line ends (within the wide sniffing window), so a wide table's delimiter is
    sniffed on whole records."""
    end = -1
    for _ in range(n):
        end = text.find("\n", end + 1, _WIDE_SNIFF_BYTES)
        if end < 0:
            return min(len(text), _WIDE_SNIFF_BYTES)
    return end + 1


def _undo_decimal_comma(frame: pd.DataFrame) -> pd.DataFrame:
    """`;`-separated files are European: "3,25" is 3.25 when the whole column reads that way."""
    for column in frame.columns:
        present = frame[column][frame[column].str.strip() != ""].str.strip()
        if present.empty:
            continue
        comma = present.str.match(_DECIMAL_COMMA)
        if comma.any() and (comma | present.str.match(_PLAIN_NUMBER)).all():
            frame[column] = frame[column].str.replace(",", ".", regex=False)
    return frame


def table_columns(path: str | Path) -> list[str]:
    """The columns `read_table` names, from a delimited file's first record alone where its names
    are plain (none blank or repeated): parsing even five rows costs per column (seconds at 20,000
    columns). Other formats, and other headers, are read as `read_table` reads them."""
    path = Path(path)
    if table_format(path) not in ("parquet", "excel", "json", "jsonl"):
        data = _raw_bytes(path)
        check_records(data)
        text = _decode(data)
        delimiter = _delimiter(text[:max(_SNIFF_BYTES, _nth_line_end(text, 3))])
        first = next(csv.reader(io.StringIO(text), delimiter=delimiter), None) if delimiter else None
        if first and "" not in first and len(set(first)) == len(first):
            return [name.strip().lstrip("\ufeff") for name in first]
    return [str(c) for c in read_table(path, nrows=5).columns]


def read_table(path: str | Path, nrows: int | None = None) -> pd.DataFrame:
    """The table in `path` with every cell as text ("" when missing), whatever its format."""
    path = Path(path)
    try:
        fmt = table_format(path)
        if fmt == "parquet":
            frame = _as_text_cells(pd.read_parquet(path))
        elif fmt == "excel":
            _check_workbook(path)
            frame = _as_text_cells(pd.read_excel(path, dtype=object))
        elif fmt in ("json", "jsonl"):
            frame = _as_text_cells(json_frame(_decode(_raw_bytes(path)), lines=fmt == "jsonl"))
        else:
            frame = without_repeated_headers(_read_delimited(_raw_bytes(path), nrows))
    except UnreadableTable:
        raise
    except RecursionError:  # JSON nested deeper than Python's stack: no table a person would read
        raise UnreadableTable(f"cannot read {path.name}: nested too deeply to be a table") from None
    except (ValueError, OSError, EOFError, ImportError, pd.errors.ParserError, json.JSONDecodeError) as exc:
        raise UnreadableTable(f"cannot read {path.name}: {' '.join(str(exc).split())[:200]}") from exc
    return frame.head(nrows) if nrows is not None else frame
