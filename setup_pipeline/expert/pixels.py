"""Image-to-image competitions, recognised from the files: two folders of the same file names (the
training inputs and their targets), a third of other names (the test inputs), and a sample
submission with one row per pixel, `<image>_<row>_<col>`.

Which folder of the pair holds the inputs is read from the names first (the test folder with
"test" spelled "train", or the one name inside the other: `train` in `train_cleaned`), then from
the pictures: the test inputs look like the training inputs, not like their targets.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd
from pydantic import BaseModel

from agentk.core.pixels import PIXEL_ID, image_keys, read_picture

_MIN_PAIRS = 2
_SHARED = 0.9  # of the smaller folder's names, for two folders to be a pair


class PixelTask(BaseModel):
    """Where an image-to-image competition's pictures are, and how its submission spells pixels.
    Paths are relative to raw/."""

    train_dir: str  # the training inputs
    target_dir: str  # their targets, by the same file names
    test_dir: str
    n_pairs: int
    n_test: int
    sample: str
    id_column: str
    value_column: str
    base: Literal[0, 1] = 1  # the first row and column's number in a pixel id
    order: Literal["row_col", "col_row"] = "row_col"  # which number comes first in a pixel id
    scale: float = 255.0  # submission value = stored intensity / scale


def _folders(images: list[Path]) -> dict[Path, dict[str, Path]]:
    by_dir: dict[Path, dict[str, Path]] = defaultdict(dict)
    for path in images:
        by_dir[path.parent][path.stem] = path
    return by_dir


def _look(paths: list[Path]) -> np.ndarray:
    """A folder's look in a few numbers (mean, spread, darkest and brightest tenth) over a few pictures."""
    stats = []
    for path in paths[:6]:
        try:
            picture = read_picture(path)
        except (OSError, ValueError):
            continue
        stats.append([picture.mean(), picture.std(), *np.percentile(picture, [10, 90])])
    return np.mean(stats, axis=0) if stats else np.zeros(4)


def _pixel_sample(tables: list, test_stems: set[str]) -> tuple[object, str, str] | None:
    """(table, id column, value column) of a two-column table whose ids name test pixels."""
    for table in tables:
        frame: pd.DataFrame = table.frame
        if frame.shape[1] != 2 or frame.empty:
            continue
        id_column, value_column = frame.columns
        head = frame[id_column].head(1000).astype(str).str.strip()
        if head.str.match(PIXEL_ID.pattern).mean() < 0.95:
            continue
        keys = image_keys(frame[id_column])
        if keys and len(keys & test_stems) >= 0.9 * len(keys):
            return table, str(id_column), str(value_column)
    return None


def _input_of_pair(a: Path, b: Path, test: Path, raw: Path, found: dict[Path, dict[str, Path]],
                   notes: list[str]) -> tuple[Path, Path]:
    """(inputs, targets) of a pair of folders."""
    ra, rb, rt = (p.relative_to(raw).as_posix().lower() for p in (a, b, test))
    for inputs, targets, name in ((a, b, ra), (b, a, rb)):
        if rt.replace("test", "train") == name:
            notes.append(f"image to image: {name}/ holds the inputs (the test folder's name with 'test' read as 'train')")
            return inputs, targets
    if ra in rb and ra != rb:
        notes.append(f"image to image: {ra}/ holds the inputs (its name is part of {rb}'s)")
        return a, b
    if rb in ra and ra != rb:
        notes.append(f"image to image: {rb}/ holds the inputs (its name is part of {ra}'s)")
        return b, a
    look_test = _look(sorted(found[test].values()))
    far_a = float(np.abs(_look(sorted(found[a].values())) - look_test).sum())
    far_b = float(np.abs(_look(sorted(found[b].values())) - look_test).sum())
    inputs, targets = (a, b) if far_a <= far_b else (b, a)
    notes.append(f"image to image: {inputs.relative_to(raw).as_posix()}/ holds the inputs (its pictures look "
                 f"like the test pictures: distance {min(far_a, far_b):.3f} against {max(far_a, far_b):.3f})")
    return inputs, targets


