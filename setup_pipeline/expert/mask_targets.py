"""Segmentation competitions, recognised from the files: a sample submission of one run-length
encoded mask per test picture (`id,rle_mask`), test pictures named by its ids, and training masks
either as picture files paired with the training pictures by name (`train/images/x.png` beside
`train/masks/x.png`) or as run-length strings in a table (`ImageId,EncodedPixels`, one row per
image or per object, blank/-1 for none).

Which folder of a pair holds the masks is read from the pictures (a mask has two levels), then
from the names. How pixels are numbered (column-major unless the page says rows first) and
whether starts are relative are read from the page and the training strings.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd
from pydantic import BaseModel

from agentk.core import metrics
from agentk.core.masks import is_blank, rle_numbers
from agentk.core.metrics.spatial import is_relative, stated_thresholds

_SHARED = 0.9  # of the smaller folder's names, for two folders to be a pair (or a table to name a folder)
_BINARY = 0.995  # of a mask picture's pixels at its darkest or brightest level
_ROWS_FIRST = re.compile(r"left\s+to\s+right,?\s+(and\s+)?then\s+top\s+to\s+bottom|row[\s-]?major|row\s+by\s+row", re.I)
_COLUMNS_FIRST = re.compile(r"top\s+to\s+bottom,?\s+(and\s+)?then\s+left\s+to\s+right|column[\s-]?major|column\s+by\s+column", re.I)


class MaskTask(BaseModel):
    """Where a segmentation competition's pictures and masks are, and how its submission encodes
    them. Paths are relative to raw/."""

    source: Literal["mask_files", "rle_table", "box_table"]
    output: Literal["rle", "boxes"] = "rle"  # boxes: a detection task (setup_pipeline/expert/box_targets.py)
    train_dir: str  # the training pictures
    test_dir: str
    mask_dir: str | None = None  # mask_files: the masks, by the training pictures' names
    table: str | None = None  # rle_table: the training strings
    table_id: str | None = None
    table_value: str | None = None
    missing_is_empty: bool = False  # rle_table: a training picture the table does not list has no mask
    n_train: int
    n_test: int
    sample: str
    id_column: str
    value_column: str
    per_object: bool  # one row per object (the training table lists objects), else one per picture
    order: Literal["F", "C"] = "F"  # pixels numbered down the columns first, or along the rows
    relative: bool = False  # each start counted from the end of the run before
    empty: str = ""  # how the submission writes a picture without a mask
    thresholds: list[float] | None = None  # the IoU thresholds the page states (map_iou)
    box_columns: list[str] | None = None  # box_table: one cell of boxes, or four number columns
    box_format: Literal["xywh", "xyxy"] = "xywh"  # box_table: corner and size, or two corners
    # Masks per picture and class (class_masks.py): the classes, bit k - 1 of a mask the k-th (from 1);
    # the sample's class column, or None when its ids are `<picture>_<class>`; the same of the table.
    classes: list[str] | None = None
    sample_class: str | None = None
    table_class: str | None = None


def picture_folders(images: list[Path]) -> dict[Path, dict[str, Path]]:
    by_dir: dict[Path, dict[str, Path]] = defaultdict(dict)
    for path in images:
        by_dir[path.parent][path.stem] = path
    return by_dir


def picture_names(values: pd.Series) -> pd.Series:
    """Table ids as picture names: `a1.jpg` and `a1` both name the picture a1.png."""
    cells = values.astype(str).str.strip()
    return cells.where(~cells.str.contains(r"\.[A-Za-z]{3,4}$", regex=True), cells.str.rsplit(".", n=1).str[0])


def _is_encoding(values: pd.Series) -> bool:
    """Every cell blank/-1 or pairs of non-negative integers (a placeholder `1 1` too)."""
    try:
        for value in values.head(2000):
            rle_numbers(value)
    except ValueError:
        return False
    return True


def named_folder(ids: pd.Series, found: dict[Path, dict[str, Path]], exclude: set[Path]) -> Path | None:
    """The folder whose picture names the ids are, nearly all of them."""
    keys = set(picture_names(ids))
    best = max((d for d in found if d not in exclude), key=lambda d: len(keys & found[d].keys()), default=None)
    if best is None or len(keys & found[best].keys()) < max(2, _SHARED * len(keys)):
        return None
    return best


def _binary_share(paths: list[Path]) -> float:
    """How much of a few pictures lies at their darkest or brightest level (a mask: all of it)."""
    from PIL import Image

    shares = []
    for path in paths[:6]:
        try:
            with Image.open(path) as image:
                values = np.asarray(image.convert("L"))
        except OSError:
            continue
        shares.append(float(np.isin(values, [values.min(), values.max()]).mean()))
    return min(shares) if shares else 0.0


def _sample(tables: list, found: dict[Path, dict[str, Path]]) -> tuple[object, Path] | None:
    """(table, test folder) of a two-column table of encodings, one row per picture of a folder.
    A training table may look the same: the sample is named so or names a test folder, and holds
    placeholders (few distinct cells) where a training table holds masks."""
    candidates = []
    for table in tables:
        frame: pd.DataFrame = table.frame
        if frame.shape[1] != 2 or frame.empty or not frame.iloc[:, 0].is_unique:
            continue
        if not _is_encoding(frame.iloc[:, 1]):
            continue
        folder = named_folder(frame.iloc[:, 0], found, set())
        if folder is not None and len(found[folder]) <= len(frame) / _SHARED:
            named = bool(re.search(r"sample|submission", table.path.as_posix(), re.I))
            candidates.append((not named, "test" not in folder.as_posix().lower(),
                               frame.iloc[:, 1].nunique() / len(frame), table.path.as_posix(), table, folder))
    if not candidates:
        return None
    *_, table, folder = min(candidates, key=lambda c: c[:4])
    return table, folder


def _mask_pair(found: dict[Path, dict[str, Path]], test: Path, raw: Path,
               notes: list[str]) -> tuple[Path, Path] | None:
    """(pictures, masks): two folders of the same names, one of them two-level pictures."""
    folders = sorted((d for d in found if d != test), key=lambda d: d.as_posix())
    for i, a in enumerate(folders):
        for b in folders[i + 1:]:
            shared = found[a].keys() & found[b].keys()
            if len(shared) < max(2, _SHARED * min(len(found[a]), len(found[b]))):
                continue
            names = sorted(shared)
            share_a = _binary_share([found[a][n] for n in names])
            share_b = _binary_share([found[b][n] for n in names])
            rel = {d: d.relative_to(raw).as_posix() for d in (a, b)}
            if max(share_a, share_b) >= _BINARY and min(share_a, share_b) < _BINARY:
                pictures, masks = (a, b) if share_b > share_a else (b, a)
                notes.append(f"masks: {rel[masks]}/ holds two-level pictures by the names of {rel[pictures]}/")
                return pictures, masks
            named = [d for d in (a, b) if "mask" in rel[d].lower()]
            if len(named) == 1:
                masks = named[0]
                notes.append(f"masks: {rel[masks]}/ holds the masks (its name says so)")
                return (b if masks == a else a), masks
    return None


def training_tables(tables: list, sample: object, found: dict[Path, dict[str, Path]],
                    test: Path) -> Iterator[tuple[object, str, Path]]:
    """(table, id column, picture folder): each table but the sample with a column naming the
    pictures of a folder other than the test's."""
    for table in tables:
        frame: pd.DataFrame = table.frame
        if table is sample or frame.empty or frame.shape[1] < 2:
            continue
        for id_column in frame.columns:
            folder = named_folder(frame[id_column], found, {test})
            if folder is not None:
                yield table, str(id_column), folder


