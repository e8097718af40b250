"""The image-to-image contract: a target that is a picture, scored and submitted pixel by pixel.

Kaggle's image-to-image competitions (a noisy scan in, its cleaned scan out) give training pairs as
two folders of the same file names and ask for one submission row per pixel, `<image>_<row>_<col>`.
Every map stays one row per image: the target map and the prediction frame hold the *path* of an
image (the clean scan, or the solver's prediction saved as `.npy`), and only the submission format
expands an image into its pixel rows. The generated setup code, the checks and the solver all read
pictures and spell pixel ids through this module, so the convention is written once.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from agentk.core.artifacts import DENSE_TASKS
from agentk.core.pictures import grey_values

PIXEL_TASK = DENSE_TASKS[0]  # target_info's task for a target that is an image
PREDICTION_SUFFIX = ".npy"  # the solver saves each predicted image as float32 in the submission's scale
PIXEL_ID = re.compile(r"^(?P<image>.+)_(?P<row>\d+)_(?P<col>\d+)$")


def read_picture(path: str | Path, scale: float = 255.0) -> np.ndarray:
    """A picture as a 2-D float32 array divided by `scale` (grey; colour is averaged), or the
    saved prediction itself when `path` is a `.npy` file. Values are as stored for what PIL reads
    (0..255, or a 16-bit PNG's own units), and 0..255 for every other form (agentk.core.pictures)."""
    path = Path(path)
    if path.suffix.lower() == PREDICTION_SUFFIX:
        return np.load(path).astype(np.float32)
    return grey_values(path) / np.float32(scale)


def save_prediction(picture: np.ndarray, path: Path) -> None:
    """Write a predicted picture atomically (a killed solver never leaves half an image)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial.npy")
    np.save(partial, picture.astype(np.float32))
    os.replace(partial, path)


@dataclass(frozen=True)
class PixelIds:
    """A column of `<image>_<row>_<col>` ids split apart: per id its image's code (an index into
    `images`) and its two numbers; `valid` is False where an id is not of that form."""

    codes: np.ndarray
    images: list[str]
    first: np.ndarray
    second: np.ndarray
    valid: np.ndarray
    cells: object  # the ids as one Arrow string array, whitespace trimmed


def split_pixel_ids(ids: pd.Series) -> PixelIds:
    """Split pixel ids on their last two underscores, over the Arrow array's bytes with numpy.

    A sample lists millions of pixels (5.7 M for 29 scanned pages): a regular expression over them
    took 5.6 s a call on one core, and the submission is formatted several times a run; this takes
    well under a second. UTF-8 never uses the bytes of '_' or a digit inside another character, so
    reading bytes is exact; what the pattern `^(.+)_(\\d+)_(\\d+)$` accepts is accepted here."""
    import pyarrow as pa
    import pyarrow.compute as pc

    cells = pa.array(ids.astype(str), type=pa.large_string())
    if isinstance(cells, pa.ChunkedArray):  # a large Arrow-backed column comes in chunks
        cells = cells.combine_chunks()
    data = _bytes_of(cells)
    if (data <= ord(" ")).any() or (data >= 0x80).any():  # maybe spaces: trimming costs a pass, only when needed
        cells = pc.utf8_trim_whitespace(cells)
        data = _bytes_of(cells)
    offsets = np.frombuffer(cells.buffers()[1], dtype=np.int64)[cells.offset:cells.offset + len(cells) + 1]
    starts, ends = offsets[:-1], offsets[1:]
    under = np.flatnonzero(data == ord("_"))
    last = np.searchsorted(under, ends) - 1  # each id's last underscore, as an index into `under`
    has_two = last >= 1
    u1 = np.where(has_two, under[np.clip(last, 0, None)] if len(under) else 0, 0)
    u2 = np.where(has_two, under[np.clip(last - 1, 0, None)] if len(under) else 0, 0)
    # Numbers of at most 17 digits each (an int64 holds them).
    valid = has_two & (u2 > starts) & (u1 > u2 + 1) & (ends > u1 + 1) & (u1 - u2 < 19) & (ends - u1 < 19)
    if cells.null_count:
        valid &= ~np.asarray(cells.is_null())
    first, digits_first = _numbers(data, np.where(valid, u2 + 1, 0), np.where(valid, u1, 0))
    second, digits_second = _numbers(data, np.where(valid, u1 + 1, 0), np.where(valid, ends, 0))
    valid &= digits_first & digits_second
    lengths = np.where(valid, u2 - starts, 0)
    names = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=names[1:])
    gather = np.repeat(starts - names[:-1], lengths) + np.arange(names[-1], dtype=np.int64)
    images = pa.LargeStringArray.from_buffers(len(lengths), pa.py_buffer(names), pa.py_buffer(data[gather].tobytes()))
    encoded = images.dictionary_encode()
    return PixelIds(encoded.indices.to_numpy(zero_copy_only=False), encoded.dictionary.to_pylist(),
                    first, second, valid, cells)


def _bytes_of(cells: object) -> np.ndarray:
    buffer = cells.buffers()[2]  # type: ignore[attr-defined]
    return np.frombuffer(buffer, dtype=np.uint8) if buffer is not None else np.zeros(0, dtype=np.uint8)


def _numbers(data: np.ndarray, begin: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The decimal number in data[begin:end] of each row (0 where the span is empty), and whether
    that span is digits only; read from the last digit back, in whole-column passes."""
    values = np.zeros(len(begin), dtype=np.int64)
    digits = np.ones(len(begin), dtype=bool)
    length = end - begin
    for k in range(int(length.max()) if len(length) else 0):
        inside = length > k
        digit = data[np.where(inside, end - 1 - k, 0)].astype(np.int64) - ord("0")
        digits &= ~inside | ((digit >= 0) & (digit <= 9))
        values += np.where(inside, digit * 10**k, 0)
    return values, digits


