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


def values_in_order(pictures: Mapping[str, np.ndarray], ids: pd.Series, base: int = 1,
                    column_first: bool = False) -> np.ndarray:
    """Each pixel id's value, looked up in its picture: a submission in exactly the sample's rows
    and order, whatever that order is, without sorting millions of ids."""
    import pyarrow as pa
    import pyarrow.compute as pc

    cells = pa.array(ids.astype(str), type=pa.large_string())
    if isinstance(cells, pa.ChunkedArray):  # a large Arrow-backed column comes in chunks
        cells = cells.combine_chunks()
    cells = pc.utf8_trim_whitespace(cells)
    parts = pc.extract_regex(cells, PIXEL_ID.pattern)
    if parts.null_count:
        bad = pc.filter(cells, pc.is_null(parts)).slice(0, 3).to_pylist()
        raise ValueError(f"{parts.null_count} ids are not <picture>_<row>_<col> (e.g. {bad})")
    encoded = pc.struct_field(parts, "image").dictionary_encode()
    codes = encoded.indices.to_numpy(zero_copy_only=False)
    first = pc.cast(pc.struct_field(parts, "row"), pa.int64()).to_numpy() - base
    second = pc.cast(pc.struct_field(parts, "col"), pa.int64()).to_numpy() - base
    rows, cols = (second, first) if column_first else (first, second)
    values = np.empty(len(codes), dtype=np.float32)
    order = np.argsort(codes, kind="stable")
    bounds = np.searchsorted(codes[order], np.arange(len(encoded.dictionary) + 1))
    for code, name in enumerate(encoded.dictionary.to_pylist()):
        if name not in pictures:
            raise ValueError(f"no predicted picture for {name!r}")
        at, picture = order[bounds[code]:bounds[code + 1]], pictures[name]
        r, c = rows[at], cols[at]
        if r.min() < 0 or c.min() < 0 or r.max() >= picture.shape[0] or c.max() >= picture.shape[1]:
            raise ValueError(f"pixel ids of {name!r} run outside its {picture.shape[0]}x{picture.shape[1]} picture")
        values[at] = picture[r, c]
    return values


def write_pixel_csv(frame: pd.DataFrame, path: Path) -> None:
    """A per-pixel submission written by Arrow (13 million rows in 2 s, where pandas takes 20 s),
    unquoted as pandas writes it; pandas writes a cell Arrow could only write quoted."""
    import pyarrow as pa
    import pyarrow.csv as pa_csv

    try:
        options = pa_csv.WriteOptions(quoting_style="none", quoting_header="none")
        pa_csv.write_csv(pa.Table.from_pandas(frame, preserve_index=False), path, write_options=options)
    except (pa.ArrowException, ValueError, TypeError):  # TypeError: an older pyarrow lacks quoting_header
        frame.to_csv(path, index=False)


def image_keys(pixel_id_column: pd.Series) -> set[str]:
    """Every image a column of pixel ids names, vectorised (a sample lists millions of pixels)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    cells = pc.utf8_trim_whitespace(pa.array(pixel_id_column.astype(str)))
    keys = pc.replace_substring_regex(cells, pattern=r"_\d+_\d+$", replacement="")
    return set(pc.unique(keys).to_pylist())


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
