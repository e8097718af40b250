"""Labelled time windows inside long recordings, recognised by structure (never by names): a table
whose first column holds `<recording>_<number>` for recordings of one folder, the numbers stepping
evenly and as many per recording as its duration holds windows, the other columns one per class;
and training clips labelled by those classes, by a table naming each clip's file and label or by
the folders they sit in (`<folder>/<label>/<clip>`). The convention itself is
`agentk.core.sound_windows`.
"""

from __future__ import annotations

import math
import os
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
import pandas as pd
from pydantic import BaseModel

from agentk.core.sound_windows import Numbering, find_sound, sound_index, split_window_id

_PARSED = 0.95  # of a sample's ids spelt `<recording>_<number>`
_FOUND = 0.9  # of its recordings found in one folder; of the training clips labelled by a class
_CHECKED = 12  # recordings whose headers confirm the row count


class WindowShape(BaseModel):
    """A windowed sound task; paths relative to raw/."""

    sample: str
    id_column: str
    classes: list[str]  # the sample's probability columns, in its order
    test_dir: str  # the long test recordings
    n_recordings: int
    n_rows: int
    window_s: int  # the step between windows, and each window's length
    numbering: Numbering  # what the number of a row id is: the window's end second or start
    train_dir: str  # the folder holding every training clip
    n_train_clips: int
    train_table: str | None = None  # clip file -> label; None: the clip's folder is its label
    file_column: str | None = None
    label_column: str | None = None
    start_column: str | None = None  # a table labelling spans of recordings: their bounds in seconds
    end_column: str | None = None
    trained_classes: list[str] = []  # the classes some training clip carries

    def describe(self) -> str:
        return (f"windows: {self.n_recordings} recordings, {self.window_s}-second windows, "
                f"{len(self.classes)} classes")


def _sample_windows(frame: pd.DataFrame) -> tuple[str, pd.DataFrame] | None:
    """(id column, frame of recording and second per row) when the first column holds window ids
    and every other a number per row (a probability per class, a placeholder in the sample)."""
    if frame.shape[1] < 2 or frame.empty:
        return None
    id_column, head = str(frame.columns[0]), frame.head(1000)
    if sum(split_window_id(v) is not None for v in head[id_column]) < _PARSED * len(head):
        return None  # most tables are told at a glance, without parsing a million ids
    if any(pd.to_numeric(head[c], errors="coerce").notna().mean() < _PARSED for c in frame.columns[1:]):
        return None
    parts = [split_window_id(v) for v in frame[id_column]]
    if sum(p is not None for p in parts) < _PARSED * len(parts):
        return None
    rows = pd.DataFrame([p for p in parts if p is not None], columns=["recording", "second"])
    return id_column, rows


def _step(rows: pd.DataFrame) -> tuple[int, Numbering] | None:
    """The even step between a recording's window numbers, and whether they count ends or starts."""
    steps: Counter = Counter()
    firsts: Counter = Counter()
    for _, seconds in rows.groupby("recording")["second"]:
        ordered = np.sort(seconds.unique())
        firsts[int(ordered[0])] += 1
        steps.update(int(d) for d in np.diff(ordered))
    if not steps:
        return None
    step, n = steps.most_common(1)[0]
    if step <= 0 or n < 0.9 * sum(steps.values()):
        return None
    first = firsts.most_common(1)[0][0]
    if first == 0:
        return step, "start"
    if first == step:
        return step, "end"
    return None


def _durations_agree(recordings: dict[str, Path], counts: pd.Series, step: int, notes: list[str]) -> bool:
    """Whether each checked recording's duration holds as many windows as the sample lists for it."""
    import soundfile

    checked, agree = 0, 0
    for name in list(counts.index)[:_CHECKED]:
        try:
            duration = soundfile.info(str(recordings[name])).duration
        except (RuntimeError, OSError):
            continue
        checked += 1
        agree += abs(math.ceil(duration / step - 1e-6) - int(counts[name])) <= 1
    if checked and agree < 0.75 * checked:
        notes.append(f"window ids name recordings, but only {agree} of {checked} recordings last as many "
                     f"{step}-second windows as the sample lists: not read as windows")
        return False
    return True


def _label_table(tables: list, clips: list[Path], classes: set[str], skip: str) -> tuple | None:
    """(table, file column, label column, [(clip, label) per row]) of a table naming training clips
    (or recordings) and their classes."""
    index = sound_index(clips)
    for table in tables:
        frame: pd.DataFrame = table.frame
        if table.path.as_posix() == skip or frame.empty:
            continue
        head = frame.head(2000)
        files = [c for c in frame.columns
                 if sum(find_sound(v, index) is not None for v in head[c]) >= _FOUND * len(head)]
        labels = [c for c in frame.columns if c not in files
                  and frame[c].astype(str).str.strip().isin(classes).mean() >= _FOUND]
        if files and labels:
            rows = [(find_sound(v, index), label.strip()) for v, label in zip(frame[files[0]], frame[labels[0]].astype(str))]
            return table, str(files[0]), str(labels[0]), rows
    return None


