"""A compact, bounded view of raw/ for prompts (Agent K, section 3.1.2: the DATA-VIEW entry).

Three parts: a directory tree whose long listings are elided ("... <N additional files>"), then
for each table (any format perception reads: CSV, JSON, parquet, ...) its shape, dtypes and first rows. The whole view fits a character budget, so
a competition with 100k images or 40 tables cannot crowd the rest of the prompt out.
"""

from __future__ import annotations

import io
from pathlib import Path

import pandas as pd

from agentk.llm.memory import truncate_middle
from agentk.core.pictures import ARRAY_EXTENSIONS, array_shape, npz_shapes
from agentk.core.readers import IMAGE_EXTENSIONS, UnreadableTable, file_kind, read_table, table_format
from agentk.core.sound_files import AUDIO_EXTENSIONS

_SKIP_NAMES = {"description.md"}  # the description has its own memory entry


def directory_tree(root: Path, *, max_entries: int = 8, max_depth: int = 4) -> str:
    """An indented listing of `root`: directories first, at most `max_entries` per folder."""
    lines = [f"{root.name}/"]
    _walk(root, 1, lines, max_entries, max_depth)
    return "\n".join(lines)


def _walk(folder: Path, depth: int, lines: list[str], max_entries: int, max_depth: int) -> None:
    try:
        children = sorted((c for c in folder.iterdir() if not c.name.startswith(".")), key=lambda p: (not p.is_dir(), p.name))
    except OSError as exc:
        lines.append(f"{'  ' * depth}<unreadable: {exc.strerror}>")
        return
    indent = "  " * depth
    dirs = [c for c in children if c.is_dir()]
    files = [c for c in children if not c.is_dir()]
    for child in dirs[:max_entries]:
        count = _count_files(child)
        lines.append(f"{indent}{child.name}/  ({count} files)")
        if depth < max_depth:
            _walk(child, depth + 1, lines, max_entries, max_depth)
    if len(dirs) > max_entries:
        lines.append(f"{indent}... <{len(dirs) - max_entries} additional folders>")
    for child in files[:max_entries]:
        lines.append(f"{indent}{child.name}  ({_size(child)})")
    if len(files) > max_entries:
        lines.append(f"{indent}... <{len(files) - max_entries} additional files>")


def _count_files(folder: Path, cap: int = 100_000) -> str:
    count = 0
    for path in folder.rglob("*"):
        if path.is_file():
            count += 1
            if count >= cap:
                return f"{cap}+"
    return str(count)


def _size(path: Path) -> str:
    try:
        size = float(path.stat().st_size)
    except OSError:
        return "?"
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return "?"


def _row_count(path: Path, max_bytes: int = 200_000_000) -> str:
    """Data rows (lines minus the header) for files small enough to count; else 'unknown'."""
    try:
        if path.stat().st_size > max_bytes:
            return "unknown (large file)"
        with path.open("rb") as handle:
            lines = sum(1 for _ in handle)
    except OSError:
        return "unknown"
    return str(max(lines - 1, 0))


def table_summary(path: Path, root: Path, *, rows: int = 5, max_width: int = 160) -> str:
    """Format, shape, dtypes and head of one table (any format perception reads). Dtypes are
    inferred from the first 2000 rows."""
    rel = path.relative_to(root).as_posix()
    try:
        fmt = table_format(path)
        # Delimited text is parsed for its head only and its lines counted; other formats are
        # read whole anyway, so their length comes from the same read.
        cells = read_table(path, nrows=2000 if fmt == "csv" else None)
    except UnreadableTable as exc:
        return f"### {rel}\nunreadable as a table: {exc}"
    # Typed as a CSV reader would see them, so the model writes code for what pandas gives it.
    sample = pd.read_csv(io.StringIO(cells.head(2000).to_csv(index=False)), low_memory=False)
    dtypes = ", ".join(f"{c}: {t}" for c, t in sample.dtypes.astype(str).items())
    with pd.option_context("display.width", max_width, "display.max_columns", 30, "display.max_colwidth", 40):
        head = cells.head(rows).to_string(index=False)  # as written: ids keep their leading zeros
    head = "\n".join(line[:max_width] for line in head.splitlines())
    return (
        f"### {rel}\nformat: {fmt} (read it with agentk.core.readers.read_table), "
        f"rows: {_row_count(path) if fmt == 'csv' else len(cells)}, columns: {sample.shape[1]}\n"
        f"dtypes: {truncate_middle(dtypes, 1200)}\nhead:\n{head}"
    )


def tables(raw: Path, *, max_tables: int = 8) -> list[Path]:
    """Tables under raw/, shallowest first (train/test/sample before nested annotation files)."""
    found = [p for p in raw.rglob("*") if p.is_file() and p.name not in _SKIP_NAMES
             and not p.name.lower().endswith(IMAGE_EXTENSIONS + AUDIO_EXTENSIONS) and file_kind(p) == "table"]
    found.sort(key=lambda p: (len(p.relative_to(raw).parts), p.as_posix()))
    return found[:max_tables]


def arrays(raw: Path, *, max_files: int = 8) -> str:
    """The shapes of the NumPy arrays under raw/ (headers only), shallowest first: an array of N
    pictures beside a table of N rows holds one picture per row."""
    found = sorted((p for p in raw.rglob("*") if p.is_file() and p.name.lower().endswith(ARRAY_EXTENSIONS)),
                   key=lambda p: (len(p.relative_to(raw).parts), p.as_posix()))
    lines = []
    for path in found[:max_files]:
        shapes = npz_shapes(path) if path.name.lower().endswith(".npz") else {"": array_shape(path) or ()}
        listed = ", ".join(f"{name + ': ' if name else ''}{'x'.join(map(str, shape)) or '?'}" for name, shape in shapes.items())
        lines.append(f"{path.relative_to(raw).as_posix()}  shape {listed}")
    if len(found) > max_files:
        lines.append(f"... <{len(found) - max_files} additional arrays>")
    if not lines:
        return ""
    return "## Arrays\n" + "\n".join(lines) + "\n(read a picture of any form with agentk.core.pictures.load_picture)"


def build_data_view(raw: Path, *, max_chars: int = 6000, rows: int = 5, max_entries: int = 8) -> str:
    """The DATA-VIEW memory entry for `raw` (the workspace's raw/ folder), at most `max_chars` long.

    The tree keeps at most a third of the budget; the tables share the rest in order, so the
    first tables (usually train and test) are shown whole before later ones are cut."""
    tree = truncate_middle(directory_tree(raw, max_entries=max_entries), max_chars // 3)
    parts = [f"## Files\n{tree}"]
    shapes = truncate_middle(arrays(raw), max_chars // 6)
    if shapes:
        parts.append(shapes)
    listed = tables(raw)
    remaining = max_chars - sum(len(part) + 2 for part in parts)
    for index, path in enumerate(listed):
        if path.name in _SKIP_NAMES:
            continue
        block = table_summary(path, raw, rows=rows)
        if len(block) + 2 > remaining:
            left = len(listed) - index
            if remaining > 200:
                parts.append(truncate_middle(block, remaining - 60))
                left -= 1
            if left:
                parts.append(f"... <{left} additional tables not shown>")
            break
        parts.append(block)
        remaining -= len(block) + 2
    view = "\n\n".join(parts)
    return truncate_middle(view, max_chars)
