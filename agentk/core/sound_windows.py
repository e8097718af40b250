"""Labelled time windows inside long recordings: the convention the setup's perception, the maps it
writes and the solver share, written once.

Kaggle's bird-song competitions (BirdCLEF, every year) ask for one submission row per window of
each test recording, `<recording>_<second>` (the window's end second, or its start), holding a
probability per class. Every map stays one row per window: the audio maps name the recording
(`audio_path`) and the window inside it (`start_s`, `end_s`, in seconds), so the solver reads each
window as a clip of its own; training clips are cut into windows the same way, each window carrying
its clip's label, and so are the labelled spans of long training recordings a table may list.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Literal

import pandas as pd

START_COLUMN, END_COLUMN = "start_s", "end_s"  # a window's bounds in an audio map, in seconds
WINDOW_ID = re.compile(r"^(?P<recording>.+)_(?P<second>\d+)$")
# Training windows taken per clip, spread over it from its start: a recordist keeps the labelled
# bird near the start, and a clip's later minutes add more of the same bird than of new ones.
TRAIN_WINDOWS_PER_CLIP = 3
Numbering = Literal["end", "start"]


def split_window_id(value: object) -> tuple[str, int] | None:
    """(recording, second) of a window's row id, or None when it is not `<recording>_<number>`."""
    found = WINDOW_ID.match(str(value).strip())
    return (found.group("recording"), int(found.group("second"))) if found else None


def window_bounds(second: int, step: float, numbering: Numbering) -> tuple[float, float]:
    """A window's (start, end) in seconds from the number its row id carries."""
    start = second - step if numbering == "end" else float(second)
    return max(0.0, float(start)), float(start + step)


def sound_index(paths: Iterable[Path]) -> dict[str, Path]:
    """Each recording by every way a table or a row id names one: `<folder>/<file name>`, its file
    name, its stem, and a leading part of its stem ending before a `_` that no other stem shares
    (BirdCLEF 2021 wrote `7019_COR` and `7019` for the file `7019_COR_20190904.ogg`)."""
    ordered = sorted(paths, key=lambda p: p.as_posix())
    index: dict[str, Path] = {}
    for path in ordered:
        for key in (f"{path.parent.name}/{path.name}", path.name, path.stem):
            index.setdefault(key, path)
    prefixes: dict[str, set[Path]] = {}
    for path in ordered:
        parts = path.stem.split("_")
        for k in range(1, len(parts)):
            prefixes.setdefault("_".join(parts[:k]), set()).add(path)
    for prefix, found in prefixes.items():
        if len(found) == 1 and prefix not in index:
            index[prefix] = next(iter(found))
    return index


def find_sound(cell: object, index: dict[str, Path]) -> Path | None:
    """The recording a table cell or a row id's name part names (`XC1234.ogg`, `<label>/XC1234.ogg`,
    `train_audio/<label>/XC1234.ogg`, `soundscape_12`), or None."""
    parts = Path(str(cell).strip()).parts
    if not parts:
        return None
    return index.get("/".join(parts[-2:])) or index.get(parts[-1])


def clip_windows(duration: float, step: float, most: int = TRAIN_WINDOWS_PER_CLIP) -> list[tuple[float, float]]:
    """Up to `most` windows of `step` seconds inside a clip of `duration` seconds, spread evenly
    from its start; a clip shorter than one window is one window (read as far as it goes)."""
    whole = max(1, int(math.floor(duration / step + 1e-6)))
    taken = min(most, whole)
    picks = sorted({(i * (whole - 1)) // max(1, taken - 1) for i in range(taken)})
    return [(k * step, (k + 1) * step) for k in picks]


def span_windows(span: tuple[float, float], step: float, most: int = TRAIN_WINDOWS_PER_CLIP) -> list[tuple[float, float]]:
    """Windows inside a labelled span of a recording: up to `most` spread over it, or, for a span
    shorter than a window, one window centred on it (as long as a test window)."""
    start, end = span
    if end - start < step:
        begin = max(0.0, (start + end - step) / 2)
        return [(begin, begin + step)]
    return [(start + a, start + b) for a, b in clip_windows(end - start, step, most)]


def table_spans(table: pd.DataFrame, start_column: str | None, end_column: str | None, step: float,
                numbering: Numbering) -> list[tuple[float, float] | None]:
    """Each training table row's labelled span in seconds: its start and end columns, or the one
    column of window numbers read as the sample reads its ids; None where the row names a whole clip."""
    if start_column is None and end_column is None:
        return [None] * len(table)
    if start_column is not None and end_column is not None:
        bounds = zip(pd.to_numeric(table[start_column], errors="coerce"), pd.to_numeric(table[end_column], errors="coerce"))
        return [(float(a), float(b)) if b > a >= 0 else None for a, b in bounds]
    seconds = pd.to_numeric(table[start_column or end_column], errors="coerce")
    return [window_bounds(int(v), step, numbering) if v >= 0 else None for v in seconds]


def window_name(clip: int, window: tuple[float, float]) -> str:
    """A training window's id, `clip<number>_<end second>`: the part before the first `_` names the
    clip whatever its file is called, so the solver's folds keep a clip's windows together."""
    return f"clip{clip}_{int(round(window[1]))}"


def labelled_windows(rows: Iterable[tuple[Path, str, tuple[float, float] | None]], step: float,
                     most: int = TRAIN_WINDOWS_PER_CLIP) -> pd.DataFrame:
    """A row per training window (`id`, `path`, `start_s`, `end_s`, `label`) of each labelled clip
    (span None: up to `most` windows over its whole length, read from its header) or labelled span
    of a recording; a window listed twice counts once, an unreadable clip not at all."""
    import soundfile

    out, numbers, seen = [], {}, set()
    for path, label, span in rows:
        if span is None:
            try:
                windows = clip_windows(soundfile.info(str(path)).duration, step, most)
            except (RuntimeError, OSError):  # a broken clip costs its windows, not the map
                continue
        else:
            windows = span_windows(span, step, most)
        number = numbers.setdefault(path, len(numbers))
        for window in windows:
            name = window_name(number, window)
            if name not in seen:
                seen.add(name)
                out.append((name, path, *window, label))
    return pd.DataFrame(out, columns=["id", "path", START_COLUMN, END_COLUMN, "label"])


def sample_windows(ids: Iterable[str], recordings: Iterable[Path], step: float, numbering: Numbering) -> pd.DataFrame:
    """A row per window a sample lists (`id`, `path`, `start_s`, `end_s`), in its order; ValueError
    when an id is not a window of one of the recordings."""
    index = sound_index(recordings)
    rows, unknown = [], []
    for value in ids:
        parts = split_window_id(value)
        path = find_sound(parts[0], index) if parts else None
        if parts is None or path is None:
            unknown.append(value)
            continue
        rows.append((value, path, *window_bounds(parts[1], step, numbering)))
    if unknown:
        raise ValueError(f"{len(unknown)} row ids are not windows of the recordings, e.g. {unknown[:3]}")
    return pd.DataFrame(rows, columns=["id", "path", START_COLUMN, END_COLUMN])
