"""Sound competitions made in the test: clips synthesised with numpy (tones, rising and falling
chirps, noise) and written with soundfile at several sample rates and in several formats, in
Kaggle's two layouts, with the local grader's files (private/answers.csv, competition.toml)."""

from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import soundfile

CLASS_DESCRIPTION = """# Sound shapes

## Overview
Each recording is about a second long and holds one kind of sound: a low tone, a high tone, a
rising sweep or a falling sweep, under some noise. Predict the kind of each test recording.

## Evaluation
Submissions are scored by classification accuracy.

## Data
- **train/**: one folder per kind of sound, holding that kind's recordings.
- **test/**: the recordings to label; the file name without its extension is the `fname`.
- **sample_submission.csv**: every test recording with a placeholder label.
"""

CALL_DESCRIPTION = """# Find the calls

## Overview
Underwater microphones record two seconds at a time. Some recordings hold an up-call (a short
sweep upwards), most hold only sea noise. Give the probability that each test recording holds a call.

## Evaluation
Submissions are judged on area under the ROC curve.

## Data
- **train/**: the training recordings; **train.csv** labels each `clip_name` with 1 (a call) or 0.
- **test/**: the test recordings.
- **sampleSubmission.csv**: every test `clip` with a placeholder probability.
"""

KINDS = ("low", "high", "rising", "falling")


def tone(rate: int, seconds: float, hz: float) -> np.ndarray:
    t = np.arange(int(rate * seconds)) / rate
    return np.sin(2 * np.pi * hz * t)


def chirp(rate: int, seconds: float, start_hz: float, end_hz: float) -> np.ndarray:
    """A linear sweep from start_hz to end_hz."""
    t = np.arange(int(rate * seconds)) / rate
    return np.sin(2 * np.pi * (start_hz * t + (end_hz - start_hz) * t**2 / (2 * seconds)))


def kind_clip(rng: np.random.Generator, kind: str, rate: int) -> np.ndarray:
    seconds = float(rng.uniform(0.6, 1.0))
    pitch = float(rng.uniform(0.85, 1.15))
    sound = {"low": lambda: tone(rate, seconds, 400 * pitch), "high": lambda: tone(rate, seconds, 1800 * pitch),
             "rising": lambda: chirp(rate, seconds, 400 * pitch, 2400 * pitch),
             "falling": lambda: chirp(rate, seconds, 2400 * pitch, 400 * pitch)}[kind]()
    return (0.3 * sound + rng.normal(0, 0.5, sound.size)).astype(np.float32)


def write_clip(path: Path, samples: np.ndarray, rate: int) -> None:
    """The clip in the format its name says (.aif spelled out: soundfile knows only .aiff)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    kind = "AIFF" if path.suffix.lower() in (".aif", ".aiff") else None
    soundfile.write(str(path), np.clip(samples, -1, 1), rate, format=kind, subtype="PCM_16" if kind else None)


def _toml(slug: str, metric: str, task: str, id_column: str, target: str) -> str:
    return (f'[competition]\nid = "{slug}"\ninput_modalities = ["audio"]\ntask_type = "{task}"\n\n'
            f'[grading]\nmetric = "{metric}"\nhigher_is_better = true\nid_column = "{id_column}"\n'
            f'target_columns = ["{target}"]\nanswers = "private/answers.csv"\n')


def make_class_folder_competition(root: Path, per_class: int = 24, n_test: int = 40, seed: int = 0) -> Path:
    """train/<kind>/<name>.<ext>, test/<name>.<ext>; mostly 16 kHz WAV, a few 8 and 22.05 kHz, one
    FLAC and one Ogg Vorbis among them; accuracy over the kinds."""
    rng = np.random.default_rng(seed)
    data = root / "data"
    rates = (16000, 16000, 16000, 8000, 22050)
    # Names in no class's order: a file number must not tell the kind.
    numbers = iter(rng.permutation(len(KINDS) * per_class) + 1)

    def name(i: int) -> str:
        # One FLAC and one Ogg in train, one of each in test too: the rest WAV.
        return f"{i:04d}" + {3: ".flac", 7: ".ogg", 1003: ".flac", 1007: ".ogg"}.get(i, ".wav")

    for kind in KINDS:
        for _ in range(per_class):
            rate = int(rng.choice(rates))
            write_clip(data / "train" / kind / name(int(next(numbers))), kind_clip(rng, kind, rate), rate)
    answers = []
    for j in range(n_test):
        kind = KINDS[j % len(KINDS)]
        rate = int(rng.choice(rates))
        clip = name(1000 + j)
        write_clip(data / "test" / clip, kind_clip(rng, kind, rate), rate)
        answers.append((Path(clip).stem, kind))
    truth = pd.DataFrame(answers, columns=["fname", "label"])
    truth.assign(label="low").to_csv(data / "sample_submission.csv", index=False)
    (root / "private").mkdir(parents=True, exist_ok=True)
    truth.to_csv(root / "private" / "answers.csv", index=False)
    (root / "description.md").write_text(CLASS_DESCRIPTION, encoding="utf-8")
    (root / "competition.toml").write_text(_toml("sound-shapes", "accuracy", "multiclass", "fname", "label"))
    return root


def call_clip(rng: np.random.Generator, call: bool, rate: int = 2000, seconds: float = 2.0,
              loudness: tuple[float, float] = (0.1, 0.2)) -> np.ndarray:
    """Sea noise (brown-ish), with an up-call sweeping 100 -> 250 Hz when `call`: by default faint
    (not every call is found), louder where a few clips must teach it."""
    n = int(seconds * rate)
    noise = np.cumsum(rng.normal(0, 1, n))
    noise = (noise - np.convolve(noise, np.ones(50) / 50, mode="same")) * 0.05 + rng.normal(0, 0.1, n)
    if call:
        length = min(0.7, seconds / 2)
        start = int(rng.uniform(0.1 * seconds, 0.85 * seconds - length) * rate)
        sweep = chirp(rate, length, 100, 250) * np.hanning(int(length * rate)) * rng.uniform(*loudness)
        noise[start:start + sweep.size] += sweep
    return (noise / max(1.0, np.abs(noise).max())).astype(np.float32)


def make_flat_folder_competition(root: Path, n_train: int = 120, n_test: int = 60, seed: int = 1) -> Path:
    """train/<name>.aif labelled by train.csv (clip_name with extension), test/ listed by the sample
    (clip, probability); 2 kHz AIFF clips; ROC AUC."""
    rng = np.random.default_rng(seed)
    data = root / "data"
    rows = []
    for i in range(1, n_train + 1):
        call = bool(rng.random() < 0.4)
        write_clip(data / "train" / f"train{i}.aif", call_clip(rng, call), 2000)
        rows.append((f"train{i}.aif", int(call)))
    pd.DataFrame(rows, columns=["clip_name", "label"]).to_csv(data / "train.csv", index=False)
    answers = []
    for i in range(1, n_test + 1):
        call = bool(rng.random() < 0.4)
        write_clip(data / "test" / f"test{i}.aif", call_clip(rng, call), 2000)
        answers.append((f"test{i}.aif", int(call)))
    return _call_answers(root, answers, CALL_DESCRIPTION, "find-the-calls")


NAMED_CALL_DESCRIPTION = """# Whale calls by name