def _rle_table(tables: list, sample: object, found: dict[Path, dict[str, Path]],
               test: Path) -> tuple[object, str, str, Path] | None:
    """(table, id column, encoding column, picture folder) of a training table of encodings."""
    for table, id_column, folder in training_tables(tables, sample, found, test):
        frame: pd.DataFrame = table.frame  # type: ignore[attr-defined]
        for value_column in frame.columns:
            values = frame[value_column]
            if value_column == id_column or values.map(is_blank).all() or not _is_encoding(values):
                continue
            others = [c for c in frame.columns if c not in (id_column, value_column)]
            # A column that varies within a picture (a class per mask) is a task of its own.
            if any(frame.groupby(id_column)[c].nunique().max() > 1 for c in others):
                return None
            return table, id_column, str(value_column), folder
    return None


def _components(strings: Sequence[tuple[str, tuple[int, int]]], order: Literal["F", "C"], relative: bool) -> int:
    """Connected components of the masks decoded in `order` (a wrong order scatters a blob into strips)."""
    from scipy import ndimage

    from agentk.core.masks import rle_decode

    total = 0
    for value, shape in strings:
        try:
            total += ndimage.label(rle_decode(value, shape, order, relative))[1]
        except ValueError:
            continue
    return total


def _order(page: str, notes: list[str], decoded: Sequence[tuple[str, tuple[int, int]]] = (),
           relative: bool = False) -> Literal["F", "C"]:
    """How pixels are numbered: as the page says; else, from training strings of pictures that are
    not square, the order that decodes them into fewer pieces; else Kaggle's usual column-major."""
    if _ROWS_FIRST.search(page) and not _COLUMNS_FIRST.search(page):
        notes.append("masks: pixels are numbered along the rows first (the page says so)")
        return "C"
    if _COLUMNS_FIRST.search(page):
        notes.append("masks: pixels are numbered top to bottom, then left to right (the page says so)")
        return "F"
    if decoded:
        by_columns, by_rows = _components(decoded, "F", relative), _components(decoded, "C", relative)
        if by_rows < 0.8 * by_columns:
            notes.append(f"masks: pixels are numbered along the rows first: {len(decoded)} training masks decode "
                         f"into {by_rows} pieces so, {by_columns} down the columns (the page does not say)")
            return "C"
        if by_columns < 0.8 * by_rows:
            notes.append(f"masks: pixels are numbered top to bottom, then left to right: {len(decoded)} training masks "
                         f"decode into {by_columns} pieces so, {by_rows} along the rows (the page does not say)")
            return "F"
    notes.append("masks: pixels are numbered top to bottom, then left to right (Kaggle's usual numbering; "
                 "the page does not say)")
    return "F"


