"""A bird-song competition made in the test, laid out as BirdCLEF's: training clips in a folder per
species (`train_audio/<label>/XC<n>.ogg`) with a metadata table naming each clip's file and primary
label, long test soundscapes (`test_soundscapes/soundscape_<n>.ogg`) in which species call at known
5-second windows over noise, and a sample of one row per window (`soundscape_<n>_<end second>`)
with a probability column per species; scored by the mean of the columns' ROC AUC."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from audio_competition import chirp, tone, write_clip

RATE = 16000
WINDOW_S = 5
# Each species sings a syllable of its own shape: a low whistle, a high one, a rising and a falling sweep.
SPECIES = {"amecro": ("tone", 500), "blujay": ("tone", 2600), "norcar": ("up", 700), "houspa": ("down", 3000)}

DESCRIPTION = """# Bird calls in the field

## Overview
Recorders left in the forest capture long soundscapes. Identify which species call in each
5-second window of the test soundscapes.

## Evaluation
The evaluation metric is a version of macro-averaged ROC-AUC that skips classes which have no
true positive labels.

## Submission
For each `row_id` (the soundscape and the end of its window in seconds, `soundscape_12_5` for
seconds 0-5) give a probability for every species column.

## Data
- **train_audio/**: short recordings of single species, one folder per species.
- **train_metadata.csv**: every training recording's `filename` and `primary_label`.
- **test_soundscapes/**: the long recordings to label, each a minute or less.
- **sample_submission.csv**: every window of the test soundscapes with placeholder probabilities.
"""


def syllable(rng: np.random.Generator, species: str) -> np.ndarray:
    shape, hz = SPECIES[species]
    seconds = float(rng.uniform(0.25, 0.45))
    pitch = float(rng.uniform(0.9, 1.1)) * hz
    sound = {"tone": lambda: tone(RATE, seconds, pitch), "up": lambda: chirp(RATE, seconds, pitch, 2.5 * pitch),
             "down": lambda: chirp(RATE, seconds, pitch, pitch / 2.5)}[shape]()
    return sound * np.hanning(sound.size)


def forest(rng: np.random.Generator, seconds: float) -> np.ndarray:
    """Wind and leaves: brown-ish noise under a little white noise."""
    n = int(seconds * RATE)
    brown = np.cumsum(rng.normal(0, 1, n))
    brown -= np.convolve(brown, np.ones(400) / 400, mode="same")
    return 0.02 * brown / max(1.0, np.abs(brown).std()) * 3 + rng.normal(0, 0.05, n)


def sing(rng: np.random.Generator, audio: np.ndarray, species: str, start_s: float, end_s: float,
         loudness: tuple[float, float] = (0.15, 0.35)) -> None:
    """A few syllables of `species` between start_s and end_s, at a random loudness."""
    at = start_s + rng.uniform(0.1, 0.6)
    loud = rng.uniform(*loudness)
    while at < end_s - 0.5:
        call = syllable(rng, species)
        i = int(at * RATE)
        audio[i:i + call.size] += loud * call[: max(0, audio.size - i)]
        at += call.size / RATE + rng.uniform(0.15, 0.6)


def training_clip(rng: np.random.Generator, species: str) -> np.ndarray:
    seconds = float(rng.uniform(3.0, 14.0))  # some shorter than a window
    audio = forest(rng, seconds)
    sing(rng, audio, species, 0.0, seconds)
    return audio


def make_window_competition(root: Path, per_species: int = 6, soundscapes: int = 4, seconds: int = 40,
                            seed: int = 0, metadata: bool = True) -> Path:
    """The competition under `root` (data/, description.md, private/answers.csv, competition.toml)."""
    rng = np.random.default_rng(seed)
    data = root / "data"
    rows = []
    numbers = iter(rng.permutation(len(SPECIES) * per_species * 7) + 100000)
    for label in SPECIES:
        for _ in range(per_species):
            name = f"XC{next(numbers)}.ogg"
            write_clip(data / "train_audio" / label / name, training_clip(rng, label), RATE)
            rows.append({"primary_label": label, "secondary_labels": "[]", "rating": float(rng.integers(1, 6)),
                         "latitude": round(float(rng.uniform(30, 45)), 4), "filename": f"{label}/{name}"})
    if metadata:
        pd.DataFrame(rows).sample(frac=1.0, random_state=seed).to_csv(data / "train_metadata.csv", index=False)
    return _test_part(root, rng, soundscapes, seconds)


def make_span_competition(root: Path, recordings: int = 3, seconds: int = 60, seed: int = 3) -> Path:
    """Long training recordings (`train_soundscapes/site<k>.ogg`) labelled span by span by a table
    (`recording`, `t_start`, `t_end`, `bird`: several rows per recording, spans of a few seconds),
    and the test part of `make_window_competition`."""
    rng = np.random.default_rng(seed)
    data = root / "data"
    rows = []
    for k in range(recordings):
        audio = forest(rng, seconds)
        at = float(rng.uniform(0.5, 2.0))
        while at < seconds - 4:
            bird = list(SPECIES)[int(rng.integers(len(SPECIES)))]
            length = float(rng.uniform(2.0, 7.0))
            end = min(seconds - 0.5, at + length)
            sing(rng, audio, bird, at, end)
            rows.append({"recording": f"site{k}", "t_start": round(at, 2), "t_end": round(end, 2), "bird": bird})
            at = end + float(rng.uniform(0.5, 3.0))
        write_clip(data / "train_soundscapes" / f"site{k}.ogg", audio, RATE)
    pd.DataFrame(rows).to_csv(data / "train_labels.csv", index=False)
    return _test_part(root, rng, 2, 30)


def _test_part(root: Path, rng: np.random.Generator, soundscapes: int, seconds: int) -> Path:
    """Test soundscapes, the sample of their windows, the answers, the page and the grading facts."""
    data, species = root / "data", list(SPECIES)
    windows = seconds // WINDOW_S
    # Which species sing in each window: every species in several windows, a third of windows silent.
    total = soundscapes * windows
    # Every sixth singing window holds a second species; birds in the field are often far away.
    singing = [{species[i % len(species)], *([species[(i + 1) % len(species)]] if i % 6 == 5 else [])}
               if i < 2 * total // 3 else set() for i in range(total)]
    order = rng.permutation(total)
    answers = []
    for s in range(soundscapes):
        name = f"soundscape_{1000 + 37 * s}"
        audio = forest(rng, seconds)
        for w in range(windows):
            who = singing[order[s * windows + w]]
            for bird in sorted(who):
                sing(rng, audio, bird, w * WINDOW_S, (w + 1) * WINDOW_S, loudness=(0.03, 0.2))
            answers.append({"row_id": f"{name}_{(w + 1) * WINDOW_S}", **{b: int(b in who) for b in species}})
        write_clip(data / "test_soundscapes" / f"{name}.ogg", audio, RATE)
    truth = pd.DataFrame(answers)
    truth.assign(**{b: 1 / len(species) for b in species}).to_csv(data / "sample_submission.csv", index=False)
    (root / "private").mkdir(parents=True, exist_ok=True)
    truth.to_csv(root / "private" / "answers.csv", index=False)
    (root / "description.md").write_text(DESCRIPTION, encoding="utf-8")
    targets = ", ".join(f'"{b}"' for b in species)
    (root / "competition.toml").write_text(
        f'[competition]\nid = "bird-windows"\ninput_modalities = ["audio"]\ntask_type = "multilabel"\n\n'
        f'[grading]\nmetric = "auc"\nhigher_is_better = true\nid_column = "row_id"\n'
        f'target_columns = [{targets}]\nanswers = "private/answers.csv"\n', encoding="utf-8")
    return root
