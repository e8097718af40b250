"""Labelled time windows inside long recordings: the convention the setup's perception, the maps it
writes and the solver share, written once.

Kaggle's bird-song competitions (BirdCLEF, every year) ask for one submission row per window of
each test recording, `<recording>_<second>` (the window's end second, or its start), holding a
probability per class. Every map stays one row per window: the audio maps name the recording
(`audio_path`) and the window inside it (`start_s`, `end_s`, in seconds), so the solver reads each
window as a clip of its own; training clips are cut into windows the same way, each window carrying
its clip's label.
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


def recording_index(paths: Iterable[Path]) -> dict[str, Path]:
    """Each recording by its file stem (the first found of a repeated stem)."""
    index: dict[str, Path] = {}
    for path in sorted(paths, key=lambda p: p.as_posix()):
        index.setdefault(path.stem, path)
    return index


def find_recording(name: str, index: dict[str, Path]) -> Path | None:
    """The recording a row id's name part names: its stem, or the one stem it begins (BirdCLEF 2021
    wrote `<id>_<site>` for the file `<id>_<site>_<date>.ogg`)."""
    if name in index:
        return index[name]
    longer = [stem for stem in index if stem.startswith(name + "_")]
    return index[longer[0]] if len(longer) == 1 else None


def clip_index(paths: Iterable[Path]) -> dict[str, Path]:
    """Each clip by its file name and by `<folder>/<file name>`, the ways a training table names one."""
    index: dict[str, Path] = {}
    for path in sorted(paths, key=lambda p: p.as_posix()):
        index.setdefault(f"{path.parent.name}/{path.name}", path)
        index.setdefault(path.name, path)
    return index


def find_clip(cell: object, index: dict[str, Path]) -> Path | None:
    """The clip a table cell names (`XC1234.ogg`, `<label>/XC1234.ogg`, `train_audio/<label>/XC1234.ogg`)."""
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


def window_name(clip: int, window: tuple[float, float]) -> str:
    """A training window's id, `clip<number>_<end second>`: the part before the first `_` names the
    clip whatever its file is called, so the solver's folds keep a clip's windows together."""
    return f"clip{clip}_{int(round(window[1]))}"


def labelled_windows(clips: Iterable[tuple[Path, str]], step: float,
                     most: int = TRAIN_WINDOWS_PER_CLIP) -> pd.DataFrame:
    """A row per training window (`id`, `path`, `start_s`, `end_s`, `label`) of each labelled clip,
    its duration read from its header; a clip listed twice counts once, an unreadable one not at all."""
    import soundfile

    rows, seen = [], set()
    for path, label in clips:
        if path in seen:
            continue
        seen.add(path)
        try:
            duration = soundfile.info(str(path)).duration
        except (RuntimeError, OSError):  # a broken clip costs its windows, not the map
            continue
        number = len(seen) - 1
        for window in clip_windows(duration, step, most):
            rows.append((window_name(number, window), path, *window, label))
    return pd.DataFrame(rows, columns=["id", "path", START_COLUMN, END_COLUMN, "label"])


def sample_windows(ids: Iterable[str], recordings: Iterable[Path], step: float, numbering: Numbering) -> pd.DataFrame:
    """A row per window a sample lists (`id`, `path`, `start_s`, `end_s`), in its order; ValueError
    when an id is not a window of one of the recordings."""
    index = recording_index(recordings)
    rows, unknown = [], []
    for value in ids:
        parts = split_window_id(value)
        path = find_recording(parts[0], index) if parts else None
        if parts is None or path is None:
            unknown.append(value)
            continue
        rows.append((value, path, *window_bounds(parts[1], step, numbering)))
    if unknown:
        raise ValueError(f"{len(unknown)} row ids are not windows of the recordings, e.g. {unknown[:3]}")
    return pd.DataFrame(rows, columns=["id", "path", START_COLUMN, END_COLUMN])
