"""What a competition's sound clips are like: how many, their formats, sample rates, channels and
durations, read from the headers of a sample of them (libsndfile reads a header without decoding).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np

# Headers read to describe the clips: enough for the spread of rates and durations, a second or so
# even over a network file system.
SAMPLED_CLIPS = 200


def _count(counter: Counter, unit: str = "") -> str:
    return ", ".join(f"{value}{unit} ({n})" for value, n in counter.most_common(3)) + (
        f", {len(counter) - 3} more" if len(counter) > 3 else "")


def describe_clips(paths: list[Path], data: Path) -> str:
    """One line for the notes: the clips' count and what their sampled headers say."""
    import soundfile

    step = max(1, len(paths) // SAMPLED_CLIPS)
    sampled = paths[::step][:SAMPLED_CLIPS]
    rates: Counter = Counter()
    channels: Counter = Counter()
    formats: Counter = Counter()
    seconds: list[float] = []
    unreadable = []
    for path in sampled:
        try:
            info = soundfile.info(str(path))
        except (RuntimeError, OSError) as exc:  # soundfile.LibsndfileError is a RuntimeError
            unreadable.append(f"{path.relative_to(data).as_posix()} ({' '.join(str(exc).split())[:80]})")
            continue
        rates[info.samplerate] += 1
        channels[info.channels] += 1
        formats[info.format.lower()] += 1
        seconds.append(info.duration)
    line = f"{len(paths)} sound clip(s)"
    if seconds:
        spread = np.percentile(seconds, [0, 50, 100])
        line += (f"; from {len(seconds)} headers: formats {_count(formats)}; sample rates {_count(rates, ' Hz')}; "
                 f"channels {_count(channels)}; durations {spread[0]:.2f}-{spread[2]:.2f} s (median {spread[1]:.2f} s)")
    if unreadable:
        line += f"; {len(unreadable)} of {len(sampled)} sampled could not be read, e.g. {unreadable[0]}"
    return line


def pictures_of_clips(pictures: list[Path], clips: list[Path]) -> bool:
    """Pictures named as the clips are (nearly every clip's name without extension is a picture's):
    renderings of the clips (spectrograms), so the clips are the inputs, and the solver draws its
    own spectrograms from them."""
    names = {p.stem for p in pictures}
    return bool(clips) and sum(c.stem in names for c in clips) >= 0.9 * len(clips)
