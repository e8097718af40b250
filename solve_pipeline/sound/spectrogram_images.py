"""Each clip (or window) as a log-mel spectrogram picture, for the pretrained image backbones.

The image a grandmaster feeds an ImageNet network: time left to right, mel bands (up to
SPECTROGRAM_MELS) from the lowest at the bottom to the highest at the top, loudness as brightness over the top 80 dB of the clip,
stretched to a square of SPECTROGRAM_PX (a backbone's input is square, and the crop it makes of a
wider picture would cut time off). Pictures are grey PNGs written once per clip, window and way of
reading under the cache folder, so `image_embedding` reads, prices and caches them as it does photos.

A timed probe of the first clips says what rendering the whole set would cost; the caller decides
whether that, with the embedding, fits the budget (`render_pictures` renders a given set of rows).
"""

from __future__ import annotations

import hashlib
import time
import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from solve_pipeline.base.vector_cache import file_key
from solve_pipeline.sound.audio_features import AudioPlan, Window, frame_sizes, mel_filterbank, read_clip

SPECTROGRAM_MELS = 128  # finer than the statistics' 40 bands: a picture keeps the shape of a sweep
# At a low rate a 25 ms window holds few frequency bins (33 at 2 kHz), and mel bands narrower than a
# bin stay black: the window is at least this long, and there are at most half as many bands as
# bins. Faint up-calls in 2 kHz sea noise, Lite0@224, logistic, 5-fold AUC: 0.948 with 128 bands
# over 33 bins, 0.989 with 64 over 129 (at 16 kHz nothing changes: 128 bands over 257 bins).
MIN_FFT = 256
SPECTROGRAM_PX = 224  # EfficientNet-Lite0's own resolution; image_embedding scales it to the option it prices
DYNAMIC_RANGE_DB = 80.0  # quieter than this under the clip's loudest cell is black
_FLOOR = 1e-10


def log_mel_picture(samples: np.ndarray, rate: int, px: int = SPECTROGRAM_PX) -> np.ndarray:
    """(px, px) uint8: the clip's log-mel spectrogram, low bands at the bottom, time left to right."""
    import scipy.fft
    from PIL import Image
    from scipy import signal

    n_fft, hop = frame_sizes(rate)
    n_fft = max(n_fft, MIN_FFT)
    bands = min(SPECTROGRAM_MELS, (n_fft // 2 + 1) // 2)
    if samples.size < n_fft:
        samples = np.pad(samples, (0, n_fft - samples.size))
    frames = np.lib.stride_tricks.sliding_window_view(samples, n_fft)[::hop]
    spectrum = scipy.fft.rfft(frames * signal.get_window("hann", n_fft).astype(np.float32), axis=1)
    power = (spectrum.real ** 2 + spectrum.imag ** 2).T  # (bins, frames)
    mel = 10.0 * np.log10(mel_filterbank(rate, n_fft, bands) @ power + _FLOOR)
    top = float(mel.max())
    scaled = np.clip((mel - (top - DYNAMIC_RANGE_DB)) / DYNAMIC_RANGE_DB, 0.0, 1.0)[::-1]  # low bands last
    picture = Image.fromarray((scaled * 255.0).astype(np.float32), mode="F")
    return np.asarray(picture.resize((px, px), Image.Resampling.BILINEAR), dtype=np.float32).clip(0, 255) \
        .round().astype(np.uint8)


def picture_path(folder: Path, path: str, window: Window | None, plan: AudioPlan) -> Path:
    """Where a clip's picture is kept: named by the file's identity, the window and the reading."""
    key = f"{file_key(path)}@{window[0]:g}-{window[1]:g}" if window else file_key(path)
    digest = hashlib.sha1(f"{key}|{plan.label}|mel{SPECTROGRAM_MELS}-fft{MIN_FFT}@{SPECTROGRAM_PX}".encode()).hexdigest()
    return folder / f"{digest[:20]}.png"


def render_picture(path: str, window: Window | None, plan: AudioPlan, target: Path) -> bool:
    """Write one clip's picture to `target` (kept when already there); False when the clip cannot be read."""
    from PIL import Image

    if target.is_file():
        return True
    try:
        samples, _ = read_clip(path, plan, window)
        picture = log_mel_picture(samples, plan.rate)
    except (RuntimeError, OSError, ValueError) as error:  # a broken clip costs one row, not the family
        warnings.warn(f"cannot read audio {path}: {error}")
        return False
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".part.png")
    Image.fromarray(picture, mode="L").save(partial)
    partial.replace(target)  # a run stopped mid-write leaves no half picture under the real name
    return True


def render_pictures(paths: Sequence[str], windows: Sequence[Window | None], plan: AudioPlan, folder: Path,
                    rows: Sequence[int], deadline: float | None = None) -> tuple[list[str], float]:
    """Every row's picture path ("" where the clip has none, cannot be read, or was not reached
    before `deadline`) after rendering `rows`, and the seconds each picture took (0 when none
    needed rendering). Clips' matrices are small: one BLAS thread (more only spin)."""
    out = ["" for _ in paths]
    for i, path in enumerate(paths):
        if path:
            target = picture_path(folder, path, windows[i], plan)
            out[i] = str(target) if target.is_file() else ""
    began, made, first_s = time.monotonic(), 0, 0.0
    with threadpool_limits(limits=1):
        for i in rows:
            if out[i] or not paths[i]:
                continue
            if deadline is not None and time.monotonic() > deadline:
                break
            target = picture_path(folder, paths[i], windows[i], plan)
            if render_picture(paths[i], windows[i], plan, target):
                out[i] = str(target)
            made += 1
            if made == 1:
                first_s = time.monotonic() - began
    if made == 0:
        return out, 0.0
    # The first picture pays one-off costs (the encoders' start-up): the pace is the others'.
    return out, first_s if made == 1 else (time.monotonic() - began - first_s) / (made - 1)