def _oblong_strings(rows: pd.DataFrame, table_id: str, table_value: str,
                    pictures: dict[str, Path]) -> list[tuple[str, tuple[int, int]]]:
    """Up to 30 training strings of pictures that are not square, with their pictures' shapes."""
    from agentk.core.mask_targets import picture_shape

    found = []
    for key, value in zip(picture_names(rows[table_id]), rows[table_value]):
        if is_blank(value) or key not in pictures:
            continue
        shape = picture_shape(pictures[key])
        if shape[0] != shape[1]:
            found.append((str(value), shape))
        if len(found) >= 30:
            break
    return found


def find_mask_task(raw: Path, images: list[Path], tables: list, page: str, notes: list[str]) -> MaskTask | None:
    """The competition as a segmentation task, or None when its files are not laid out as one."""
    found = picture_folders(images)
    sampled = _sample(tables, found)
    if sampled is None:
        from setup_pipeline.expert.class_masks import find_class_mask_task

        return find_class_mask_task(raw, found, tables, page, notes)
    sample, test = sampled
    frame: pd.DataFrame = sample.frame  # type: ignore[attr-defined]
    id_column, value_column = (str(c) for c in frame.columns)
    rel = lambda d: d.relative_to(raw).as_posix()  # noqa: E731
    common = dict(test_dir=rel(test), n_test=len(found[test]), sample=sample.path.as_posix(),  # type: ignore[attr-defined]
                  id_column=id_column, value_column=value_column,
                  empty="-1" if (frame[value_column].str.strip() == "-1").any() else "",
                  thresholds=list(stated_thresholds(page) or []) or None)
    pair = _mask_pair(found, test, raw, notes)
    if pair is not None:
        pictures, masks = pair
        task = MaskTask(source="mask_files", train_dir=rel(pictures), mask_dir=rel(masks), per_object=False,
                        order=_order(page, notes), n_train=len(found[pictures].keys() & found[masks].keys()), **common)
        notes.append(f"segmentation: {task.n_train} training pictures {task.train_dir}/ with their masks in "
                     f"{task.mask_dir}/ by file name")
    else:
        train = _rle_table(tables, sample, found, test)
        if train is None:
            return None
        table, table_id, table_value, pictures = train
        rows = table.frame  # type: ignore[attr-defined]
        strings = rows[table_value][~rows[table_value].map(is_blank)]
        listed = set(picture_names(rows[table_id]))
        blank_rows = bool(rows[table_value].map(is_blank).any())
        missing_is_empty = not blank_rows and len(listed) < len(found[pictures])
        per_object = bool(picture_names(rows.loc[strings.index, table_id]).duplicated().any())
        relative = is_relative([[s] for s in strings.head(2000)])
        task = MaskTask(source="rle_table", train_dir=rel(pictures), table=table.path.as_posix(),  # type: ignore[attr-defined]
                        table_id=table_id, table_value=table_value, missing_is_empty=missing_is_empty,
                        per_object=per_object, relative=relative,
                        order=_order(page, notes, _oblong_strings(rows, table_id, table_value, found[pictures]), relative),
                        n_train=len(found[pictures]) if missing_is_empty else len(listed & found[pictures].keys()),
                        **common)
        notes.append(f"segmentation: {task.n_train} training pictures in {task.train_dir}/, their masks run-length "
                     f"encoded in {task.table} ({table_id!r}, {table_value!r}), "
                     + ("one row per object" if per_object else "one row per picture")
                     + (", starts relative to the run before" if relative else ""))
        if missing_is_empty:
            notes.append(f"masks: {task.table} lists only pictures with a mask (no blank rows): the other "
                         f"{len(found[pictures]) - len(listed & found[pictures].keys())} training pictures have none")
    notes.append(f"segmentation: {task.n_test} test pictures in {task.test_dir}/; the submission {task.sample} has "
                 + ("one row per object" if task.per_object else "one row per picture")
                 + f" ({id_column!r}, {value_column!r}), no mask written as {task.empty or 'a blank cell'!r}")
    return task


def mask_metric(task: MaskTask, page_metric: str | None) -> tuple[str, str | None]:
    """(metric, assumption or None): the page's mask metric, else what such a task is scored by."""
    if page_metric is not None and metrics.get_metric(page_metric).kind in ("mask", "instances"):
        return page_metric, None
    fallback = "map_iou" if task.per_object else "dice"
    return fallback, (f"metric: {fallback} — the page names {page_metric or 'no metric'}, and the submission "
                      + ("lists objects" if task.per_object else "holds one mask per picture"))