def values_in_order(pictures: Mapping[str, np.ndarray], ids: pd.Series, base: int = 1,
                    column_first: bool = False) -> np.ndarray:
    """Each pixel id's value, looked up in its picture: a submission in exactly the sample's rows
    and order, whatever that order is, without sorting millions of ids."""
    import pyarrow.compute as pc

    split = split_pixel_ids(ids)
    if not split.valid.all():
        bad = pc.filter(split.cells, ~split.valid).slice(0, 3).to_pylist()
        raise ValueError(f"{int((~split.valid).sum())} ids are not <picture>_<row>_<col> (e.g. {bad})")
    codes = split.codes
    rows, cols = (split.second - base, split.first - base) if column_first else (split.first - base, split.second - base)
    values = np.empty(len(codes), dtype=np.float32)
    order = np.argsort(codes, kind="stable")
    bounds = np.searchsorted(codes[order], np.arange(len(split.images) + 1))
    for code, name in enumerate(split.images):
        if name not in pictures:
            raise ValueError(f"no predicted picture for {name!r}")
        at, picture = order[bounds[code]:bounds[code + 1]], pictures[name]
        r, c = rows[at], cols[at]
        if r.min() < 0 or c.min() < 0 or r.max() >= picture.shape[0] or c.max() >= picture.shape[1]:
            raise ValueError(f"pixel ids of {name!r} run outside its {picture.shape[0]}x{picture.shape[1]} picture")
        values[at] = picture[r, c]
    return values


def write_pixel_csv(frame: pd.DataFrame, path: Path, eol: str = "\n") -> None:
    """A per-pixel submission (or any frame of millions of rows) written by Arrow (13 million rows
    in 2 s, where pandas takes 20 s), unquoted as pandas writes it; pandas writes a cell Arrow could
    only write quoted."""
    import pyarrow as pa
    import pyarrow.csv as pa_csv

    try:
        options = pa_csv.WriteOptions(quoting_style="none", quoting_header="none", eol=eol)
        pa_csv.write_csv(pa.Table.from_pandas(frame, preserve_index=False), path, write_options=options)
    except (pa.ArrowException, ValueError, TypeError):  # TypeError: an older pyarrow lacks quoting_header
        frame.to_csv(path, index=False, lineterminator=eol)


def image_keys(pixel_id_column: pd.Series) -> set[str]:
    """Every image a column of pixel ids names (an id of another form names itself)."""
    split = split_pixel_ids(pixel_id_column)
    keys = {split.images[code] for code in np.unique(split.codes[split.valid])}
    if not split.valid.all():
        keys |= set(split.cells.filter(~split.valid).unique().to_pylist())  # type: ignore[attr-defined]
    return keys


def resolve(setup_dir: Path, value: str) -> Path:
    """A map's path cell (stored relative to setup/) as a path."""
    path = Path(str(value).strip())
    return path if path.is_absolute() else (Path(setup_dir) / path)


def fitted(picture: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """`picture` cropped, or padded with its mean, to `shape` (a shuffled check stays finite)."""
    if picture.shape == shape:
        return picture
    out = np.full(shape, float(picture.mean()) if picture.size else 0.0, dtype=np.float32)
    h, w = min(shape[0], picture.shape[0]), min(shape[1], picture.shape[1])
    out[:h, :w] = picture[:h, :w]
    return out


def score_pictures(metric: str, truth: list[np.ndarray], predicted: list[np.ndarray]) -> float:
    """The metric over every pixel of every picture pooled, as a per-pixel submission is scored."""
    from agentk.core.metrics import get_metric

    want = np.concatenate([t.ravel() for t in truth])
    got = np.concatenate([fitted(p, t.shape).ravel() for t, p in zip(truth, predicted)])
    return float(get_metric(metric).fn(want, got))


def score_picture_frames(metric: str, y_true: pd.DataFrame, y_pred: pd.DataFrame, column: str,
                         setup_dir: Path, scale: float = 255.0) -> float:
    """`metric` over the pixels of the truth's pictures and the prediction's, matched by id."""
    truth = y_true.assign(id=y_true["id"].astype(str)).drop_duplicates("id").set_index("id")
    predicted = y_pred.assign(id=y_pred["id"].astype(str)).drop_duplicates("id").set_index("id")
    ids = [i for i in predicted.index if i in truth.index]
    if not ids:
        raise ValueError("no prediction id is in the truth")
    want = [read_picture(resolve(setup_dir, truth.loc[i, column]), scale) for i in ids]
    got = [read_picture(resolve(setup_dir, predicted.loc[i, column]), scale) for i in ids]
    return score_pictures(metric, want, got)
