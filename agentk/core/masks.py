"""Run-length encoding of binary masks, as Kaggle's segmentation competitions write them.

A mask is flattened (column-major "F" order by default, as data-science-bowl-2018, severstal and
understanding-clouds number their pixels top to bottom, then left to right; "C" is row-major) and
written as space-separated `start length` pairs. Starts are 1-indexed and absolute by default; a
*relative* encoding (siim-acr-pneumothorax) gives each start as the 0-indexed offset from the end
of the previous run. A blank cell, NaN or "-1" is the empty mask.

`rle_runs` reads an encoding as half-open 0-indexed `[start, end)` intervals of the flattened
image without needing its size: set metrics (Dice, IoU) are exact on intervals alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

Order = Literal["F", "C"]

# Kaggle's sample submissions and SIIM's answers spell "no mask" as -1.
_EMPTY_MARKERS = frozenset({"", "-1", "nan", "none"})


@dataclass(frozen=True)
class Runs:
    """A mask as 0-indexed half-open intervals `[starts[i], ends[i])` of the flattened image,
    in the order the encoding gives them."""

    starts: np.ndarray
    ends: np.ndarray

    @property
    def sorted_and_disjoint(self) -> bool:
        """Each run starts at or after the end of the one before (Kaggle's validity rule)."""
        return bool(np.all(self.starts[1:] >= self.ends[:-1]))

    def area(self) -> int:
        """Pixels covered, runs that overlap counted once."""
        return union_length(self.starts, self.ends)

    def pixels(self) -> np.ndarray:
        """The flat pixel indices covered, sorted and unique."""
        lengths = self.ends - self.starts
        if not len(lengths) or lengths.sum() == 0:
            return np.zeros(0, dtype=np.int64)
        # One arange shifted per run: pixel k of run i is starts[i] + k.
        before = np.cumsum(lengths) - lengths
        index = np.arange(int(lengths.sum()), dtype=np.int64) + np.repeat(self.starts - before, lengths)
        return np.unique(index)


def is_blank(value: Any) -> bool:
    """A cell that encodes the empty mask (or no boxes): blank, NaN, None or -1."""
    if value is None:
        return True
    if isinstance(value, float) and np.isnan(value):
        return True
    return str(value).strip().lower() in _EMPTY_MARKERS


def rle_numbers(value: Any) -> np.ndarray:
    """The integers of one encoding cell; ValueError for text that is not pairs of integers."""
    if is_blank(value):
        return np.zeros(0, dtype=np.int64)
    tokens = str(value).split()
    try:
        numbers = np.array([int(float(t)) if "." in t else int(t) for t in tokens], dtype=np.int64)
    except ValueError:
        raise ValueError(f"run-length encoding holds a non-integer: {str(value)[:60]!r}") from None
    if len(numbers) % 2:
        raise ValueError(f"run-length encoding has an odd number of values ({len(numbers)})")
    if (numbers < 0).any():
        raise ValueError("run-length encoding has a negative start or length")
    return numbers


def rle_runs(value: Any, relative: bool = False) -> Runs:
    """One encoding cell as 0-indexed half-open runs (see the module docstring)."""
    numbers = rle_numbers(value)
    starts, lengths = numbers[0::2], numbers[1::2]
    if relative:
        # Each start is the gap after the previous run's end; the first is from pixel 0.
        ends = np.cumsum(starts + lengths)
        return Runs(ends - lengths, ends)
    return Runs(starts - 1, starts - 1 + lengths)


def union_length(starts: np.ndarray, ends: np.ndarray) -> int:
    """Length of the union of half-open intervals, in O(n log n) without expanding them."""
    keep = ends > starts
    starts, ends = starts[keep], ends[keep]
    if not len(starts):
        return 0
    order = np.argsort(starts, kind="stable")
    starts, ends = starts[order], ends[order]
    reach = np.maximum.accumulate(ends)
    # A merged block begins where a run starts beyond everything before it reaches.
    new_block = np.ones(len(starts), dtype=bool)
    new_block[1:] = starts[1:] > reach[:-1]
    first = np.flatnonzero(new_block)
    last = np.append(first[1:], len(starts)) - 1
    return int((reach[last] - starts[first]).sum())


def rle_decode(value: Any, shape: tuple[int, int], order: Order = "F", relative: bool = False) -> np.ndarray:
    """The boolean mask of `shape` (height, width) an encoding cell describes."""
    runs = rle_runs(value, relative)
    size = shape[0] * shape[1]
    if len(runs.ends) and int(runs.ends.max()) > size:
        raise ValueError(f"run-length encoding reaches pixel {int(runs.ends.max())} of a {shape} image")
    flat = np.zeros(size, dtype=bool)
    flat[runs.pixels()] = True
    return flat.reshape(shape, order=order)


def rle_encode(mask: np.ndarray, order: Order = "F", relative: bool = False) -> str:
    """The encoding of a 2-D mask (any non-zero pixel is set); "" for the empty mask."""
    flat = np.asarray(mask).astype(bool).ravel(order=order)
    edges = np.flatnonzero(np.diff(np.concatenate([[False], flat, [False]]).astype(np.int8)))
    starts, ends = edges[0::2], edges[1::2]
    lengths = ends - starts
    if relative:
        previous_end = np.concatenate([[0], ends[:-1]])
        starts = starts - previous_end
    else:
        starts = starts + 1
    return " ".join(f"{s} {n}" for s, n in zip(starts.tolist(), lengths.tolist()))
