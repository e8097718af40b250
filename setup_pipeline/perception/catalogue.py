"""A catalogue of every file under raw/data: what each is (from content), and every table read.

Archives are unpacked first, safely (`agentk.core.reading.archives` checks them before a byte is written), into a
folder beside them (`<name>_unpacked/`), once; the catalogue then lists their members like any other
file. An archive that is refused or corrupt is skipped and named, and the rest of the data is used. Only tables are opened in full: images,
sound clips and other per-row files are listed by path, so a folder of 10,000 images takes a directory walk.
"""

from __future__ import annotations

import os
import shutil
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pandas as pd

from agentk.core.reading.archives import ArchiveLimits, extract_archive, gunzip_file
from agentk.core.errors import ArchiveError
from agentk.core.reading.bracket_lists import READ_AS
from agentk.core.reading.header_rows import REPEATED_HEADER_ROWS
from agentk.core.readers import IMAGE_EXTENSIONS, FileKind, UnreadableTable, file_kind, read_table
from setup_pipeline.perception.stacks import PictureStack, find_stacks

UNPACKED_SUFFIX = "_unpacked"
MAX_NESTING = 4  # archives inside archives, unpacked level by level
_LIMITS = ArchiveLimits(max_total_bytes=20 * 2**30)  # an archive inside the data is one file of it
_TABLE_BYTES_LIMIT = 2 * 2**30  # bigger tables are listed, not read, during perception


@dataclass
class Table:
    path: Path  # relative to raw/
    frame: pd.DataFrame  # every cell as text

    @property
    def columns(self) -> list[str]:
        return list(self.frame.columns)

    @property
    def name(self) -> str:
        return self.path.name


@dataclass
class Catalogue:
    raw: Path
    tables: list[Table] = field(default_factory=list)
    images: list[Path] = field(default_factory=list)  # absolute paths
    stacks: list[PictureStack] = field(default_factory=list)  # arrays of N pictures beside a table of N rows
    audio: list[Path] = field(default_factory=list)  # sound clips, recognised by content; absolute paths
    texts: list[Path] = field(default_factory=list)  # description-like or per-row text files
    others: list[Path] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # archives not unpacked: "<path>: <why>"

    def summary(self) -> str:
        parts = [f"{len(self.tables)} table(s)"]
        if self.images:
            exts = Counter(p.suffix.lower() for p in self.images)
            parts.append(f"{len(self.images)} image(s) ({', '.join(e for e, _ in exts.most_common(3))})")
        if self.stacks:
            parts.append(f"{len(self.stacks)} stacked picture array(s) ({sum(s.count for s in self.stacks)} pictures)")
        if self.audio:
            exts = Counter(p.suffix.lower() for p in self.audio)
            parts.append(f"{len(self.audio)} audio clip(s) ({', '.join(e for e, _ in exts.most_common(3))})")
        if self.texts:
            parts.append(f"{len(self.texts)} text file(s)")
        if self.others:
            parts.append(f"{len(self.others)} other file(s)")
        if self.skipped:
            # When nothing usable is left, the reason is often here: name it in the one error line.
            parts.append(f"{len(self.skipped)} skipped: {'; '.join(self.skipped[:3])}")
        return ", ".join(parts)


def _walk(root: Path) -> list[Path]:
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith((".", "__MACOSX")))
        found += [Path(dirpath) / n for n in sorted(filenames) if not n.startswith(".")]
    return found


def _kind(path: Path, known: dict[Path, FileKind]) -> FileKind:
    """`file_kind`, read once per file: the archive passes and the catalogue walk the same tree,
    and 30,000 clips sniffed three times cost a minute of setup."""
    kind = known.get(path)
    if kind is None:
        kind = known[path] = file_kind(path)
    return kind