## Overview
Hydrophones record a second at a time. Some recordings hold an up-call (a short sweep upwards),
the rest only sea noise. Give the probability that each test recording holds a call.

## Evaluation
Submissions are judged on area under the ROC curve.

## Data
- **train.zip**: the training recordings; a name ending in `_1` holds a call, one ending in `_0` does not.
- **test.zip**: the test recordings.
- **sampleSubmission.csv**: every test `clip` (its file name) with a placeholder probability.
"""


def _zip_folder(folder: Path, archive: Path) -> None:
    """`archive` holding `<folder name>/<file>`, as Kaggle's train.zip holds train/<clip>; the folder removed."""
    with zipfile.ZipFile(archive, "w") as zf:
        for path in sorted(folder.iterdir()):
            zf.write(path, f"{folder.name}/{path.name}")
            path.unlink()
    folder.rmdir()


def make_named_call_competition(root: Path, n_train: int = 40, n_test: int = 16, seed: int = 2) -> Path:
    """train.zip of `<day>_<time>_<offset>_TRAIN<i>_<label>.aif`, the label the name's last part, and
    test.zip of `<day>_<time>_<offset>_Test<i>.aif` (other days than train's), 1 s AIFF clips at
    2 kHz; the sample `clip,probability` keys each clip by its file name; ROC AUC."""
    rng = np.random.default_rng(seed)
    data = root / "data"

    def stem(day: str, i: int) -> str:
        seconds = int(rng.integers(0, 86400))
        return f"{day}_{seconds // 3600:02d}{seconds // 60 % 60:02d}{seconds % 60:02d}_{i % 60:03d}s{i % 10}ms"

    for i in range(n_train):
        call = i % 2 == 1  # balanced, in no order the names' days or times follow
        name = f"{stem(('20090328', '20090329')[int(rng.integers(2))], i)}_TRAIN{i}_{int(call)}.aif"
        write_clip(data / "train" / name, call_clip(rng, call, seconds=1.0, loudness=(0.3, 0.5)), 2000)
    answers = []
    for i in range(n_test):
        call = bool(rng.random() < 0.5) if 0 < i < n_test - 1 else i == 0  # both kinds, whatever the draws
        name = f"{stem(('20090330', '20090331')[int(rng.integers(2))], i)}_Test{i}.aif"
        write_clip(data / "test" / name, call_clip(rng, call, seconds=1.0, loudness=(0.3, 0.5)), 2000)
        answers.append((name, int(call)))
    for split in ("train", "test"):
        _zip_folder(data / split, data / f"{split}.zip")
    return _call_answers(root, answers, NAMED_CALL_DESCRIPTION, "calls-by-name")


def _call_answers(root: Path, answers: list[tuple[str, int]], description: str, name: str) -> Path:
    """A call competition's sample (`clip,probability`, all 0), answers, page and grading facts."""
    truth = pd.DataFrame(answers, columns=["clip", "probability"])
    truth.assign(probability=0).to_csv(root / "data" / "sampleSubmission.csv", index=False)
    (root / "private").mkdir(parents=True, exist_ok=True)
    truth.to_csv(root / "private" / "answers.csv", index=False)
    (root / "description.md").write_text(description, encoding="utf-8")
    (root / "competition.toml").write_text(_toml(name, "auc", "binary", "clip", "probability"))
    return root
