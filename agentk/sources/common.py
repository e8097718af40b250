"""Helpers shared by the local and MLE-bench sources: exact CSV I/O, finding the usual Kaggle
files, copying trees, grading facts from TOML, and building the agent's folder atomically."""

from __future__ import annotations

import csv
import hashlib
import os
import shutil
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

import pandas as pd
import pyarrow as pa

from agentk.core.errors import SourceError
from agentk.core import readers
from agentk.core.maps import WIDE_MAP_COLUMNS, write_text_csv
from agentk.core.readers import UnreadableTable, read_csv_text
from agentk.core.reading.markdown import headings
from agentk.core.metrics import get_metric
from agentk.sources.base import GradingFacts

# Bump when what prepare() writes changes, so older preparations are redone.
PREPARE_VERSION = "2"
MARKER_NAME = ".prepared"
DESCRIPTION_NAME = "description.md"

# Titles that Kaggle (and MLE-bench's copies) use as the first heading instead of the name.
_GENERIC_HEADINGS = {"overview", "description", "competition description"}


# ---------------------------------------------------------------- CSV files, values kept exactly

_WRITE_CELLS = 1_000_000


_UNREADABLE = (UnreadableTable, pd.errors.EmptyDataError, pd.errors.ParserError, UnicodeDecodeError, OSError)


def read_csv_exact(path: Path, shown: str, columns: list[str] | None = None) -> pd.DataFrame:
    """Read every cell as the text in the file: no TRUE→True, 1→1.0 or empty→NaN conversions,
    so whatever the harness writes back is what Kaggle shipped. The agent's bounded reader: a
    record longer than any table's is refused before parsing (SourceError, one line). `columns`:
    only those."""
    try:
        return read_csv_text(path, columns=columns)  # Arrow for a large file, cell for cell what pandas reads
    except _UNREADABLE as exc:
        raise SourceError(f"cannot read {shown}: {_one_line(exc)}") from exc


def read_csv_header(path: Path, shown: str) -> list[str]:
    """The file's column names, read from its first record alone (bounded like `read_csv_exact`)."""
    try:
        return readers.read_csv_header(path)
    except _UNREADABLE as exc:
        raise SourceError(f"cannot read {shown}: {_one_line(exc)}") from exc


