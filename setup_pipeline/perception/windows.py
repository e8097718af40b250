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
from typing import Literal

import numpy as np
import pandas as pd
from pydantic import BaseModel

from agentk.core.sound_windows import clip_index, find_clip, find_recording, recording_index, split_window_id

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
    numbering: Literal["end", "start"]  # what the number of a row id is: the window's end second or start
    train_dir: str  # the folder holding every training clip
    n_train_clips: int
    train_table: str | None = None  # clip file -> label; None: the clip's folder is its label
    file_column: str | None = None
    label_column: str | None = None
    trained_classes: list[str] = []  # the classes some training clip carries

    def describe(self) -> str:
        return (f"windows: {self.n_recordings} recordings, {self.window_s}-second windows, "
                f"{len(self.classes)} classes")


def _sample_windows(frame: pd.DataFrame) -> tuple[str, pd.DataFrame] | None:
    """(id column, frame of recording and second per row) when the first column holds window ids."""
    if frame.shape[1] < 2 or frame.empty:
        return None
    id_column = str(frame.columns[0])
    parts = [split_window_id(v) for v in frame[id_column]]
    if sum(p is not None for p in parts) < _PARSED * len(parts):
        return None
    rows = pd.DataFrame([p for p in parts if p is not None], columns=["recording", "second"])
    return id_column, rows


def _step(rows: pd.DataFrame) -> tuple[int, Literal["end", "start"]] | None:
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
    """(table, file column, label column, {clip: label}) of a table naming training clips and their classes."""
    index = clip_index(clips)
    for table in tables:
        frame: pd.DataFrame = table.frame
        if table.path.as_posix() == skip or frame.empty:
            continue
        head = frame.head(2000)
        files = [c for c in frame.columns
                 if sum(find_clip(v, index) is not None for v in head[c]) >= _FOUND * len(head)]
        labels = [c for c in frame.columns if c not in files
                  and frame[c].astype(str).str.strip().isin(classes).mean() >= _FOUND]
        if files and labels:
            cells = zip(frame[files[0]], frame[labels[0]].astype(str).str.strip())
            pairs = {clip: label for clip, label in ((find_clip(v, index), label) for v, label in cells)
                     if clip is not None and label in classes}
            return table, str(files[0]), str(labels[0]), pairs
    return None


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
            index = recording_index(paths)
            located = {n: find_recording(n, index) for n in names}
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
        table, file_column, label_column, pairs = labelled
        update = {"train_table": table.path.as_posix(), "file_column": file_column, "label_column": label_column}
        how = f"{table.path.as_posix()} names each clip ({file_column!r}) and its class ({label_column!r})"
    else:
        pairs = {p: p.parent.name for p in clips if p.parent.name in classes}
        if len(set(pairs.values())) < max(2, len(classes) / 2):
            notes.append(f"{shape.sample} lists windows of the recordings in {shape.test_dir}/, but no training "
                         "clips are labelled by its classes (no table names them, no folder is named by a class)")
            return None
        update, how = {}, "each clip's folder is its class"
    trained = sorted(set(pairs.values()), key=shape.classes.index)
    shape = shape.model_copy(update={**update, "train_dir": _common_folder(list(pairs), raw),
                                     "n_train_clips": len(pairs), "trained_classes": trained})
    notes.append(f"{shape.describe()}: {shape.sample} has one row per window ('<recording>_<{shape.numbering} "
                 f"second>', {shape.n_rows} rows) of the recordings in {shape.test_dir}/ and a probability per "
                 f"class; {shape.n_train_clips} training clips under {shape.train_dir}/ ({how}), "
                 f"{len(trained)} classes among them, cut into {shape.window_s}-second windows that carry "
                 "their clip's class")
    return shape
