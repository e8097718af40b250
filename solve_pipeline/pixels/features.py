"""What a pixel model reads about each pixel: its own value, its neighbours, and the paper around it.

A Kaggle grandmaster's first model for cleaning scans: every pixel a row, its local window and
estimates of the background (maxima, medians and means over growing neighbourhoods: ink is dark,
paper is bright and varies slowly), the contrast against that background, and the picture's own
levels. scipy's filters make every feature one pass over the picture.
"""

from __future__ import annotations

import numpy as np
from scipy import ndimage

_WINDOW = 2  # the neighbours within this many pixels are features of their own (a 5x5 window)
_SCALES = (3, 7, 15, 31)


def _neighbours(picture: np.ndarray) -> list[np.ndarray]:
    padded = np.pad(picture, _WINDOW, mode="reflect")
    h, w = picture.shape
    size = 2 * _WINDOW + 1
    return [padded[dy:dy + h, dx:dx + w] for dy in range(size) for dx in range(size)
            if (dy, dx) != (_WINDOW, _WINDOW)]


def _background(picture: np.ndarray) -> np.ndarray:
    """The paper without the ink: a median over a wide window of a quarter-size copy."""
    small = picture[::4, ::4]
    smooth = ndimage.median_filter(small, size=5, mode="reflect")
    grown = np.kron(smooth, np.ones((4, 4), dtype=np.float32))
    return grown[: picture.shape[0], : picture.shape[1]]


def feature_names() -> list[str]:
    size = 2 * _WINDOW + 1
    names = ["value"]
    names += [f"n_{dy - _WINDOW}_{dx - _WINDOW}" for dy in range(size) for dx in range(size) if (dy, dx) != (_WINDOW, _WINDOW)]
    for k in _SCALES:
        names += [f"mean_{k}", f"max_{k}", f"min_{k}", f"std_{k}", f"minus_max_{k}"]
    names += ["background", "minus_background", "ratio_background", "gradient",
              "picture_p5", "picture_p50", "picture_p95", "picture_mean"]
    return names


def pixel_features(picture: np.ndarray) -> np.ndarray:
    """(pixels, features) float32, rows in row-major pixel order; `picture` is 2-D in 0..1."""
    picture = picture.astype(np.float32)
    columns = [picture, *_neighbours(picture)]
    for k in _SCALES:
        mean = ndimage.uniform_filter(picture, size=k, mode="reflect")
        square = ndimage.uniform_filter(picture * picture, size=k, mode="reflect")
        high = ndimage.maximum_filter(picture, size=k, mode="reflect")
        columns += [mean, high, ndimage.minimum_filter(picture, size=k, mode="reflect"),
                    np.sqrt(np.maximum(square - mean * mean, 0)), picture - high]
    background = _background(picture)
    gradient = np.hypot(ndimage.sobel(picture, axis=0), ndimage.sobel(picture, axis=1))
    columns += [background, picture - background, picture / np.maximum(background, 1e-3), gradient]
    levels = np.percentile(picture, [5, 50, 95])
    columns += [np.full_like(picture, v) for v in (*levels, picture.mean())]
    return np.stack([c.ravel() for c in columns], axis=1).astype(np.float32)
