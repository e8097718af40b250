"""The audio block: each sound clip summarised as a fixed row of numbers the table families read.

A clip is decoded (libsndfile, through soundfile: WAV, FLAC, Ogg, AIFF, MP3), mixed to mono,
resampled to one rate for the whole set, cut to at most `max_seconds`, and turned into a log-mel
spectrogram (Hann windows of 25 ms every 10 ms, MEL_BANDS triangular bands). Each band is summarised
over time (mean, spread, extremes, percentiles, when in the clip its energy sits, how fast it
changes), and the clip as a whole by its duration, loudness, zero-crossing rate and spectral
centroid (level and trend: a rising chirp's centroid climbs). A Kaggle baseline for sound: boosted
trees on such summaries are strong before any network.

Vectors are cached per file (path, size, mtime) and per set of parameters under solve/cache/, so
the setup's probe, the solve and a resumed run decode each clip once. A timed probe of the first
clips decides whether the budget holds the whole set; if not, clips are cut shorter, and the note
says so.
"""

from __future__ import annotations

import time
import warnings
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import lru_cache
from math import gcd
from pathlib import Path

import numpy as np
import pandas as pd
import psutil
from threadpoolctl import threadpool_limits

from agentk.core.sound_windows import END_COLUMN, START_COLUMN
from solve_pipeline.base.vector_cache import VectorCache, file_key

MEL_BANDS = 40
MAX_RATE = 22050  # higher rates are resampled down: the bands above 11 kHz rarely carry the label
MAX_SECONDS = 30.0  # a clip is read up to here at most (Freesound's longest are minutes)
MIN_SECONDS = 1.0  # the shortest cut the budget may impose
PERCENTILES = (10, 50, 90)
BAND_STATS = ("mean", "std", "min", "max", *(f"p{q}" for q in PERCENTILES), "time", "delta")
CLIP_STATS = ("duration_s", "rms_mean", "rms_std", "zcr_mean", "zcr_std", "centroid_mean", "centroid_std",
              "centroid_slope", "unreadable")
PROBE_CLIPS = 8  # per decoding thread
MAX_WORKERS = 8
_DURATION = MEL_BANDS * len(BAND_STATS)  # where a row holds the clip's full duration
_FLOOR = 1e-10
Window = tuple[float, float]  # (start, end) in seconds of a window inside a recording


@dataclass(frozen=True)
class AudioPlan:
    """How every clip of a set is read; the cache keys depend on it."""

    rate: int
    max_seconds: float

    @property
    def label(self) -> str:
        return f"audio-mel{MEL_BANDS}-{self.rate}hz-{self.max_seconds:g}s"


def feature_names() -> list[str]:
    return [f"aud_mel{b:02d}_{s}" for b in range(MEL_BANDS) for s in BAND_STATS] + [f"aud_{s}" for s in CLIP_STATS]