def _span_columns(frame: pd.DataFrame, taken: set[str], rows: list[tuple], step: int,
                  numbering: str) -> tuple[str | None, str | None]:
    """(start, end) columns of a table whose rows label spans of their recordings (several rows per
    recording): two columns of seconds, the second after the first, or one of window numbers
    stepping like the sample's; every span inside its recording (checked on a few headers)."""
    import soundfile

    recordings = {p for p, _ in rows if p is not None}
    if len(rows) < 1.5 * len(recordings):
        return None, None  # a row per clip: its metadata (coordinates, ratings), not spans of it
    numbers = {c: pd.to_numeric(frame[c], errors="coerce") for c in frame.columns if c not in taken}
    numbers = {c: v for c, v in numbers.items() if v.notna().mean() >= _PARSED and (v >= 0).mean() >= _PARSED}
    if not numbers:
        return None, None
    sampled = list(dict.fromkeys(p for p, _ in rows if p is not None))[:_CHECKED]
    lengths = {}
    for path in sampled:
        try:
            lengths[path] = soundfile.info(str(path)).duration
        except (RuntimeError, OSError):
            continue
    checked = [i for i, (p, _) in enumerate(rows) if p in lengths]

    def inside(ends: pd.Series) -> bool:
        return bool(checked) and all(ends.iloc[i] <= lengths[rows[i][0]] + 1 for i in checked)

    for a, b in ((a, b) for a in numbers for b in numbers if a != b):
        if (numbers[b] > numbers[a]).mean() >= _PARSED and inside(numbers[b]):
            return a, b
    for column, values in numbers.items():
        steps = (values > 0) & (values % step == 0)
        if steps.mean() >= _PARSED and values.nunique() >= 2 and inside(values + (step if numbering == "start" else 0)):
            return (None, column) if numbering == "end" else (column, None)
    return None, None


def _common_folder(paths: list[Path], raw: Path) -> str:
    common = Path(os.path.commonpath([str(p.parent) for p in paths]))
    return common.relative_to(raw).as_posix() if common != raw else "."


def find_windows(raw: Path, audio: list[Path], tables: list, notes: list[str]) -> WindowShape | None:
    """The competition as a windowed sound task, or None when its files are not laid out as one."""
    folders: dict[Path, list[Path]] = defaultdict(list)
    for path in audio:
        folders[path.parent].append(path)
    for table in tables:
        found = _sample_windows(table.frame)
        if found is None:
            continue
        id_column, rows = found
        names = rows["recording"].unique()
        for folder, paths in sorted(folders.items(), key=lambda f: -len(f[1])):
            index = sound_index(paths)
            located = {n: find_sound(n, index) for n in names}
            if sum(p is not None for p in located.values()) < _FOUND * len(names):
                continue
            shape = _step(rows)
            if shape is None:
                continue
            step, numbering = shape
            recordings = {n: p for n, p in located.items() if p is not None}
            if not _durations_agree(recordings, rows["recording"].value_counts(), step, notes):
                return None
            classes = [str(c) for c in table.frame.columns if c != id_column]
            test_files = set(recordings.values())
            training = [p for p in audio if p.parent != folder and p not in test_files]
            return _with_training(raw, tables, training, WindowShape(
                sample=table.path.as_posix(), id_column=id_column, classes=classes,
                test_dir=folder.relative_to(raw).as_posix(), n_recordings=len(recordings), n_rows=len(rows),
                window_s=step, numbering=numbering, train_dir=".", n_train_clips=0), notes)
    return None


def _with_training(raw: Path, tables: list, clips: list[Path], shape: WindowShape,
                   notes: list[str]) -> WindowShape | None:
    """The shape with its training clips: labelled by a table, else by their folders' names."""
    classes = set(shape.classes)
    labelled = _label_table(tables, clips, classes, shape.sample) if clips else None
    if labelled is not None:
        table, file_column, label_column, rows = labelled
        rows = [(p, label) for p, label in rows if p is not None and label in classes]
        start, end = _span_columns(table.frame, {file_column, label_column}, labelled[3], shape.window_s,
                                   shape.numbering)
        update = {"train_table": table.path.as_posix(), "file_column": file_column, "label_column": label_column,
                  "start_column": start, "end_column": end}
        how = f"{table.path.as_posix()} names each clip ({file_column!r}) and its class ({label_column!r})"
        if start or end:
            how += f", the span labelled in seconds ({', '.join(repr(c) for c in (start, end) if c)})"
    else:
        rows = [(p, p.parent.name) for p in clips if p.parent.name in classes]
        if len({label for _, label in rows}) < max(2, len(classes) / 2):
            notes.append(f"{shape.sample} lists windows of the recordings in {shape.test_dir}/, but no training "
                         "clips are labelled by its classes (no table names them, no folder is named by a class)")
            return None
        update, how = {}, "each clip's folder is its class"
    trained = sorted({label for _, label in rows}, key=shape.classes.index)
    recordings = list(dict.fromkeys(p for p, _ in rows))
    shape = shape.model_copy(update={**update, "train_dir": _common_folder(recordings, raw),
                                     "n_train_clips": len(recordings), "trained_classes": trained})
    notes.append(f"{shape.describe()}: {shape.sample} has one row per window ('<recording>_<{shape.numbering} "
                 f"second>', {shape.n_rows} rows) of the recordings in {shape.test_dir}/ and a probability per "
                 f"class; {shape.n_train_clips} training clips under {shape.train_dir}/ ({how}), "
                 f"{len(trained)} classes among them, cut into {shape.window_s}-second windows that carry "
                 "their label")
    return shape
