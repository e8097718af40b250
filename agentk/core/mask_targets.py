"""The mask contract: a picture target whose pictures are objects, submitted run-length encoded.

Kaggle's segmentation competitions give a mask per training image (a picture file, or run-length
strings in a table, one row per image or per object) and take one encoded row per test image, or
one per object. Every map stays one row per picture, as in image-to-image (`agentk.core.pixels`):
the target map and the prediction frame hold the path of a *labelled mask*: an integer picture
where 0 is background and each other value one object. The setup decodes a table's strings into
such files once; a mask picture file (0/255) reads as one object. Only the submission expands a
picture into its encoded rows. The setup's generated code, the checks and the solver all read and
write masks through this module.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from agentk.core.artifacts import DENSE_TASKS
from agentk.core.masks import Order, rle_encode

MASK_TASK = DENSE_TASKS[1]  # target_info's task for a target that is a mask
LABELS_SUFFIX = ".npz"  # a labelled mask saved compressed by `save_labels`


def save_labels(labels: np.ndarray, path: Path, **extra: np.ndarray) -> None:
    """Write a labelled mask atomically (compressed: a mask is mostly runs of zeros), with `extra`
    arrays beside it (a box target's exact boxes: agentk.core.box_targets)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.stem + ".partial" + LABELS_SUFFIX)
    top = int(labels.max()) if labels.size else 0
    dtype = np.uint8 if top < 256 else (np.uint16 if top < 65536 else np.int32)
    np.savez_compressed(partial, labels=np.asarray(labels).astype(dtype), **extra)
    os.replace(partial, path)


def read_labels(path: str | Path) -> np.ndarray:
    """A labelled mask (int32, 0 = background): a saved `.npz`, or a picture read as one object
    (pixels above half its brightest level; a mask file holds 0/255 or 0/1)."""
    path = Path(path)
    if path.suffix.lower() == LABELS_SUFFIX:
        with np.load(path) as stored:
            return stored["labels"].astype(np.int32)
    from PIL import Image

    with Image.open(path) as image:
        values = np.asarray(image if image.mode in ("1", "L", "I", "I;16", "F") else image.convert("L"))
    if values.ndim == 3:
        values = values.max(axis=2)
    top = float(values.max()) if values.size else 0.0
    return (values > top / 2).astype(np.int32) if top > 0 else np.zeros(values.shape, dtype=np.int32)


def objects(labels: np.ndarray, per_object: bool) -> list[np.ndarray]:
    """The boolean masks a labelled mask holds: one per label, or their union as one."""
    if not per_object:
        return [labels > 0] if labels.any() else []
    values = np.unique(labels)
    return [labels == v for v in values[values > 0]]


def encoded(labels: np.ndarray, per_object: bool, order: Order = "F", relative: bool = False) -> list[str]:
    """A labelled mask's run-length strings (none for an empty mask)."""
    return [rle_encode(m, order, relative) for m in objects(labels, per_object)]


def picture_keys(sample_ids: Sequence[str], pictures: set[str]) -> list[str]:
    """The picture each sample id names: itself, or its name without the extension (`a1.jpg`)."""
    keys = []
    for value in sample_ids:
        key = value if value in pictures else Path(value).stem
        if key not in pictures:
            raise ValueError(f"no predicted mask for the sample's id {value!r}")
        keys.append(key)
    return keys


def mask_submission(predictions: Mapping[str, Path], sample_ids: Sequence[str], id_column: str,
                    value_column: str, per_object: bool, order: Order = "F", relative: bool = False,
                    empty: str = "") -> pd.DataFrame:
    """The submission: the sample's ids in its order, each with its mask's string, or one row per
    object (an image with none keeps one row, written `empty` as the sample writes no mask)."""
    ids, values = [], []
    for sample_id, key in zip(sample_ids, picture_keys(sample_ids, set(predictions))):
        strings = encoded(read_labels(predictions[key]), per_object, order, relative) or [empty]
        ids += [sample_id] * len(strings)
        values += strings
    return pd.DataFrame({id_column: ids, value_column: values})


def score_labels(metric: str, truth: Sequence[np.ndarray], predicted: Sequence[np.ndarray], per_object: bool,
                 thresholds: Sequence[float] | None = None) -> float:
    """The registry's `metric` over labelled masks, each image one row as the grader reads it."""
    from agentk.core.metrics import get_metric

    found = get_metric(metric)
    want = [encoded(t, per_object) for t in truth]
    got = [encoded(p, per_object) for p in predicted]
    if found.kind == "instances" and thresholds:
        return float(found.fn(want, got, thresholds=tuple(thresholds), relative=False))
    return float(found.fn(want, got, relative=False))


def score_mask_frames(metric: str, y_true: pd.DataFrame, y_pred: pd.DataFrame, column: str, setup_dir: Path,
                      per_object: bool, thresholds: Sequence[float] | None = None, n_classes: int = 0) -> float:
    """`metric` over the truth's masks and the prediction's, matched by id (paths relative to setup/);
    with `n_classes`, over (picture, class) pairs of class-valued masks."""
    from agentk.core.pixels import resolve

    truth = y_true.assign(id=y_true["id"].astype(str)).drop_duplicates("id").set_index("id")
    predicted = y_pred.assign(id=y_pred["id"].astype(str)).drop_duplicates("id").set_index("id")
    ids = [i for i in predicted.index if i in truth.index]
    if not ids:
        raise ValueError("no prediction id is in the truth")
    want = [read_labels(resolve(setup_dir, truth.loc[i, column])) for i in ids]
    got = [read_labels(resolve(setup_dir, predicted.loc[i, column])) for i in ids]
    if n_classes:
        return score_class_labels(metric, want, got, n_classes)
    return score_labels(metric, want, got, per_object, thresholds)


def decoded_labels(strings: Sequence[str], shape: tuple[int, int], order: Order = "F",
                   relative: bool = False) -> np.ndarray:
    """The labelled mask of a picture's run-length strings: object k (from 1) is its k-th non-blank
    string; where objects overlap the later one wins."""
    from agentk.core.masks import is_blank, rle_decode

    labels = np.zeros(shape, dtype=np.int32)
    for value in (s for s in strings if not is_blank(s)):
        labels[rle_decode(value, shape, order, relative)] = int(labels.max()) + 1
    return labels


def picture_shape(path: str | Path) -> tuple[int, int]:
    """(height, width) of a picture, read from its header."""
    from PIL import Image

    with Image.open(path) as image:
        return image.size[1], image.size[0]


# ---------------------------------------------------------------- masks per picture and class
# A task whose masks are per (picture, class) keeps one mask per picture whose values are bit sets:
# bit k - 1 holds the k-th class (from 1), so classes may overlap, as clouds of two kinds do.
MAX_MASK_CLASSES = 30  # bits of an int32 mask


def split_class_id(value: str) -> tuple[str, str]:
    """(picture, class) of a joined id `<picture>_<class>` (`002f507.jpg_Fish`, `0001.jpg_3`):
    the class follows the last underscore, as picture names may hold underscores."""
    picture, _, label = str(value).strip().rpartition("_")
    return picture, label


def class_name(value: object) -> str:
    """A class cell as text: `3`, `3.0` and ` 3` are one class."""
    text = str(value).strip()
    return text[:-2] if text.endswith(".0") and text[:-2].isdigit() else text


def class_bit(number: int) -> int:
    """The bit of the `number`-th class (from 1) in a class mask."""
    return 1 << (int(number) - 1)


def class_mask(labels: np.ndarray, number: int) -> np.ndarray:
    """Where a class mask holds the `number`-th class."""
    return (np.asarray(labels) & class_bit(number)) > 0


def class_labels(pairs: Sequence[tuple[int, str]], shape: tuple[int, int], order: Order = "F",
                 relative: bool = False) -> np.ndarray:
    """The class mask of a picture's (class number, run-length string) pairs."""
    from agentk.core.masks import is_blank, rle_decode

    labels = np.zeros(shape, dtype=np.int32)
    for number, value in pairs:
        if number and not is_blank(value):
            labels[rle_decode(str(value), shape, order, relative)] |= class_bit(number)
    return labels


def class_strings(labels: np.ndarray, n_classes: int, order: Order = "F", relative: bool = False) -> list[str]:
    """One string per class (blank for none), in class order."""
    masks = [class_mask(labels, k) for k in range(1, n_classes + 1)]
    return [rle_encode(m, order, relative) if m.any() else "" for m in masks]


def class_mask_submission(predictions: Mapping[str, Path], sample: pd.DataFrame, id_column: str, value_column: str,
                          class_column: str | None, classes: Sequence[str], order: Order = "F",
                          relative: bool = False, empty: str = "") -> pd.DataFrame:
    """The sample's rows, in its order and spelling, each (picture, class) with its mask's string:
    ids joined `<picture>_<class>` when `class_column` is None, else a picture and a class column."""
    number = {c: k for k, c in enumerate(classes, start=1)}
    if class_column is None:
        parts = [split_class_id(v) for v in sample[id_column]]
    else:
        parts = list(zip(sample[id_column].astype(str).str.strip(), sample[class_column]))
    pictures = [p for p, _ in parts]
    keys = picture_keys(pictures, set(predictions))
    cache: dict[str, np.ndarray] = {}
    values = []
    for key, (_, label) in zip(keys, parts):
        if key not in cache:
            cache[key] = read_labels(predictions[key])
        k = number.get(class_name(label), 0)
        mask = class_mask(cache[key], k) if k else np.zeros((1, 1), bool)
        values.append(rle_encode(mask, order, relative) if mask.any() else empty)
    return sample.assign(**{value_column: values})


def score_class_labels(metric: str, truth: Sequence[np.ndarray], predicted: Sequence[np.ndarray],
                       n_classes: int) -> float:
    """The registry's `metric` over (picture, class) pairs of class masks, each pair one row as the
    grader reads it."""
    from agentk.core.metrics import get_metric

    want = [s for t in truth for s in class_strings(t, n_classes)]
    got = [s for p in predicted for s in class_strings(p, n_classes)]
    return float(get_metric(metric).fn(want, got, relative=False))
