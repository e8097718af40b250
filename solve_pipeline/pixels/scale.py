"""The working size of a mask or box solve: big pictures are solved smaller, as a grandmaster
resizes a 1024 px X-ray before training. The pixel model's neighbourhoods reach a few pixels to a
few tens (mask_features' smoothing scales): at full size a lung opacity or a wheat field's heads
span hundreds and the model sees only texture; and every pixel costs its features' time. A
picture is reduced to at most `MAX_SIDE` pixels on its long side (area averaging), its labels by
nearest neighbour, and predictions are brought back to the picture's own size at the end."""

from __future__ import annotations

import numpy as np
from PIL import Image

MAX_SIDE = 384


def factor(shape: tuple[int, ...]) -> float:
    """The scale a picture of `shape` is solved at (1.0: its own size)."""
    return min(1.0, MAX_SIDE / max(shape[0], shape[1], 1))


def reduced(picture: np.ndarray) -> np.ndarray:
    """The picture at its working size (area-averaged), float32."""
    f = factor(picture.shape)
    if f >= 1.0:
        return picture
    size = (max(1, round(picture.shape[1] * f)), max(1, round(picture.shape[0] * f)))
    return np.asarray(Image.fromarray(picture.astype(np.float32), mode="F").resize(size, Image.Resampling.BOX),
                      dtype=np.float32)


def resampled(labels: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """A labelled mask brought to `shape` by nearest neighbour (each pixel's centre sampled)."""
    if labels.shape[:2] == tuple(shape[:2]):
        return labels
    rows = np.minimum(((np.arange(shape[0]) + 0.5) * labels.shape[0] / shape[0]).astype(int), labels.shape[0] - 1)
    cols = np.minimum(((np.arange(shape[1]) + 0.5) * labels.shape[1] / shape[1]).astype(int), labels.shape[1] - 1)
    return labels[np.ix_(rows, cols)]
