"""A competition's folder in plain words: Agent K's difficulty surrogate (section 3.3).

The curriculum embeds this text (MiniLM) to compare tasks by the shape of their data, and ranks
tasks by `complexity` when it knows nothing else ("the simplest tree first"). Both come from one
walk of the agent's view (`raw/`: description.md and data/...):

* the walk lists names and sizes only (one `stat` per file); files are never opened one by one;
* tables are the only files read, at most `MAX_TABLES` of them, each by its head and a newline
  count bounded by `COUNT_BYTES` (past that the row count is estimated from the head's line length
  and marked `~`); parquet by its footer;
* zip archives are summarised from their central directory, at most `MAX_ARCHIVES` of them;
* a folder with more than `LIST_LIMIT` files is summarised by count, type and size, not listed.

So a folder of 100,000 images describes in about the time it takes to list it.
"""

from __future__ import annotations

import csv
import gzip
import io
import math
import os
import zipfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from agentk.core.readers import IMAGE_EXTENSIONS, UnreadableTable, table_format

MAX_TABLES = 16
MAX_ARCHIVES = 8
LIST_LIMIT = 12
SIZE_SAMPLE = 2000  # files per folder whose size is read; the rest take the sample's mean
COUNT_BYTES = 64 * 1024 * 1024  # per table: newline counting past this is estimated
HEAD_BYTES = 64 * 1024
MAX_LINES = 40  # the text stays short: MiniLM reads ~256 word pieces, the LLM's prompt lists many trees
PAGE_NAME = "description.md"  # the competition page the source writes beside data/ (not a data file)

AUDIO_EXTENSIONS = (".wav", ".mp3", ".flac", ".ogg", ".m4a", ".aac", ".aiff", ".aif", ".opus")
TEXT_EXTENSIONS = (".txt", ".md", ".html", ".htm", ".xml", ".pdf", ".doc", ".docx", ".rtf")
TABLE_EXTENSIONS = (".csv", ".tsv", ".parquet", ".json", ".jsonl", ".xlsx", ".xls", ".csv.gz", ".tsv.gz", ".jsonl.gz")
ARCHIVE_EXTENSIONS = (".zip", ".tar", ".tar.gz", ".tgz", ".7z", ".rar", ".gz")
MODALITIES = ("tabular", "image", "text", "audio", "other")
# A table column whose sampled cells are mostly long multi-word strings is free text.
TEXT_CELL_CHARS = 40
DOC_FILES = 2


@dataclass(frozen=True)
class TreeDescription:
    text: str
    complexity: float
    stats: dict[str, float | int]


@dataclass
class _Table:
    path: str
    fmt: str
    rows: int | None = None
    columns: int | None = None
    estimated: bool = False
    free_text: bool = False


@dataclass
class _Walk:
    files: list[tuple[str, int]] = field(default_factory=list)  # (posix path under root, bytes), sorted
    folders: int = 0
    depth: int = 0


_DOUBLE = (".csv.gz", ".tsv.gz", ".jsonl.gz", ".json.gz", ".tar.gz")


def extension(name: str) -> str:
    """The lower-case type of a file name: `.csv.gz` stays whole, a name without one is `(none)`.
    Plain string work: it runs once per file of folders that hold 100,000 of them."""
    lower = name.rpartition("/")[2].lower()
    if lower.endswith(".gz"):
        for double in _DOUBLE:
            if lower.endswith(double):
                return double
    stem, dot, suffix = lower.rpartition(".")
    return f".{suffix}" if dot and stem else "(none)"


def modality_of(name: str) -> str:
    return _modality(extension(name))


def _modality(ext: str) -> str:
    if ext in IMAGE_EXTENSIONS:
        return "image"
    if ext in AUDIO_EXTENSIONS:
        return "audio"
    if ext in TABLE_EXTENSIONS:
        return "tabular"
    if ext in TEXT_EXTENSIONS:
        return "text"
    return "other"


def _walk(root: Path) -> _Walk:
    walk = _Walk()
    stack: list[tuple[Path, str, int]] = [(root, "", 0)]
    while stack:
        folder, prefix, depth = stack.pop()
        try:
            with os.scandir(folder) as entries:
                listed = sorted(entries, key=lambda e: e.name)
        except OSError:
            continue  # a folder that vanished or cannot be read is simply not described
        subfolders, files = [], []
        for entry in listed:
            if entry.name.startswith("."):
                continue  # bookkeeping (a source's `.prepared` marker), not the competition's data
            try:  # DirEntry answers both from the directory listing, without a stat per file
                if entry.is_dir(follow_symlinks=False):
                    subfolders.append((Path(entry.path), f"{prefix}{entry.name}/", depth + 1))
                elif entry.is_file():
                    files.append(entry)
            except OSError:
                continue
        if files:
            walk.files.extend(zip((f"{prefix}{e.name}" for e in files), _sizes(files), strict=True))
            walk.depth = max(walk.depth, depth)
        walk.folders += len(subfolders)
        stack.extend(reversed(subfolders))
    walk.files.sort()
    return walk


