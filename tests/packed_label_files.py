"""A field-recording competition made in the test, laid out as Kaggle's older bird-song challenges
ship one: no train.csv, but text tables keyed by a recording number.

- essential_data/rec_id2filename.txt: `rec_id,filename`, the filename a wav's stem;
- essential_data/src_wavs/<filename>.wav: 2 s mono at 8 kHz, forest noise with 0-2 species singing;
- essential_data/CVfolds_2.txt: `rec_id,fold` (0 train, 1 test);
- essential_data/rec_labels_test_hidden.txt: `rec_id,[labels]`, then `12,3,1` (species 3 and 1),
  `13` (none) or `14,?` (a test recording, its labels hidden): a ragged list per row;
- essential_data/species_list.txt: `class_id,code,species`;
- supplemental_data/histogram_of_segments.txt: `rec_id,[histogram of segment features]`, then
  `rec_id,v0,...` per recording (a bump in each singing species' bins, under noise);
- supplemental_data/segment_features.txt: `rec_id,segment_id,f0,...` rows, several per recording,
  under the histogram's own header (as Kaggle's copy writes it): its columns are the histogram's;
- supplemental_data/filtered_spectrograms/<filename>.bmp: a small picture of each recording, and
  segment_mosaic.bmp: pictures named as the clips, their renderings;
- sample_submission.csv: `Id,Probability` with Id = rec_id * 100 + class_id for every test
  recording and class; answers the same, scored by the ROC AUC over all rows.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from PIL import Image

from audio_competition import chirp, tone, write_clip

RATE = 8000
SECONDS = 2.0
BINS = 20
# Each species sings its own syllable: low and high whistles, rising and falling sweeps, a trill.
SPECIES = (("LOWH", "low whistler", "tone", 500), ("HIGH", "high whistler", "tone", 2600),
           ("RISE", "rising warbler", "up", 700), ("FALL", "falling warbler", "down", 3000),
           ("TRIL", "triller", "trill", 1500))

DESCRIPTION = """# Birds in the field

## Overview
Microphones left in a forest record ten-second clips. Each clip may hold the songs of several bird
species, or none. Predict, for every test recording, the probability that each species is present.

## Evaluation
Submissions are judged on area under the ROC curve, computed over all rows of the submission.

## Submission
For each test recording and species, one row: `Id` is the recording's `rec_id` times 100 plus the
species' `class_id`, and `Probability` the probability that the species sings in the recording.