def write_csv_exact(df: pd.DataFrame, path: Path) -> None:
    """The frame as pandas' `to_csv` writes it, with one line terminator everywhere (some Kaggle
    files are CRLF). A frame of text cells goes to Python's csv writer (pandas' own) in slices of
    about `_WRITE_CELLS` cells: `to_csv` converts every column once per chunk of rows, and its
    chunks shrink as the table widens (5 rows at 20,000 columns: minutes for one file)."""
    if not all(isinstance(dtype, pd.StringDtype) for dtype in df.dtypes):
        df.to_csv(path, index=False, lineterminator="\n")
        return
    if df.shape[1] > WIDE_MAP_COLUMNS and all(isinstance(c, str) for c in df.columns):
        write_text_csv(df, path, "\n")  # the same bytes, made by Arrow across all columns at once
        return
    columns = [pa.array(column) for _, column in df.items()]
    step = max(1, _WRITE_CELLS // max(1, len(columns)))
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow([str(c) for c in df.columns])
        for start in range(0, len(df), step):
            writer.writerows(zip(*(column.slice(start, step).to_pylist() for column in columns)))


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


# ---------------------------------------------------------------- finding the usual files


def _top_level_csvs(folder: Path) -> list[Path]:
    # A link out of the folder is not the competition's file (copy_tree leaves it out too).
    inside = folder.resolve()
    return sorted(
        p for p in folder.iterdir()
        if p.is_file() and p.suffix.lower() == ".csv" and p.resolve().is_relative_to(inside)
    )


def is_sample_name(path: Path) -> bool:
    name = path.name.lower()
    return "sample" in name or "submission" in name


def find_sample_csv(folder: Path) -> Path | None:
    """The sample submission: any CSV named like sample/submission (sampleSubmission.csv,
    gender_submission.csv, ...), preferring the canonical sample_submission.csv."""
    samples = [p for p in _top_level_csvs(folder) if is_sample_name(p)]
    canonical = [p for p in samples if p.name.lower() == "sample_submission.csv"]
    return (canonical or samples or [None])[0]


def _find_named_csv(folder: Path, word: str) -> Path | None:
    """`<word>.csv`, else the single non-sample CSV whose name contains `word`; None if ambiguous."""
    csvs = [p for p in _top_level_csvs(folder) if not is_sample_name(p)]
    exact = [p for p in csvs if p.name.lower() == f"{word}.csv"]
    if exact:
        return exact[0]
    loose = [p for p in csvs if word in p.stem.lower()]
    return loose[0] if len(loose) == 1 else None


def find_train_csv(folder: Path) -> Path | None:
    return _find_named_csv(folder, "train")


def find_test_csv(folder: Path) -> Path | None:
    return _find_named_csv(folder, "test")


# ---------------------------------------------------------------- copying and fingerprints


@dataclass
class CopyNotes:
    """What copy_tree left out or changed, as paths relative to the copied folder."""

    outside: list[str] = field(default_factory=list)  # links out of the folder
    broken: list[str] = field(default_factory=list)  # dangling links and link loops
    renamed: list[str] = field(default_factory=list)  # "old -> new" for names that were not UTF-8

    def warnings(self, shown: str) -> list[str]:
        """One line per kind of change, for the user (empty when the copy is exact)."""
        lines = []
        for items, what in ((self.outside, f"symbolic link(s) pointing outside {shown}/"),
                            (self.broken, "broken symbolic link(s) (dangling or looping)")):
            if items:
                lines.append(f"not copied: {len(items)} {what} ({_listed(items, shown)})")
        if self.renamed:
            lines.append(f"renamed: {len(self.renamed)} file name(s) that were not UTF-8, read as Latin-1 "
                         f"({_listed(self.renamed, shown)})")
        return lines


def _listed(items: list[str], shown: str) -> str:
    return ", ".join(f"{shown}/{name}" for name in items[:5]) + (" ..." if len(items) > 5 else "")


def utf8_name(name: str) -> str:
    """A file name as text: a name whose bytes are not UTF-8 (os.listdir gives it with surrogate
    escapes, which no UTF-8 file, log or CSV can hold) is read as cp1252, else Latin-1, the way
    such names were written on Windows and old Linux systems."""
    try:
        name.encode("utf-8")
        return name
    except UnicodeEncodeError:
        raw = os.fsencode(name)
        try:
            return raw.decode("cp1252")
        except UnicodeDecodeError:
            return raw.decode("latin-1")


def copy_tree(src: Path, dst: Path, skip: Iterable[Path] = ()) -> CopyNotes:
    """Copy file contents only: shared competition folders are often read-only, and copying
    their permissions would leave a raw/ folder that can be neither written into nor deleted.

    Symbolic links are followed only while they stay inside `src` (resolved once, so `src`
    itself may be a link): a link out of it (data/passwd -> /etc/passwd), a dangling link and a
    link loop are not copied and are listed in the notes. Sockets, pipes and devices are never
    read. A name that is not UTF-8 is copied under its Latin-1 reading (and listed).
    """
    root = Path(src).resolve()
    skipped = {Path(p).resolve() for p in skip}
    notes = CopyNotes()

    def copy_dir(real: Path, rel: Path, out: Path, ancestors: frozenset[Path]) -> None:
        out.mkdir(parents=True, exist_ok=True)
        for entry in sorted(real.iterdir()):
            name = utf8_name(entry.name)
            if name != entry.name:
                notes.renamed.append(f"{(rel / name).as_posix()}")
            try:
                target = entry.resolve(strict=True)
            except (OSError, RuntimeError):  # dangling (FileNotFoundError) or a loop (ELOOP, RuntimeError)
                notes.broken.append((rel / name).as_posix())
                continue
            if not target.is_relative_to(root):
                notes.outside.append((rel / name).as_posix())
            elif target in skipped or target in ancestors:  # a link back up would copy forever
                continue
            elif target.is_dir():
                copy_dir(target, rel / name, out / name, ancestors | {target})
            elif target.is_file():
                shutil.copyfile(target, out / name)

    copy_dir(root, Path(), Path(dst), frozenset({root}))
    return notes


def require_inside(path: Path, shown: str) -> Path:
    """`path` itself, refused when it is a link out of its own folder (description.md ->
    /etc/passwd would otherwise be read and handed to the agent)."""
    if not path.resolve().is_relative_to(path.parent.resolve()):
        raise SourceError(f"{shown} is a symbolic link to a file outside its folder; refusing to read it")
    return path


def fingerprint(files: Iterable[Path], trees: Iterable[Path], extra: str = "") -> str:
    """Hash of whole small files plus sizes/mtimes of every file in the trees: cheap even for
    thousands of images, and changes whenever the source does."""
    digest = hashlib.sha256(f"{PREPARE_VERSION}\n{extra}\n".encode("utf-8", "surrogateescape"))
    for path in files:
        digest.update(f"file {path}\n".encode("utf-8", "surrogateescape"))
        digest.update(path.read_bytes() if path.is_file() else b"<missing>")
    for tree in trees:
        for dirpath, dirnames, filenames in os.walk(tree):
            dirnames.sort()
            for name in sorted(filenames):
                path = Path(dirpath) / name
                # A dangling link has no target to stat: its own entry stands in.
                stat = path.stat() if path.exists() else path.lstat()
                rel = (Path(dirpath) / name).relative_to(tree)
                # surrogateescape: a name that is not UTF-8 hashes by its own bytes.
                digest.update(f"{tree}:{rel}:{stat.st_size}:{stat.st_mtime_ns}\n".encode("utf-8", "surrogateescape"))
    return digest.hexdigest()


def build_atomically(target: Path, stamp: str, build: Callable[[Path], None]) -> bool:
    """Run `build(tmp)` in a sibling folder and swap it in, marker last, so a killed build never
    leaves a half-written `target`. Skips (returns False) if `target` already holds `stamp`."""
    marker = target / MARKER_NAME
    if marker.is_file() and marker.read_text() == stamp:
        return False
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.parent / f".{target.name}.building"
    old = target.parent / f".{target.name}.old"
    for leftover in (tmp, old):
        if leftover.exists():
            shutil.rmtree(leftover)
    tmp.mkdir()
    try:
        build(tmp)
        (tmp / MARKER_NAME).write_text(stamp)
        if target.exists():
            target.rename(old)
        tmp.rename(target)
    finally:
        for leftover in (tmp, old):
            if leftover.exists():
                shutil.rmtree(leftover)
    return True


# ---------------------------------------------------------------- TOML and descriptions


def read_toml(path: Path, shown: str) -> dict[str, Any]:
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise SourceError(f"cannot parse {shown}: {_one_line(exc)}") from exc


def parse_grading(table: dict[str, Any], shown: str) -> GradingFacts:
    """GradingFacts from a `[grading]` table; a missing or contradictory key is one clear error."""
    where = f"{shown} [grading]"
    for key in ("metric", "id_column"):
        if not isinstance(table.get(key), str) or not table[key]:
            raise SourceError(f"{where} needs a '{key}' string")
    targets = table.get("target_columns")
    label = table.get("label_column")
    if isinstance(targets, str):
        targets = [targets]
    if bool(targets) == bool(label):
        raise SourceError(f"{where} needs exactly one of 'target_columns' or 'label_column'")
    higher = table.get("higher_is_better")
    if higher is None:
        higher = _registry_direction(table["metric"], where)
    if not isinstance(higher, bool):
        raise SourceError(f"{where} 'higher_is_better' must be true or false")
    return GradingFacts(
        metric=table["metric"],
        higher_is_better=higher,
        id_column=table["id_column"],
        target_columns=tuple(str(t) for t in targets or ()),
        label_column=str(label) if label else None,
    )


def _registry_direction(metric: str, where: str) -> bool:
    """Fall back on the metric registry when a TOML leaves the direction implicit."""
    try:
        return bool(get_metric(metric).higher_is_better)
    except Exception as exc:  # unknown metric or registry unavailable: the TOML must say it
        raise SourceError(f"{where} needs 'higher_is_better' (metric {metric!r}: {_one_line(exc)})") from exc


def decode_text(raw: bytes) -> str:
    """Bytes of a text file as a person's editor would show them: UTF-8 (with or without a byte
    order mark), else cp1252 (Windows' Western default), else Latin-1, which reads any byte;
    Windows and old Mac line ends become newlines."""
    for encoding in ("utf-8-sig", "cp1252"):
        try:
            text = raw.decode(encoding)
            break
        except UnicodeDecodeError:
            continue
    else:
        text = raw.decode("latin-1")
    return text.replace("\r\n", "\n").replace("\r", "\n")


def read_description(path: Path, shown: str) -> str:
    """The competition page's text, whatever its encoding (see decode_text); a link out of its
    folder is refused. An empty page is no page: the text says so, as for files without one."""
    text = decode_text(require_inside(path, shown).read_bytes())
    if text.strip():
        return text
    return no_page(humanise(path.resolve().parent.name), f"{shown} is empty")


def no_page(title: str, why: str) -> str:
    """The page of a competition without one: the task is read from the data, the metric assumed."""
    return "\n".join([f"# {title}", "", f"No competition page came with these files ({why}).",
                      "The task, its target and its submission format are to be read from the data files.", ""])


def title_from_description(text: str, fallback: str) -> str:
    """The first heading, unless it is Kaggle's generic 'Overview'."""
    heading = next((h.title for h in headings(text) if h.title), None)
    if heading is None:
        return fallback
    return fallback if heading.lower() in _GENERIC_HEADINGS else heading


def humanise(slug: str) -> str:
    return slug.replace("-", " ").replace("_", " ").strip().capitalize() or slug