def _sizes(files: list[os.DirEntry[str]]) -> list[int]:
    """Every file's size in a small folder; in a big one, a regular sample's mean stands for the
    rest (a stat each is most of the cost of describing 100,000 images)."""
    step = math.ceil(len(files) / SIZE_SAMPLE)
    sizes: list[int | None] = [None] * len(files)
    for i in range(0, len(files), step):
        try:
            sizes[i] = files[i].stat().st_size
        except OSError:
            sizes[i] = 0
    known = [s for s in sizes if s is not None]
    mean = round(sum(known) / len(known)) if known else 0
    return [mean if s is None else s for s in sizes]


def _head(path: Path) -> bytes:
    if path.name.lower().endswith(".gz"):
        with gzip.open(path, "rb") as fh:
            return fh.read(HEAD_BYTES)
    with open(path, "rb") as fh:
        return fh.read(HEAD_BYTES)


def _text(head: bytes) -> str:
    for bom, codec in ((b"\xef\xbb\xbf", "utf-8"), (b"\xff\xfe", "utf-16-le"), (b"\xfe\xff", "utf-16-be")):
        if head.startswith(bom):
            return head[len(bom):].decode(codec, errors="replace")
    return head.decode("utf-8", errors="replace")


def _count_lines(path: Path, size: int, head: bytes) -> tuple[int, bool]:
    """Newlines in the file (exact up to COUNT_BYTES), else an estimate from the head's lines."""
    if path.name.lower().endswith(".gz") or size > COUNT_BYTES:
        sample = head.rsplit(b"\n", 1)[0] if b"\n" in head else head
        per_line = max(1.0, len(sample) / max(1, sample.count(b"\n") + 1))
        raw_size = size * 4 if path.name.lower().endswith(".gz") else size  # text compresses ~4x
        return int(raw_size / per_line), True
    count, last = 0, b"\n"
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 20):
            count += chunk.count(b"\n")
            last = chunk[-1:]
    return count + (last != b"\n"), False


def _delimited_shape(path: Path, size: int) -> tuple[int | None, int | None, bool, bool]:
    head = _head(path)
    text = _text(head)
    sample = text.rsplit("\n", 1)[0] if text.count("\n") > 1 else text
    try:
        delimiter = csv.Sniffer().sniff(sample[:8192], delimiters=",\t;|").delimiter
    except csv.Error:
        delimiter = ","
    rows = list(csv.reader(io.StringIO(sample), delimiter=delimiter))[:51]
    if not rows:
        return None, None, False, False
    columns = len(rows[0])
    lines, estimated = _count_lines(path, size, head)
    return max(0, lines - 1), columns, estimated, _has_free_text(rows[1:])


def _has_free_text(rows: list[list[str]]) -> bool:
    if not rows:
        return False
    width = max(len(r) for r in rows)
    for column in range(width):
        cells = [r[column] for r in rows if column < len(r) and r[column].strip()]
        wordy = [c for c in cells if len(c) >= TEXT_CELL_CHARS and c.count(" ") >= 4]
        if cells and len(wordy) * 2 >= len(cells):
            return True
    return False


def _table_shape(root: Path, rel: str, size: int) -> _Table | None:
    path = root / rel
    try:
        fmt = table_format(path)
    except (UnreadableTable, OSError, EOFError, ValueError):
        return None
    table = _Table(rel, fmt)
    try:
        if fmt == "parquet":
            import pyarrow.parquet as pq

            meta = pq.read_metadata(path)
            table.rows, table.columns = meta.num_rows, meta.num_columns
        elif fmt == "csv":
            table.rows, table.columns, table.estimated, table.free_text = _delimited_shape(path, size)
        elif fmt == "jsonl":
            table.rows, table.estimated = _count_lines(path, size, _head(path))
    except (OSError, EOFError, ValueError, csv.Error):
        pass  # the table is still counted; only its shape is unknown
    return table


def _archive_members(root: Path, rel: str) -> list[tuple[str, int]]:
    """(member name, uncompressed bytes) of a zip, from its central directory."""
    try:
        with zipfile.ZipFile(root / rel) as archive:
            return [(i.filename, i.file_size) for i in archive.infolist() if not i.is_dir()]
    except (zipfile.BadZipFile, OSError, ValueError):
        return []