## Data
- **essential_data/**: the recordings (src_wavs/), the table naming each recording's file
  (rec_id2filename.txt), the train/test split (CVfolds_2.txt), the species present in each
  training recording (rec_labels_test_hidden.txt; `?` marks the test recordings) and the species list.
- **supplemental_data/**: features computed from segments of each recording's spectrogram.
"""

TOML = """[competition]
id = "birds-in-the-field"
input_modalities = ["audio", "tabular"]
task_type = "binary"

[grading]
metric = "auc"
higher_is_better = true
id_column = "Id"
target_columns = ["Probability"]
answers = "private/answers.csv"
"""


def _song(rng: np.random.Generator, species: int) -> np.ndarray:
    _, _, shape, hz = SPECIES[species]
    seconds = float(rng.uniform(0.25, 0.4))
    pitch = float(rng.uniform(0.9, 1.1)) * hz
    if shape == "trill":
        sound = tone(RATE, seconds, pitch) * (np.sin(2 * np.pi * 25 * np.arange(int(RATE * seconds)) / RATE) > 0)
    else:
        sound = {"tone": lambda: tone(RATE, seconds, pitch), "up": lambda: chirp(RATE, seconds, pitch, 2 * pitch),
                 "down": lambda: chirp(RATE, seconds, pitch, pitch / 2)}[shape]()
    return sound * np.hanning(sound.size)


def _recording(rng: np.random.Generator, present: list[int]) -> np.ndarray:
    n = int(RATE * SECONDS)
    audio = rng.normal(0, 0.05, n)
    for species in present:
        at = float(rng.uniform(0.05, 0.5))
        while at < SECONDS - 0.45:
            call = _song(rng, species)
            i = int(at * RATE)
            audio[i:i + call.size] += float(rng.uniform(0.01, 0.06)) * call  # faint: not every song is heard
            at += call.size / RATE + float(rng.uniform(0.2, 0.5))
    return audio.astype(np.float32)


def _histogram(rng: np.random.Generator, present: list[int]) -> np.ndarray:
    """Segment counts per cluster: each species fills its own four bins, often but not always."""
    counts = rng.poisson(0.3, BINS).astype(float)
    for species in present:
        if rng.random() < 0.7:
            counts[4 * species:4 * species + 4] += rng.poisson(1.0, 4)
    total = counts.sum()
    return counts / total if total else counts


def _picture(audio: np.ndarray, path: Path) -> None:
    """A 16x32 grey spectrogram of the clip (rows: frequency, high at the top; columns: time)."""
    frames = audio[: audio.size // 32 * 32].reshape(32, -1)
    power = np.abs(np.fft.rfft(frames * np.hanning(frames.shape[1]), axis=1))[:, :frames.shape[1] // 32 * 16]
    bands = np.log1p(power.reshape(32, 16, -1).mean(axis=2)).T[::-1]
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray((255 * bands / max(bands.max(), 1e-9)).astype(np.uint8), "L").save(path)


def make_packed_label_competition(root: Path, n_train: int = 60, n_test: int = 20, seed: int = 0) -> Path:
    rng = np.random.default_rng(seed)
    essential, supplemental = root / "data" / "essential_data", root / "data" / "supplemental_data"
    supplemental.mkdir(parents=True, exist_ok=True)
    ids = rng.permutation(n_train + n_test)  # test recordings spread among the training ones
    test = set(ids[:n_test].tolist())
    names, labels, folds, histograms, segments, answers = [], [], [], [], [], []
    for rec_id in range(n_train + n_test):
        # Every species sings in some training recordings; about one recording in six holds none.
        present = sorted(set(rng.choice(len(SPECIES), size=int(rng.choice([0, 1, 1, 2, 2, 3])), replace=False).tolist()))
        if rec_id not in test and rec_id < len(SPECIES) and rec_id not in present:
            present.append(rec_id)
        name = f"S{rng.integers(1, 9)}_2009{rng.integers(4, 8):02d}{rng.integers(1, 29):02d}_{rng.integers(0, 2400):04d}_{rec_id:03d}"
        audio = _recording(rng, present)
        write_clip(essential / "src_wavs" / f"{name}.wav", audio, RATE)
        _picture(audio, supplemental / "filtered_spectrograms" / f"{name}.bmp")
        names.append(f"{rec_id},{name}")
        folds.append(f"{rec_id},{int(rec_id in test)}")
        labels.append(f"{rec_id},?" if rec_id in test else ",".join(map(str, [rec_id, *present])))
        histograms.append(",".join([str(rec_id), *(f"{v:.6f}" for v in _histogram(rng, present))]))
        for segment in range(int(rng.integers(0, 4))):
            species = present[segment % len(present)] if present else -1
            features = rng.normal(0, 1, 6) + (np.eye(6)[species] if species >= 0 else 0)
            segments.append(",".join([str(rec_id), str(segment), *(f"{v:.5f}" for v in features)]))
        if rec_id in test:
            answers += [(rec_id * 100 + k, int(k in present)) for k in range(len(SPECIES))]
    (essential / "rec_id2filename.txt").write_text("rec_id,filename\n" + "\n".join(names) + "\n")
    (essential / "CVfolds_2.txt").write_text("rec_id,fold\n" + "\n".join(folds) + "\n")
    (essential / "rec_labels_test_hidden.txt").write_text("rec_id,[labels]\n" + "\n".join(labels) + "\n")
    (essential / "species_list.txt").write_text(
        "class_id,code,species\n" + "\n".join(f"{k},{code},{name}" for k, (code, name, _, _) in enumerate(SPECIES)) + "\n")
    (supplemental / "histogram_of_segments.txt").write_text(
        "rec_id,[histogram of segment features]\n" + "\n".join(histograms) + "\n")
    (supplemental / "segment_features.txt").write_text(
        "rec_id,[histogram of segment features]\n" + "\n".join(segments) + "\n")
    Image.new("RGB", (40, 20), (30, 60, 90)).save(supplemental / "segment_mosaic.bmp")
    truth = pd.DataFrame(sorted(answers), columns=["Id", "Probability"])
    truth.assign(Probability=0).to_csv(root / "data" / "sample_submission.csv", index=False)
    (root / "private").mkdir(parents=True, exist_ok=True)
    truth.to_csv(root / "private" / "answers.csv", index=False)
    (root / "description.md").write_text(DESCRIPTION, encoding="utf-8")
    (root / "competition.toml").write_text(TOML)
    return root
