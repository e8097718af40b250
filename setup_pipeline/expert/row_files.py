"""Files that belong to one row each, named by its id (`train/<id>.txt`, `essays/<id>.txt`).

Text files become a text column (their contents); other kinds (audio, binary arrays) are listed
in the notes and left out, since no simple featurisation fits them all.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from pydantic import BaseModel

ROW_TEXT_COLUMN = "file_text"
MAX_CHARS = 20_000  # a row's text is cut here: enough for TF-IDF and sentence embeddings
_MATCH = 0.9


class RowFiles(BaseModel):
    """Where each split's per-row text files are (relative to raw/); ids name them by stem or name."""

    train_dir: str
    test_dir: str
    column: str = ROW_TEXT_COLUMN


def _homes(files: list[Path]) -> list[tuple[Path, set[str]]]:
    by_dir: dict[Path, set[str]] = defaultdict(set)
    for path in files:
        by_dir[path.parent].update((path.stem, path.name))
    return sorted(by_dir.items(), key=lambda kv: -len(kv[1]))


def _home(ids: set[str], homes: list[tuple[Path, set[str]]], avoid: Path | None = None) -> Path | None:
    fits = [d for d, names in homes if ids and len(ids & names) >= _MATCH * len(ids)]
    fits.sort(key=lambda d: (d != avoid, "test" in d.as_posix().lower()), reverse=True)
    return fits[0] if fits else None


def find_row_files(raw: Path, texts: list[Path], others: list[Path], train_ids: set[str], test_ids: set[str],
                   notes: list[str]) -> RowFiles | None:
    """Per-row text files for both splits, or None; per-row files of other kinds are noted."""
    homes = _homes(texts)
    train_dir = _home(train_ids, homes)
    test_dir = _home(test_ids, homes, avoid=train_dir)
    if train_dir is not None and test_dir is not None:
        notes.append(f"each row has a text file named by its id under {train_dir.relative_to(raw).as_posix()}/ "
                     f"and {test_dir.relative_to(raw).as_posix()}/: their contents are the text input "
                     f"{ROW_TEXT_COLUMN!r}")
        return RowFiles(train_dir=train_dir.relative_to(raw).as_posix(), test_dir=test_dir.relative_to(raw).as_posix())
    other_homes = _homes(others)
    if _home(train_ids, other_homes) is not None:
        kinds = sorted({p.suffix.lower() or "(no extension)" for p in others})[:5]
        notes.append(f"per-row files of kind {', '.join(kinds)} are named by the ids; they are not used")
    return None


def read_lines(row_files: RowFiles, split: str) -> str:
    """Generated-code lines that add the per-row text column to `frame`, looked up by `ids`."""
    folder = row_files.train_dir if split == "train" else row_files.test_dir
    return (
        f"    root = RAW / {folder!r}\n"
        "    files = {}\n"
        "    for path in sorted(root.rglob('*')):\n"
        "        if path.is_file():\n"
        "            files.setdefault(path.name, path)\n"
        "            files.setdefault(path.stem, path)\n"
        f"    frame[{row_files.column!r}] = [files[i].read_text(encoding='utf-8', errors='replace')[:{MAX_CHARS}]"
        " if i in files else '' for i in ids]\n"
    )
