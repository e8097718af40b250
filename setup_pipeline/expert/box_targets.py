"""Object-detection competitions, recognised from the files: a sample submission of one cell of
boxes per test picture (`image_id,PredictionString` holding `conf x y w h ...`), test pictures
named by its ids, and a training table that names training pictures and gives their boxes, one
row per box or per picture: in one cell (`[x, y, w, h]`, `x y w h ...`) or in four number columns
(x, y, width, height; or the corners). A row without a box is a picture without objects.

Such a task is solved as masks whose objects are boxes (agentk.core.box_targets): the task is a
`MaskTask` with `output="boxes"`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import pandas as pd

from agentk.core import metrics
from agentk.core.box_targets import BoxFormat, cell_boxes
from agentk.core.boxes import parse_boxes
from agentk.core.masks import is_blank
from setup_pipeline.expert.mask_targets import MaskTask, named_folder, picture_folders, picture_names, training_tables

_CHECKED = 2000  # cells read to decide what a column holds
# Column names of four box columns, by what each holds (lower case, spaces and dashes as `_`).
_SIZE_NAMES = ({"x", "xmin", "x_min", "left", "bbox_x", "box_x", "x0"}, {"y", "ymin", "y_min", "top", "bbox_y", "box_y", "y0"},
               {"w", "width", "bbox_width", "box_width", "bbox_w"}, {"h", "height", "bbox_height", "box_height", "bbox_h"})
_CORNER_NAMES = ({"xmin", "x_min", "x1", "left", "x0"}, {"ymin", "y_min", "y1", "top", "y0"},
                 {"xmax", "x_max", "x2", "right"}, {"ymax", "y_max", "y2", "bottom"})


def _boxes_cells(values: pd.Series, scored: bool) -> bool:
    """Every cell blank or boxes: `conf x y w h` groups (`scored`, a submission) or groups of four
    numbers (a training cell); at least one cell holds a box."""
    seen = False
    for value in values.head(_CHECKED):
        if is_blank(value):
            continue
        try:
            found = len(parse_boxes(value, confidence=True)) if scored else len(cell_boxes(value))
        except ValueError:
            return False
        seen = seen or found > 0
    return seen


def _sample(tables: list, found: dict, page_metric: str | None) -> tuple[object, object] | None:
    """(table, test folder): two columns, one row per picture of a folder, the second holding boxes
    with confidences (blank cells too when the page scores boxes)."""
    boxes_page = page_metric is not None and metrics.get_metric(page_metric).kind == "boxes"
    candidates = []
    for table in tables:
        frame: pd.DataFrame = table.frame
        if frame.shape[1] != 2 or frame.empty or not frame.iloc[:, 0].is_unique:
            continue
        values = frame.iloc[:, 1]
        if not (_boxes_cells(values, scored=True) or (boxes_page and values.map(is_blank).all())):
            continue
        folder = named_folder(frame.iloc[:, 0], found, set())
        if folder is not None:
            named = bool(re.search(r"sample|submission", table.path.as_posix(), re.I))
            candidates.append((not named, "test" not in folder.as_posix().lower(), table.path.as_posix(), table, folder))
    if not candidates:
        return None
    *_, table, folder = min(candidates, key=lambda c: c[:3])
    return table, folder


def _name(column: object) -> str:
    return re.sub(r"[\s\-]+", "_", str(column).strip().lower())


def _numeric(values: pd.Series) -> bool:
    filled = values[~values.map(is_blank)].head(_CHECKED)
    return not filled.empty and pd.to_numeric(filled, errors="coerce").notna().all()


def _four_columns(frame: pd.DataFrame, exclude: str) -> tuple[list[str], BoxFormat] | None:
    """Four number columns named as a box's corners, else as its corner and size."""
    names = {_name(c): str(c) for c in frame.columns if str(c) != exclude and _numeric(frame[c])}
    for groups, box_format in ((_CORNER_NAMES, "xyxy"), (_SIZE_NAMES, "xywh")):
        chosen = [next((names[n] for n in sorted(group) if n in names), None) for group in groups]
        if all(chosen) and len(set(chosen)) == 4:
            sizes = frame[chosen[2:]] if box_format == "xywh" else None
            if sizes is not None and all(sizes[c].nunique() <= 1 for c in chosen[2:]) and len(frame) > 20:
                continue  # one width and height for every row: the picture's size, not a box's
            return [c for c in chosen if c], box_format  # type: ignore[return-value]
    return None


