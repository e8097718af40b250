"""Pictures written as numbers inside a table cell: `pixels` holding "70 80 82 ..." (48x48 grey
levels) on every row, as Kaggle's facial-expression and facial-keypoint tables ship them.

Recognised by structure alone: nearly every cell of a column is N whitespace-separated numbers,
the same N on every row, N a square (grey) or three times one (colour), and the numbers are grey
levels (integers in 0..255, or fractions in 0..1). Read as text such a column would be TF-IDF of
numbers; the setup instead writes each cell once as one `.npy` per row under the workspace's
`setup/pictures/<column>_<split>/` (row i of the split's table is `<i>.npy`), the layout stacked
arrays use, so every later stage sees ordinary picture files.
"""

from __future__ import annotations

import math
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from agentk.core.pictures import MIN_SIDE

_SAMPLED = 200  # cells parsed to judge a column
_NEARLY_ALL = 0.95  # share of sampled cells that must be such a picture
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_DONE = ".complete"
_SHORTEST = 2 * MIN_SIDE * MIN_SIDE - 1  # characters of the smallest picture: 8x8 one-digit numbers


@dataclass(frozen=True)
class PictureCells:
    column: str
    height: int
    width: int
    channels: int  # 1 or 3
    eight_bit: bool  # integers in 0..255 (stored as uint8); else fractions in 0..1 (float32)
    planar: bool = False  # colour written plane by plane (all red, then green, then blue)

    @property
    def size(self) -> int:
        return self.height * self.width * self.channels

    def describe(self) -> str:
        kind = "grey" if self.channels == 1 else "colour (" + ("planes R, G, B" if self.planar else "R G B per pixel") + ")"
        levels = "grey levels 0..255" if self.eight_bit else "values in 0..1"
        return f"column {self.column!r}: {self.height}x{self.width} {kind} pictures written as numbers ({levels})"


def _shape(n: int) -> tuple[int, int] | None:
    """(side, channels) when n numbers make a square grey or colour picture."""
    for channels in (1, 3):
        side = math.isqrt(n // channels)
        if n % channels == 0 and side * side * channels == n and side >= MIN_SIDE:
            return side, channels
    return None


def _smoothness(values: np.ndarray, side: int, planar: bool) -> float:
    """Mean difference between horizontal neighbours when the numbers are read one way."""
    picture = values.reshape(3, side, side).transpose(1, 2, 0) if planar else values.reshape(side, side, 3)
    return float(np.abs(np.diff(picture, axis=1)).mean())


def find_picture_cells(train: pd.DataFrame, test: pd.DataFrame, skip: set[str]) -> list[PictureCells]:
    """The columns of both tables whose cells are pictures written as numbers."""
    found, in_test = [], set(test.columns)
    # A glance at a few cells first, all columns at once: a table of 20,000 number columns
    # costs no more than a moment.
    longest = np.char.str_len(train.head(8).to_numpy().astype(str)).max(axis=0, initial=0)
    for column in (c for c, n in zip(train.columns, longest) if n >= _SHORTEST and c in in_test and c not in skip):
        cells = _picture_cells(train[column])
        if cells is not None and _agrees(test[column], cells):
            found.append(cells)
    return found


def _present(series: pd.Series) -> pd.Series:
    values = series.astype(str).str.strip()
    return values[(values != "") & (values.str.lower() != "nan")]


def _picture_cells(series: pd.Series) -> PictureCells | None:
    values = _present(series.head(4 * _SAMPLED)).head(_SAMPLED)
    if values.empty or (values.str.len() >= _SHORTEST).mean() < _NEARLY_ALL \
            or values.str[0].str.isdigit().mean() < _NEARLY_ALL:
        return None
    parsed = [p for p in (_numbers(v) for v in values) if p is not None]
    if not parsed:
        return None
    sizes = pd.Series([p.size for p in parsed]).value_counts()
    n = int(sizes.index[0])
    shape = _shape(n)
    if shape is None or sizes.iloc[0] < _NEARLY_ALL * len(values):
        return None
    good = np.stack([p for p in parsed if p.size == n])
    integers = bool(np.all(good == np.round(good)))
    if good.min() < 0 or good.max() > 255 or (not integers and good.max() > 1):
        return None
    side, channels = shape
    planar = channels == 3 and np.mean([_smoothness(p, side, True) for p in good[:20]]) < np.mean(
        [_smoothness(p, side, False) for p in good[:20]])
    return PictureCells(column=str(series.name), height=side, width=side, channels=channels,
                        eight_bit=integers and good.max() > 1, planar=bool(planar))


def _agrees(series: pd.Series, cells: PictureCells) -> bool:
    values = _present(series.head(_SAMPLED))
    if values.empty:
        return False
    return sum(_cell_values(v, cells.size) is not None for v in values) >= _NEARLY_ALL * len(values)


def _numbers(cell: str) -> np.ndarray | None:
    """The cell's numbers; None when a word is no number."""
    try:
        values = np.asarray(cell.split(), dtype=np.float32)
    except ValueError:
        return None
    return values if np.isfinite(values).all() else None


def _cell_values(cell: str, size: int) -> np.ndarray | None:
    values = _numbers(cell)
    return values if values is not None and values.size == size else None


def write_picture_cells(series: pd.Series, cells: PictureCells, folder: Path, split: str) -> tuple[Path, int]:
    """One `.npy` per row under `folder/<column>_<split>/`, row i as `<i>.npy`; a cell that is no
    such picture (blank, cut short) becomes a black one. Done once (a marker says it finished),
    written beside and renamed so a killed run leaves no half folder. Returns the folder and how
    many cells were no picture."""
    name = _UNSAFE.sub("_", f"{cells.column}_{split}").lstrip(".") or f"pictures_{split}"
    dest = folder / name
    if (dest / _DONE).is_file():
        return dest, int((dest / _DONE).read_text().split()[1])
    building = folder / f".{name}.building"
    shutil.rmtree(building, ignore_errors=True)
    building.mkdir(parents=True)
    dtype = np.uint8 if cells.eight_bit else np.float32
    top = 255 if cells.eight_bit else 1
    texts = series.fillna("").astype(str).tolist()
    bad = 0
    for i, cell in enumerate(texts):
        values = _cell_values(cell, cells.size)
        if values is None:
            bad += 1
            values = np.zeros(cells.size, dtype=np.float32)
        np.save(building / f"{i}.npy", _picture(values, cells).clip(0, top).astype(dtype))
    (building / _DONE).write_text(f"{len(texts)} {bad}\n", encoding="utf-8")
    shutil.rmtree(dest, ignore_errors=True)
    os.replace(building, dest)
    return dest, bad


def _picture(values: np.ndarray, cells: PictureCells) -> np.ndarray:
    if cells.channels == 1:
        return values.reshape(cells.height, cells.width)
    if cells.planar:
        return np.ascontiguousarray(values.reshape(3, cells.height, cells.width).transpose(1, 2, 0))
    return values.reshape(cells.height, cells.width, 3)