def _numbering(frame: pd.DataFrame, id_column: str, stem: str, shape: tuple[int, int]) -> tuple[int, str] | None:
    """(base, order) of the sample's pixel ids, from one test picture's rows; None when the sample
    does not list that picture pixel by pixel."""
    ids = frame[id_column].astype(str).str.strip()
    mine = ids[ids.str.startswith(stem + "_")]
    parts = mine.str.extract(PIXEL_ID.pattern)
    parts = parts[parts["image"] == stem]
    if len(parts) != shape[0] * shape[1]:
        return None
    first, second = parts["row"].astype(int), parts["col"].astype(int)
    base = int(min(first.min(), second.min()))
    if base not in (0, 1):
        return None
    height, width = shape
    if (first.max() - base + 1, second.max() - base + 1) == (height, width):
        return base, "row_col"
    if (first.max() - base + 1, second.max() - base + 1) == (width, height):
        return base, "col_row"
    return None


def find_pixel_task(raw: Path, images: list[Path], tables: list, notes: list[str]) -> PixelTask | None:
    """The competition as an image-to-image task, or None when its files are not laid out as one."""
    found = _folders(images)
    if len(found) < 3:
        return None
    folders = sorted(found, key=lambda d: d.as_posix())
    # Only folders of _MIN_PAIRS pictures or more can be half of a pair: a layout of one folder per
    # picture (train/<id>/<id>.png) otherwise compares every two of its thousands of folders.
    pairable = [d for d in folders if len(found[d]) >= _MIN_PAIRS]
    pairs = []
    for i, a in enumerate(pairable):
        for b in pairable[i + 1:]:
            shared = found[a].keys() & found[b].keys()
            if len(shared) >= max(_MIN_PAIRS, _SHARED * min(len(found[a]), len(found[b]))):
                pairs.append((len(shared), a, b))
    for _, a, b in sorted(pairs, key=lambda p: -p[0]):
        tests = [d for d in folders if d not in (a, b) and not (found[d].keys() & found[a].keys())]
        for test in sorted(tests, key=lambda d: -len(found[d])):
            sample = _pixel_sample(tables, set(found[test]))
            if sample is None:
                continue
            table, id_column, value_column = sample
            inputs, targets = _input_of_pair(a, b, test, raw, found, notes)
            stem, path = next(iter(sorted(found[test].items())))
            shape = read_picture(path).shape
            numbering = _numbering(table.frame, id_column, stem, shape)
            if numbering is None:
                notes.append(f"{table.path.as_posix()} names pixels of the test pictures, but not one row per "
                             f"pixel of {path.name} ({shape[0]}x{shape[1]}): not read as an image-to-image task")
                return None
            base, order = numbering
            values = pd.to_numeric(table.frame[value_column].head(10_000), errors="coerce")
            scale = 1.0 if values.max() > 1 else 255.0
            rel = lambda d: d.relative_to(raw).as_posix()  # noqa: E731
            task = PixelTask(train_dir=rel(inputs), target_dir=rel(targets), test_dir=rel(test),
                             n_pairs=len(found[inputs].keys() & found[targets].keys()), n_test=len(found[test]),
                             sample=table.path.as_posix(), id_column=id_column, value_column=value_column,
                             base=base, order=order, scale=scale)  # type: ignore[arg-type]
            notes.append(
                f"image to image: {task.n_pairs} training pairs {task.train_dir}/ → {task.target_dir}/ by file "
                f"name, {task.n_test} test pictures in {task.test_dir}/; the submission {task.sample} has one row "
                f"per pixel, '{stem}_<{order.replace('_', '>_<')}>' counted from {base}, values "
                + ("as stored (0..255)" if scale == 1.0 else "in 0..1 (intensity / 255)"))
            return task
    return None
