"""The image block: each image column's files as small grey pixel grids, and the files' paths for
pretrained backbones that read the photos themselves."""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import PIL.Image  # noqa: F401 - pictures are read by Pillow (agentk.core.pictures): an export pins it by this line

from agentk.core.pictures import picture_image


def _image_path(path_value: object, base: Path) -> str:
    """The file a map's cell names, relative paths read from the setup folder ("" for none)."""
    if not isinstance(path_value, str) or not path_value.strip():
        return ""
    path = Path(path_value.strip())
    return str(path if path.is_absolute() else base / path)


def _load_image(path: str, size: int) -> np.ndarray:
    from PIL import Image

    pixels = np.zeros((size, size), dtype=np.float32)
    if not path:
        return pixels
    try:
        # Every image is read here before any budget applies: a JPEG is decoded at the smallest
        # scale that covers the grid (an eighth of a large photo's pixels).
        image = picture_image(path, "L", covering=size).resize((size, size), Image.Resampling.BILINEAR)
        pixels = np.asarray(image, dtype=np.float32) / 255.0
    except (OSError, ValueError) as error:  # a broken file should cost one row, not the run
        warnings.warn(f"cannot read image {path}: {error}")
    return pixels


def image_paths(frame: pd.DataFrame, base: Path) -> dict[str, list[str]]:
    """Each column's files, relative paths read from `base` (the setup folder)."""
    return {str(c): [_image_path(v, base) for v in frame[c].tolist()] for c in frame.columns}


def _image_block(paths: dict[str, list[str]], rows: int, size: int) -> np.ndarray:
    stacks = [
        np.stack([_load_image(p, size) for p in column]) if rows else
        np.zeros((0, size, size), dtype=np.float32)
        for column in paths.values()
    ]
    return np.stack(stacks, axis=1)  # (rows, image columns, size, size)


@dataclass
class ImageBlocks:
    train: np.ndarray | None = None  # (rows, image columns * size * size) pixels
    test: np.ndarray | None = None
    shape: tuple[int, int, int] | None = None  # (channels=image columns, h, w)
    paths_train: dict[str, list[str]] | None = None
    paths_test: dict[str, list[str]] | None = None


def image_blocks(train_img: pd.DataFrame, test_img: pd.DataFrame, base: Path, size: int) -> ImageBlocks:
    """The image columns both maps hold, paths read from `base` (the setup folder)."""
    columns = [c for c in train_img.columns if c in test_img.columns]
    if not columns:
        return ImageBlocks()
    paths_train, paths_test = image_paths(train_img[columns], base), image_paths(test_img[columns], base)
    return ImageBlocks(pixel_block(paths_train, len(train_img), size), pixel_block(paths_test, len(test_img), size),
                       (len(columns), size, size), paths_train, paths_test)


@dataclass(frozen=True)
class PictureFiles:
    """How a predictor reads the image map of unseen rows as the run's FeatureSet did: the columns
    the families read, by their files, and the side of the grey grids where pixel families read them."""

    columns: tuple[str, ...]
    side: int | None = None

    def paths(self, frame: pd.DataFrame, base: Path) -> dict[str, list[str]]:
        """Each column's files (`frame`: the image map's rows, indexed by id); relative paths from `base`."""
        absent = [c for c in self.columns if c not in frame.columns]
        if absent:
            raise ValueError(f"the image map gives no column {absent[0]!r} of the model's inputs")
        paths = image_paths(frame[list(self.columns)], base)
        named = [p for column in paths.values() for p in column if p]
        absent = [p for p in named if not Path(p).exists()]
        # One file gone costs its row, as in the run; most gone is a test folder in another layout.
        if named and len(absent) * 2 > len(named):
            raise ValueError(f"{len(absent)} of the {len(named)} pictures the image map names are not there "
                             f"(e.g. {Path(absent[0]).name})")
        return paths

    def grids(self, paths: dict[str, list[str]], n_rows: int) -> np.ndarray | None:
        return None if self.side is None else pixel_block(paths, n_rows, self.side)


def pixel_block(paths: dict[str, list[str]], rows: int, size: int) -> np.ndarray:
    """(rows, image columns * size * size): each row's grey grids, column after column."""
    return _image_block(paths, rows, size).reshape(rows, -1)
