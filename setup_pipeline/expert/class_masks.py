"""Segmentation competitions whose masks are per picture and class, recognised from the files.

Kaggle writes them two ways, in the sample submission and the training table alike:
* ids joined `<picture>_<class>` (`002f507.jpg_Fish`, `0001.jpg_3`) beside one encoding column,
  every (picture, class) a row, blank for no mask;
* a picture column, a class column and an encoding column (`ImageId,ClassId,EncodedPixels`), the
  training table often listing only the pairs that have a mask.
A table is read so when its pictures name a folder and its classes are few, each picture holding
several. The sample is the table so named (else the one naming a test folder), the training table
another naming a different folder; the classes are the training table's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from agentk.core.mask_targets import MAX_MASK_CLASSES, class_name
from agentk.core.masks import is_blank
from agentk.core.metrics.spatial import is_relative
from setup_pipeline.expert.mask_targets import (MaskTask, _is_encoding, _oblong_strings, _order, named_folder,
                                                picture_names)

_MAX_CLASSES = MAX_MASK_CLASSES  # one bit each in a picture's class mask


@dataclass
class _Layout:
    """One table read as masks per picture and class."""

    table: object
    id_column: str
    value_column: str
    class_column: str | None  # None: the ids are `<picture>_<class>`
    folder: Path
    pictures: pd.Series  # each row's picture name (no extension)
    labels: pd.Series  # each row's class, as text


def _few_classes(pictures: pd.Series, labels: pd.Series) -> bool:
    """Classes few, and pictures that hold several of them (else the column is not a class)."""
    n = labels.nunique()
    return 1 <= n <= _MAX_CLASSES and bool(pictures.duplicated().any()) and len(labels) >= 2 * n


def _layout(table: object, found: dict[Path, dict[str, Path]], exclude: set[Path]) -> _Layout | None:
    frame: pd.DataFrame = table.frame  # type: ignore[attr-defined]
    if frame.empty or frame.shape[1] not in (2, 3):
        return None
    for value in frame.columns:
        if not _is_encoding(frame[value]):
            continue
        others = [str(c) for c in frame.columns if c != value]
        readings = []
        if len(others) == 1:
            ids = frame[others[0]].astype(str).str.strip()
            if ids.str.contains("_").all():
                parts = ids.str.rpartition("_")
                readings.append((others[0], None, parts[0], parts[2]))
        else:
            for id_column, class_column in (others, others[::-1]):
                readings.append((id_column, class_column, frame[id_column].astype(str).str.strip(),
                                 frame[class_column].map(class_name)))
        for id_column, class_column, pictures, labels in readings:
            if not _few_classes(pictures, labels):
                continue
            folder = named_folder(pictures, found, exclude)
            if folder is not None:
                return _Layout(table, id_column, str(value), class_column, folder, picture_names(pictures),
                               labels.map(class_name))
    return None


def _sample(layouts: list[_Layout]) -> _Layout | None:
    """The sample: named so, else naming a test folder; ties by path."""
    def rank(layout: _Layout) -> tuple[bool, bool, str]:
        path = layout.table.path.as_posix()  # type: ignore[attr-defined]
        return (not re.search(r"sample|submission", path, re.I), "test" not in layout.folder.as_posix().lower(), path)

    named = sorted(layouts, key=rank)
    return named[0] if named and rank(named[0])[:2] != (True, True) else None


def find_class_mask_task(raw: Path, found: dict[Path, dict[str, Path]], tables: list, page: str,
                         notes: list[str]) -> MaskTask | None:
    """The competition as masks per picture and class, or None when its files are not laid out so."""
    layouts = [layout for table in tables if (layout := _layout(table, found, set())) is not None]
    sample = _sample(layouts)
    if sample is None:
        return None
    train = next((_layout(t, found, {sample.folder}) for t in tables
                  if t is not sample.table and _layout(t, found, {sample.folder}) is not None), None)
    if train is None:
        return None
    frame: pd.DataFrame = train.table.frame  # type: ignore[attr-defined]
    values = frame[train.value_column]
    if values.map(is_blank).all():
        return None  # a blank column reads as encodings too: a training table holds some masks
    seen = list(dict.fromkeys(sample.labels))
    classes = [c for c in seen if c in set(train.labels)] + sorted(set(train.labels) - set(seen))
    listed = set(train.pictures) & found[train.folder].keys()
    missing_is_empty = not bool(values.map(is_blank).any()) and len(listed) < len(found[train.folder])
    strings = values[~values.map(is_blank)]
    relative = is_relative([[s] for s in strings.head(2000)])
    keyed = pd.DataFrame({"picture": train.pictures, "value": values})
    order = _order(page, notes, _oblong_strings(keyed, "picture", "value", found[train.folder]), relative)
    rel = lambda d: d.relative_to(raw).as_posix()  # noqa: E731
    sample_values = sample.table.frame[sample.value_column].astype(str).str.strip()  # type: ignore[attr-defined]
    task = MaskTask(source="rle_table", train_dir=rel(train.folder), test_dir=rel(sample.folder),
                    table=train.table.path.as_posix(), table_id=train.id_column,  # type: ignore[attr-defined]
                    table_value=train.value_column, table_class=train.class_column,
                    missing_is_empty=missing_is_empty,
                    n_train=len(found[train.folder]) if missing_is_empty else len(listed),
                    n_test=len(found[sample.folder]), sample=sample.table.path.as_posix(),  # type: ignore[attr-defined]
                    id_column=sample.id_column, value_column=sample.value_column, sample_class=sample.class_column,
                    per_object=False, order=order, relative=relative,
                    empty="-1" if (sample_values == "-1").any() else "", classes=classes)
    def spelled(layout: _Layout) -> str:
        return (f"{layout.id_column!r} as <picture>_<class>" if layout.class_column is None
                else f"pictures in {layout.id_column!r}, classes in {layout.class_column!r}")

    notes.append(f"segmentation per picture and class: {len(classes)} classes {classes[:10]} from {task.table} "
                 f"({spelled(train)}, masks in {train.value_column!r}"
                 + (", only the pairs with a mask listed" if missing_is_empty else "") + ")")
    notes.append(f"segmentation: {task.n_train} training pictures in {task.train_dir}/, {task.n_test} test pictures "
                 f"in {task.test_dir}/; the submission {task.sample} has one row per (picture, class) "
                 f"({spelled(sample)}, {sample.value_column!r}), no mask written as {task.empty or 'a blank cell'!r}")
    return task