def _size(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TB"


def _types(files: list[tuple[str, int]], ext: dict[str, str]) -> str:
    counts = Counter(ext[name] for name, _ in files)
    return ", ".join(f"{ext} ×{n}" for ext, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def _shape(table: _Table) -> str:
    if table.rows is None and table.columns is None:
        return f"{table.fmt} table"
    rows = "?" if table.rows is None else f"{'~' if table.estimated else ''}{table.rows:,}"
    cols = "?" if table.columns is None else str(table.columns)
    text = ", free text" if table.free_text else ""
    return f"{rows} rows × {cols} columns{text}"


def complexity_of(stats: dict[str, float | int]) -> float:
    """A monotone surrogate: each term grows with one count (files, types, depth, bytes,
    modalities, widest table), so adding any of them never makes a tree simpler. Counts enter on a
    log scale (100 files are not 100 times harder than one); types, depth and modalities count
    fully, since each asks for new code in the setup."""
    return round(
        math.log2(1 + float(stats["files"]))
        + float(stats["file_types"])
        + float(stats["depth"])
        + 0.5 * math.log2(1 + float(stats["bytes"]) / 1e6)
        + 2.0 * float(stats["modalities"])
        + 0.5 * math.log2(1 + float(stats["max_columns"])),
        6,
    )


def describe_tree(root: Path) -> TreeDescription:
    """The folder's layout, sizes, table shapes and modalities in a few plain sentences."""
    root = Path(root)
    walk = _walk(root)
    data_files = [(name, size) for name, size in walk.files if name != PAGE_NAME]
    ext = {name: extension(name) for name, _ in data_files}
    kind = {name: _modality(e) for name, e in ext.items()}
    total_bytes = sum(size for _, size in walk.files)

    tables: list[_Table] = []
    candidates = [(name, size) for name, size in data_files if kind[name] == "tabular"]
    # Shallow tables first: the top-level train/test files say more than the thousandth per-row file.
    for name, size in sorted(candidates, key=lambda f: (f[0].count("/"), f[0]))[:MAX_TABLES]:
        table = _table_shape(root, name, size)
        if table is not None:
            tables.append(table)

    members: list[tuple[str, int]] = []
    archives = [name for name, _ in data_files if ext[name] == ".zip"]
    for name in archives[:MAX_ARCHIVES]:
        members.extend((f"{name}:{m}", s) for m, s in _archive_members(root, name))
    member_kinds = Counter(modality_of(m) for m, _ in members if extension(m) not in ARCHIVE_EXTENSIONS)

    modality_counts = Counter(kind[name] for name, _ in data_files if ext[name] not in ARCHIVE_EXTENSIONS) + member_kinds
    # One or two text files beside tables are documentation (a data dictionary), not a text task.
    modalities = [m for m in MODALITIES if modality_counts[m] >= (DOC_FILES + 1 if m == "text" else 1)]
    if any(t.free_text for t in tables) and "text" not in modalities:
        modalities.insert(1 if "tabular" in modalities else 0, "text")  # a text column in a table is a text task too

    by_folder: dict[str, list[tuple[str, int]]] = {}
    for name, size in data_files:
        by_folder.setdefault(name.rpartition("/")[0] or ".", []).append((name, size))

    stats: dict[str, float | int] = {
        "files": len(walk.files),
        "folders": walk.folders,
        "depth": walk.depth,
        "bytes": total_bytes,
        "file_types": len(set(ext.values())),
        "modalities": len(modalities),
        "tables": len(candidates),
        "archive_members": len(members),
        "max_columns": max((t.columns or 0 for t in tables), default=0),
        "max_rows": max((t.rows or 0 for t in tables), default=0),
    }
    for modality in MODALITIES:
        stats[f"{modality}_files"] = modality_counts[modality]

    lines = [
        f"Modalities: {', '.join(modalities) or 'none'}.",
        f"{len(walk.files):,} files in {walk.folders:,} folders, nesting depth {walk.depth}, {_size(total_bytes)} in all.",
        f"File types: {_types(data_files, ext) or 'none'}.",
    ]
    shapes = {t.path: t for t in tables}
    for folder, files in sorted(by_folder.items(), key=lambda kv: (kv[0].count("/"), kv[0])):
        where = "top level" if folder == "." else f"folder {folder}/"
        if len(files) > LIST_LIMIT:
            most = Counter(kind[n] for n, _ in files).most_common(1)[0][0]
            lines.append(f"{where}: {len(files):,} files, mostly {most} ({_types(files, ext)}), {_size(sum(s for _, s in files))}.")
            continue
        described = []
        for name, size in files:
            detail = _shape(shapes[name]) if name in shapes else _size(size)
            described.append(f"{name.rpartition('/')[2]} ({detail})")
        lines.append(f"{where}: {'; '.join(described)}.")
    if members:
        lines.append(f"Inside {len(archives)} zip archive(s): {len(members):,} files ("
                     + ", ".join(f"{n:,} {k}" for k, n in member_kinds.most_common()) + f"), {_size(sum(s for _, s in members))} unpacked.")
    if len(lines) > MAX_LINES:
        lines = lines[: MAX_LINES - 1] + [f"… {len(lines) - MAX_LINES + 1} more folders."]
    return TreeDescription(text="\n".join(lines), complexity=complexity_of(stats), stats=stats)