def _box_table(tables: list, sample: object, found: dict, test: object) -> tuple[object, str, list[str], BoxFormat, object] | None:
    """(table, id column, box columns, their format, picture folder) of a training table of boxes."""
    for table, id_column, folder in training_tables(tables, sample, found, test):  # type: ignore[arg-type]
        frame: pd.DataFrame = table.frame  # type: ignore[attr-defined]
        for column in frame.columns:
            if column != id_column and not _numeric(frame[column]) and _boxes_cells(frame[column], scored=False):
                return table, id_column, [str(column)], "xywh", folder
        four = _four_columns(frame, id_column)
        if four is not None:
            return table, id_column, four[0], four[1], folder
    return None


def _listed(rows: pd.DataFrame, id_column: str, columns: Sequence[str]) -> tuple[set[str], bool]:
    """(pictures the table names, whether some row gives no box)."""
    blank = rows[list(columns)].map(is_blank).any(axis=1)
    return set(picture_names(rows[id_column])), bool(blank.any())


def find_box_task(raw, images: list, tables: list, page_metric: str | None, thresholds: list[float] | None,
                  notes: list[str]) -> MaskTask | None:
    """The competition as a detection task, or None when its files are not laid out as one."""
    found = picture_folders(images)
    sampled = _sample(tables, found, page_metric)
    if sampled is None:
        return None
    sample, test = sampled
    train = _box_table(tables, sample, found, test)
    if train is None:
        return None
    table, id_column, columns, box_format, pictures = train
    rel = lambda d: d.relative_to(raw).as_posix()  # noqa: E731
    rows: pd.DataFrame = table.frame  # type: ignore[attr-defined]
    listed, blank_rows = _listed(rows, id_column, columns)
    names = found[pictures].keys()  # type: ignore[index]
    missing_is_empty = not blank_rows and len(listed & names) < len(names)
    frame: pd.DataFrame = sample.frame  # type: ignore[attr-defined]
    sample_id, sample_value = (str(c) for c in frame.columns)
    per_object = bool(picture_names(rows[id_column]).duplicated().any())
    task = MaskTask(source="box_table", output="boxes", train_dir=rel(pictures), test_dir=rel(test),
                    table=table.path.as_posix(), table_id=id_column, box_columns=columns,  # type: ignore[attr-defined]
                    box_format=box_format, missing_is_empty=missing_is_empty,
                    n_train=len(names) if missing_is_empty else len(listed & names), n_test=len(found[test]),  # type: ignore[index]
                    sample=sample.path.as_posix(), id_column=sample_id, value_column=sample_value,  # type: ignore[attr-defined]
                    per_object=True, thresholds=thresholds)
    where = f"column {columns[0]!r}" if len(columns) == 1 else f"columns {columns} ({box_format})"
    notes.append(f"detection: {task.n_train} training pictures in {task.train_dir}/, their boxes in {task.table} "
                 f"({where}, keyed by {id_column!r}, " + ("one row per box)" if per_object else "one row per picture)"))
    if missing_is_empty:
        notes.append(f"boxes: {task.table} lists only pictures with boxes: the other "
                     f"{len(names) - len(listed & names)} training pictures have none")
    notes.append(f"detection: {task.n_test} test pictures in {task.test_dir}/; the submission {task.sample} has one "
                 f"row per picture ({sample_id!r}, {sample_value!r}: `conf x y w h ...`, most confident first)")
    return task


def box_metric(page_metric: str | None) -> tuple[str, str | None]:
    """(metric, assumption or None): the page's boxes metric, else mean average precision of boxes."""
    if page_metric is not None and metrics.get_metric(page_metric).kind == "boxes":
        return page_metric, None
    return "map_boxes", f"metric: map_boxes — the page names {page_metric or 'no metric'}, and the submission holds boxes"