@lru_cache(maxsize=16)
def mel_filterbank(rate: int, n_fft: int, n_mels: int = MEL_BANDS, fmin: float = 20.0) -> np.ndarray:
    """(n_mels, n_fft // 2 + 1) triangular filters evenly spaced on the HTK mel scale up to rate / 2;
    one set per rate, shared by every clip (read-only)."""
    def mel(hz: np.ndarray | float) -> np.ndarray:
        return 2595.0 * np.log10(1.0 + np.asarray(hz) / 700.0)

    edges_mel = np.linspace(mel(fmin), mel(rate / 2), n_mels + 2)
    edges = 700.0 * (10 ** (edges_mel / 2595.0) - 1.0)
    bins = np.linspace(0, rate / 2, n_fft // 2 + 1)
    lower, centre, upper = edges[:-2, None], edges[1:-1, None], edges[2:, None]
    rising = (bins[None, :] - lower) / (centre - lower)
    falling = (upper - bins[None, :]) / (upper - centre)
    filters = np.maximum(0.0, np.minimum(rising, falling))
    filters.setflags(write=False)
    return filters


def band_centres(rate: int, n_mels: int = MEL_BANDS, fmin: float = 20.0) -> np.ndarray:
    """The centre frequency (Hz) of each mel band of `mel_filterbank`."""
    low, high = 2595.0 * np.log10(1.0 + fmin / 700.0), 2595.0 * np.log10(1.0 + rate / 2 / 700.0)
    return 700.0 * (10 ** (np.linspace(low, high, n_mels + 2)[1:-1] / 2595.0) - 1.0)


def frame_sizes(rate: int) -> tuple[int, int]:
    """FFT length (a 25 ms window, rounded up to a power of two) and hop (10 ms)."""
    return 1 << int(np.ceil(np.log2(0.025 * rate))), max(1, int(round(0.010 * rate)))


def read_clip(path: str, plan: AudioPlan, window: Window | None = None) -> tuple[np.ndarray, float]:
    """The clip (or the `window` of it, in seconds) as mono float samples at plan.rate, cut to
    plan.max_seconds, and its full duration (a window's: its nominal length, even where the
    recording ends sooner, so that a short training clip reads as long as a test window)."""
    import soundfile
    from scipy import signal  # here, not at the top: scipy.signal costs every table's solve 2 s of CPU

    info = soundfile.info(path)
    start = int(window[0] * info.samplerate) if window else 0
    if info.frames > 0:
        end = info.frames if window is None else min(info.frames, int(window[1] * info.samplerate))
        frames = max(0, int(min(end - start, plan.max_seconds * info.samplerate)))
    else:
        frames = -1 if window is None else int(min(window[1] - window[0], plan.max_seconds) * info.samplerate)
    samples, rate = soundfile.read(path, start=min(start, max(0, info.frames)), frames=frames, dtype="float32",
                                   always_2d=True)
    mono = samples.mean(axis=1)
    if rate != plan.rate and mono.size:
        common = gcd(int(rate), plan.rate)
        mono = signal.resample_poly(mono, plan.rate // common, int(rate) // common).astype(np.float32)
    duration = info.frames / info.samplerate if info.frames > 0 else mono.size / plan.rate
    return mono, float(window[1] - window[0] if window else duration)


def clip_features(samples: np.ndarray, rate: int, duration: float) -> np.ndarray:
    """The summary row of one clip (`feature_names()` order)."""
    import scipy.fft
    from scipy import signal

    n_fft, hop = frame_sizes(rate)
    if samples.size < n_fft:
        samples = np.pad(samples, (0, n_fft - samples.size))
    frames = np.lib.stride_tricks.sliding_window_view(samples, n_fft)[::hop]  # (frames, n_fft), a view
    spectrum = scipy.fft.rfft(frames * signal.get_window("hann", n_fft).astype(np.float32), axis=1)  # complex64
    power = (spectrum.real ** 2 + spectrum.imag ** 2).T  # (bins, frames)
    mel = np.log10(mel_filterbank(rate, n_fft) @ power + _FLOOR) * 10.0  # dB per band and frame
    steps = np.linspace(0.0, 1.0, mel.shape[1]) if mel.shape[1] > 1 else np.zeros(1)
    weights = mel - mel.min(axis=1, keepdims=True)
    total = weights.sum(axis=1)
    when = np.where(total > 0, (weights * steps).sum(axis=1) / np.where(total > 0, total, 1.0), 0.5)
    delta = np.abs(np.diff(mel, axis=1)).mean(axis=1) if mel.shape[1] > 1 else np.zeros(len(mel))
    bands = np.column_stack([mel.mean(axis=1), mel.std(axis=1), mel.min(axis=1), mel.max(axis=1),
                             *np.percentile(mel, PERCENTILES, axis=1), when, delta])
    rms = np.sqrt((frames.astype(np.float64) ** 2).mean(axis=1))
    zcr = (np.diff(np.signbit(frames), axis=1) != 0).mean(axis=1)
    freqs = np.linspace(0, rate / 2, power.shape[0])
    centroid = (freqs[:, None] * power).sum(axis=0) / np.maximum(power.sum(axis=0), _FLOOR)
    slope = np.polyfit(steps, centroid, 1)[0] if centroid.size > 1 else 0.0
    clip = [duration, rms.mean(), rms.std(), zcr.mean(), zcr.std(), centroid.mean(), centroid.std(), slope, 0.0]
    return np.concatenate([bands.ravel(), clip]).astype(np.float32)


def _unreadable_row() -> np.ndarray:
    row = np.full(len(feature_names()), np.nan, dtype=np.float32)
    row[-1] = 1.0
    return row


def set_plan(paths: list[str]) -> AudioPlan:
    """One rate for the set: the most common among a sample of headers, at most MAX_RATE."""
    import soundfile

    rates: Counter = Counter()
    for path in paths[:: max(1, len(paths) // 50)][:50]:
        try:
            rates[soundfile.info(path).samplerate] += 1
        except (RuntimeError, OSError):
            continue
    rate = rates.most_common(1)[0][0] if rates else 16000
    return AudioPlan(rate=int(min(rate, MAX_RATE)), max_seconds=MAX_SECONDS)


@dataclass
class AudioBlocks:
    names: list[str] = field(default_factory=list)
    train: np.ndarray | None = None  # (rows, features)
    test: np.ndarray | None = None
    note: str | None = None  # what was read, and any cut the budget made
    # Each row's file ("" for none) and window, train then test, and how they were read: what a
    # family that reads the clips themselves (spectrogram images) needs.
    paths: list[str] = field(default_factory=list)
    windows: list[Window | None] = field(default_factory=list)
    plan: AudioPlan | None = None


def _windows(frame: pd.DataFrame) -> list[Window | None]:
    """Each row's window (start and end second) where the map names one (`agentk.core.sound_windows`)."""
    if START_COLUMN not in frame.columns or END_COLUMN not in frame.columns:
        return [None] * len(frame)
    bounds = frame[[START_COLUMN, END_COLUMN]].apply(pd.to_numeric, errors="coerce").to_numpy(float)
    return [(float(a), float(b)) if np.isfinite(a) and np.isfinite(b) and b > a else None for a, b in bounds]


def _paths(frame: pd.DataFrame, base: Path) -> list[str]:
    out = []
    for value in frame["audio_path"].tolist():
        if not isinstance(value, str) or not value.strip():
            out.append("")
            continue
        path = Path(value.strip())
        out.append(str(path if path.is_absolute() else base / path))
    return out


def _one(path: str, plan: AudioPlan, window: Window | None = None) -> np.ndarray:
    if not path:
        return _unreadable_row()
    try:
        samples, duration = read_clip(path, plan, window)
        return clip_features(samples, plan.rate, duration)
    except (RuntimeError, OSError, ValueError) as error:  # a broken clip costs one row, not the run
        warnings.warn(f"cannot read audio {path}: {error}")
        return _unreadable_row()


def _workers() -> int:
    """Threads that decode clips: libsndfile and NumPy's FFT release the GIL, so on two cores two
    threads read a set of short clips ~2-3x as fast as one."""
    try:
        cores = len(psutil.Process().cpu_affinity() or []) or psutil.cpu_count() or 1
    except (AttributeError, psutil.Error):  # no affinity on this platform
        cores = psutil.cpu_count() or 1
    return max(1, min(cores, MAX_WORKERS))


def _read(indices: list[int], paths: list[str], plan: AudioPlan, windows: list[Window | None],
          workers: int) -> dict[int, np.ndarray]:
    """Rows of the given clips, read by `workers` threads."""
    if workers == 1 or len(indices) < 2:
        return {i: _one(paths[i], plan, windows[i]) for i in indices}
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return dict(zip(indices, pool.map(lambda i: _one(paths[i], plan, windows[i]), indices)))


def audio_blocks(train_aud: pd.DataFrame, test_aud: pd.DataFrame, base: Path, *,
                 seconds: float | None = None, cache_dir: Path | None = None) -> AudioBlocks:
    """Summary features of every clip both maps name (paths read from `base`, the setup folder),
    computed within `seconds` when given: a probe times the first clips and cuts them shorter
    when the whole set would not fit."""
    # Each clip's matrices are small: a threaded BLAS only spins (a 1 s clip took 60 ms, not 10).
    with threadpool_limits(limits=1):
        return _audio_blocks(train_aud, test_aud, base, seconds, cache_dir)


def _set_keys(train_aud: pd.DataFrame, test_aud: pd.DataFrame, base: Path) -> tuple[list[str], list[Window | None],
                                                                                   AudioPlan, list[str]]:
    """Every row's path, window, the plan the set is read with, and each row's cache key (train first)."""
    paths = _paths(train_aud, base) + _paths(test_aud, base)
    windows = _windows(train_aud) + _windows(test_aud)
    plan = set_plan(list(dict.fromkeys(p for p in paths if p)))
    keys = [file_key(p) + (f"@{w[0]:g}-{w[1]:g}" if w else "") if p else "" for p, w in zip(paths, windows)]
    return paths, windows, plan, keys


def cached_rows(train_aud: pd.DataFrame, test_aud: pd.DataFrame, base: Path, cache_dir: Path | None) -> np.ndarray:
    """Whether the cache already holds each row of both maps (train first), as `audio_blocks` would read them."""
    _, _, plan, keys = _set_keys(train_aud, test_aud, base)
    vectors = VectorCache(cache_dir, plan.label).vectors
    return np.array([bool(k) and k in vectors for k in keys], dtype=bool)


def _audio_blocks(train_aud: pd.DataFrame, test_aud: pd.DataFrame, base: Path, seconds: float | None,
                  cache_dir: Path | None) -> AudioBlocks:
    if "audio_path" not in train_aud.columns or "audio_path" not in test_aud.columns:
        return AudioBlocks()
    paths, windows, plan, keys = _set_keys(train_aud, test_aud, base)
    began = time.monotonic()
    cache = VectorCache(cache_dir, plan.label)
    todo = [i for i, k in enumerate(keys) if k and k not in cache.vectors]
    rows: dict[int, np.ndarray] = {}
    cut = None
    workers = _workers()
    probe = PROBE_CLIPS * workers
    if seconds is not None and len(todo) > probe + 1:
        # The first clip pays the decoders' and the mel filters' start-up (seconds, against ~10 ms
        # a clip after it): timed with the rest, it made a set of short clips look 10x dearer
        # than it is, and every clip was cut.
        rows[todo[0]] = _one(paths[todo[0]], plan, windows[todo[0]])
        warm = time.monotonic()
        rows.update(_read(todo[1:probe + 1], paths, plan, windows, workers))
        per_clip = (time.monotonic() - warm) / probe
        projected = per_clip * len(todo)
        if projected > seconds:
            # Cost grows with the samples read: cut every clip alike, to what the budget holds.
            # The probed rows are recomputed under the new plan so every row is read the same way.
            longest = max((float(rows[i][_DURATION]) for i in rows), default=plan.max_seconds)
            shorter = max(MIN_SECONDS, min(plan.max_seconds, float(longest)) * seconds / projected)
            if shorter < min(plan.max_seconds, float(longest)):
                unit = "windows" if any(windows) else "clips"
                cut = (f"the {len(todo)} {unit} would take ~{projected:.0f} s to featurise, over the {seconds:.0f} s "
                       f"allowed: each is read up to {shorter:.1f} s")
                plan = AudioPlan(plan.rate, round(shorter, 1))
                cache = VectorCache(cache_dir, plan.label)
                todo = [i for i, k in enumerate(keys) if k and k not in cache.vectors]
                rows = {}
    rows.update(_read([i for i in todo if i not in rows], paths, plan, windows, workers))
    for i in todo:
        cache.vectors[keys[i]] = rows[i]
    try:
        cache.save()
    except OSError:  # a read-only workspace (the setup's sandbox) only loses the cache
        pass
    matrix = np.stack([cache.vectors[k] if k else _unreadable_row() for k in keys]) if keys else \
        np.zeros((0, len(feature_names())), dtype=np.float32)
    n_train = len(train_aud)
    unreadable = int(np.nansum(matrix[:, -1]))
    windowed = sum(w is not None for w in windows)
    what = f"{len(paths)} windows of {len(set(paths))} recordings" if windowed else f"{len(paths)} clips"
    note = (f"audio: {what} as {len(feature_names())} log-mel summaries ({MEL_BANDS} bands) at "
            f"{plan.rate} Hz, read up to {plan.max_seconds:g} s each; {len(todo)} decoded in "
            f"{time.monotonic() - began:.1f} s, {len(paths) - len(todo)} from the cache"
            + (f"; {unreadable} unreadable" if unreadable else "") + (f"; {cut}" if cut else ""))
    return AudioBlocks(feature_names(), matrix[:n_train], matrix[n_train:], note, paths, windows, plan)