def unpack_archives(data: Path, notes: list[str], skipped: list[str] | None = None,
                    known: dict[Path, FileKind] | None = None) -> None:
    """Unpack every zip (and gzip of a non-table) under data/ beside itself; an archive that is
    refused or unreadable is named in `notes` and `skipped`, not fatal. `known` keeps each file's
    kind for the caller's own walk."""
    skipped = skipped if skipped is not None else []
    known = known if known is not None else {}

    def skip(path: Path, exc: Exception) -> None:
        # ArchiveError messages name the archive and say why; an OSError (disk full ...) does not.
        why = str(exc) if isinstance(exc, ArchiveError) else f"could not be unpacked ({exc})"
        line = f"data/{path.relative_to(data).as_posix()} — {why}"
        notes.append(f"skipped {line}")
        skipped.append(line)

    # An archive inside an archive (a download of zipped tables, zipped again) is unpacked too, to
    # MAX_NESTING levels, every level checked alike and all of them sharing one size cap.
    left = _LIMITS.max_total_bytes
    for _level in range(MAX_NESTING):
        unpacked = False
        for path in _walk(data):
            if path.name.lower().endswith(IMAGE_EXTENSIONS) or _kind(path, known) != "archive":
                continue
            dest = path.with_name(path.name.split(".")[0] + UNPACKED_SUFFIX)
            if dest.exists():
                continue
            try:
                written = extract_archive(path, dest, _LIMITS.model_copy(update={"max_total_bytes": max(left, 0)}))
                left -= sum(p.stat().st_size for p in written if p.is_file())
                notes.append(f"unpacked {path.relative_to(data)} into {dest.relative_to(data)}/")
                unpacked = True
            except (ArchiveError, OSError) as exc:
                shutil.rmtree(dest, ignore_errors=True)
                skip(path, exc)
        if not unpacked:
            break
    for path in _walk(data):
        if path.suffix.lower() == ".gz" and _kind(path, known) == "other" and not path.with_suffix("").exists():
            try:
                gunzip_file(path, path.with_suffix(""), _LIMITS)
            except (ArchiveError, OSError) as exc:
                skip(path, exc)


def build_catalogue(raw: Path, checkpoint: Callable[[str], None] | None = None) -> Catalogue:
    """Every file under raw/data, by kind, with its tables read (cells as text). `checkpoint(step)`
    is called before each table is read, and may raise to stop there."""
    raw = Path(raw)
    catalogue = Catalogue(raw=raw)
    data = raw / "data"
    if not data.is_dir():
        return catalogue
    known: dict[Path, FileKind] = {}
    unpack_archives(data, catalogue.notes, catalogue.skipped, known)
    kinds: dict[FileKind, list[Path]] = {"table": [], "image": [], "audio": [], "archive": [], "text": [], "other": []}
    for path in _walk(data):
        kinds[_kind(path, known)].append(path)
    catalogue.images = kinds["image"]
    catalogue.audio = kinds["audio"]
    catalogue.texts = kinds["text"]
    catalogue.others = kinds["other"]
    for path in kinds["table"]:
        if path.stat().st_size > _TABLE_BYTES_LIMIT:
            catalogue.notes.append(f"{path.relative_to(raw)} is over {_TABLE_BYTES_LIMIT >> 30} GB: not read")
            continue
        if checkpoint is not None:
            checkpoint(f"reading {path.relative_to(raw).as_posix()}")
        try:
            frame = read_table(path)
        except UnreadableTable as exc:
            # Named in the summary too: when the unreadable file was the training table, the one
            # error line must say which file and why.
            why = str(exc).removeprefix(f"cannot read {path.name}: ")
            catalogue.notes.append(str(exc))
            catalogue.skipped.append(f"{path.relative_to(raw).as_posix()} — {why}")
            continue
        if frame.columns.empty:
            continue
        repeated = frame.attrs.get(REPEATED_HEADER_ROWS)
        if repeated:
            where = ", ".join(map(str, repeated[:5])) + (" ..." if len(repeated) > 5 else "")
            catalogue.notes.append(f"warning: {path.relative_to(raw).as_posix()}: {len(repeated)} row(s) repeating the "
                                   f"header dropped (line {where}): two exports concatenated")
        if frame.attrs.get(READ_AS):
            catalogue.notes.append(f"{path.relative_to(raw).as_posix()}: {frame.attrs[READ_AS]}")
        catalogue.tables.append(Table(path.relative_to(raw), frame))
    _find_stacks(catalogue)
    return catalogue


def _find_stacks(catalogue: Catalogue) -> None:
    """Arrays of N pictures beside a table of N rows leave the file lists: they are pictures, one
    per row, once the setup unpacks them (setup_pipeline.perception.stacks)."""
    rows = {len(t.frame) for t in catalogue.tables}
    catalogue.stacks = find_stacks(catalogue.images + catalogue.others, rows)
    stacked = {s.path for s in catalogue.stacks}
    catalogue.images = [p for p in catalogue.images if p not in stacked]
    catalogue.others = [p for p in catalogue.others if p not in stacked]
    for stack in catalogue.stacks:
        tables = [t.path.as_posix() for t in catalogue.tables if len(t.frame) == stack.count]
        catalogue.notes.append(f"{stack.label(catalogue.raw)} holds {stack.count} pictures of shape "
                               f"{'x'.join(map(str, stack.shape[1:]))}, as many as the rows of {', '.join(tables[:3])}")
