"""Pictures stacked in one array: `train_images.npy` holding N pictures beside a table of N rows.

Perception finds them (an array of three or four axes whose pictures have a picture's shape and
whose count matches a table's rows), and the setup unpacks each once into one `.npy` per picture,
named by its position (`0.npy`, `1.npy`, ...), under the workspace's `setup/pictures/` (never in
raw/), so every later stage sees ordinary picture files. Row i of the table is picture i.
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from agentk.core.pictures import ARRAY_EXTENSIONS, PICTURES_FOLDER, array_layout, array_shape, npz_shapes

__all__ = ["PICTURES_FOLDER", "PictureStack", "find_stacks", "unpack_stack"]
_MIN_PICTURES = 2
_MAX_STACKS = 8  # a split's pictures come in one array, or a few
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_DONE = ".complete"


@dataclass(frozen=True)
class PictureStack:
    path: Path  # absolute
    member: str | None  # the array's name inside an .npz
    shape: tuple[int, ...]

    @property
    def count(self) -> int:
        return self.shape[0]

    @property
    def name(self) -> str:
        """A folder name: the file's stem, and the array's name for an .npz member."""
        base = self.path.name.split(".")[0]
        return _UNSAFE.sub("_", f"{base}_{self.member}" if self.member else base).lstrip(".") or "stack"

    def label(self, raw: Path) -> str:
        where = self.path.relative_to(raw).as_posix() if raw in self.path.parents else self.path.name
        return f"{where}[{self.member!r}]" if self.member else where


def stack_shapes(path: Path) -> dict[str | None, tuple[int, ...]]:
    """The arrays of a .npy or .npz that hold several pictures each, by member name."""
    if path.name.lower().endswith(".npz"):
        arrays: dict[str | None, tuple[int, ...]] = dict(npz_shapes(path))
    else:
        shape = array_shape(path)
        arrays = {None: shape} if shape is not None else {}
    # An array shaped like one picture (3x64x64: channels first) is that picture, not three.
    return {name: shape for name, shape in arrays.items()
            if len(shape) in (3, 4) and shape[0] >= _MIN_PICTURES and array_layout(shape[1:]) is not None
            and array_layout(shape) is None}


def find_stacks(files: list[Path], row_counts: set[int]) -> list[PictureStack]:
    """Arrays of pictures whose count is some table's number of rows (the table that says what
    each picture is)."""
    found = []
    for path in files:
        if not path.name.lower().endswith(ARRAY_EXTENSIONS):
            continue
        for member, shape in stack_shapes(path).items():
            if shape[0] in row_counts:
                found.append(PictureStack(path, member, shape))
        if len(found) > _MAX_STACKS:
            return []  # one array per row (a clip, a volume), not a split's pictures in one array
    return found


def unpack_stack(stack: PictureStack, folder: Path) -> Path:
    """One `.npy` per picture under `folder/<stack name>/`, in the stack's order; done once (a
    marker says it finished), written beside and renamed so a killed run leaves no half folder."""
    dest = folder / stack.name
    if (dest / _DONE).is_file():
        return dest
    building = folder / f".{stack.name}.building"
    shutil.rmtree(building, ignore_errors=True)
    building.mkdir(parents=True)
    if stack.member is None:
        arrays = np.load(stack.path, mmap_mode="r", allow_pickle=False)
        _write(arrays, building)
    else:
        with np.load(stack.path, allow_pickle=False) as archive:
            _write(archive[stack.member], building)
    (building / _DONE).write_text(f"{stack.count}\n", encoding="utf-8")
    shutil.rmtree(dest, ignore_errors=True)
    os.replace(building, dest)
    return dest


def _write(arrays: np.ndarray, dest: Path) -> None:
    for i in range(arrays.shape[0]):
        np.save(dest / f"{i}.npy", np.ascontiguousarray(arrays[i]))
