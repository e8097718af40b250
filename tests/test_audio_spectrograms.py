"""Sound through the image backbones: clips drawn as log-mel pictures, embedded by a frozen
EfficientNet-Lite, and a family of their own in the race, left out (saying why) when the price
measured does not fit its share of the budget."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from audio_competition import chirp, kind_clip, tone, write_clip
from solve_pipeline.base.dataset import AudioClips, FeatureSet
from solve_pipeline.fusion.spectrogram_embedding import spectrogram_embedding, spectrogram_matrices
from solve_pipeline.race.registry import race_candidates
from solve_pipeline.sound.audio_features import audio_blocks
from solve_pipeline.sound.spectrogram_images import SPECTROGRAM_PX, log_mel_picture


def _brightest_rows(picture: np.ndarray) -> np.ndarray:
    """The brightest row of each of the picture's first, middle and last columns (0 = the top)."""
    columns = [SPECTROGRAM_PX // 8, SPECTROGRAM_PX // 2, SPECTROGRAM_PX * 7 // 8]
    return np.array([int(np.argmax(picture[:, c])) for c in columns])


def test_a_picture_has_time_left_to_right_and_low_pitch_at_the_bottom() -> None:
    rate = 16000
    low = log_mel_picture(tone(rate, 1.0, 300).astype(np.float32), rate)
    high = log_mel_picture(tone(rate, 1.0, 3000).astype(np.float32), rate)
    assert low.shape == high.shape == (SPECTROGRAM_PX, SPECTROGRAM_PX) and low.dtype == np.uint8
    assert _brightest_rows(low).min() > _brightest_rows(high).max()  # a low tone sits lower
    rising = _brightest_rows(log_mel_picture(chirp(rate, 1.0, 300, 3000).astype(np.float32), rate))
    falling = _brightest_rows(log_mel_picture(chirp(rate, 1.0, 3000, 300).astype(np.float32), rate))
    assert rising[0] > rising[1] > rising[2] and falling[0] < falling[1] < falling[2]


def _sweeps(root: Path, n: int) -> tuple[FeatureSet, np.ndarray]:
    """`n` noisy clips, rising and falling sweeps in turn, as the solver's FeatureSet (their
    log-mel statistics as the table) and their kinds."""
    rng = np.random.default_rng(0)
    rows = []
    for i in range(n):
        write_clip(root / "clips" / f"{i}.wav", kind_clip(rng, ("rising", "falling")[i % 2], 8000), 8000)
        rows.append({"id": str(i), "audio_path": f"clips/{i}.wav"})
    frame = pd.DataFrame(rows).set_index("id")
    blocks = audio_blocks(frame, frame.iloc[:0], root, cache_dir=root / "cache")
    assert blocks.train is not None and blocks.test is not None and blocks.plan is not None
    clips = AudioClips(blocks.paths, blocks.windows, blocks.plan.rate, blocks.plan.max_seconds)
    features = FeatureSet(list(frame.index), [], blocks.train, blocks.test, tab_names=blocks.names,
                          tab_kinds=["numeric"] * len(blocks.names), cache_dir=root / "cache", audio_clips=clips)
    return features, np.arange(n) % 2


def test_spectrograms_enter_the_race_only_with_clips(tmp_path: Path) -> None:
    features, _ = _sweeps(tmp_path, 4)
    assert "spectrogram_linear" in [c.name for c in race_candidates(features)]
    plain = FeatureSet(features.train_ids, [], features.tab_train, features.tab_test)
    assert "spectrogram_linear" not in [c.name for c in race_candidates(plain)]


def test_sweeps_drawn_and_embedded_tell_rising_from_falling(tmp_path: Path) -> None:
    features, kinds = _sweeps(tmp_path, 40)
    found = spectrogram_embedding(features, seconds=300.0)
    assert found.block is not None, found.note
    assert found.block.source.startswith("spectrogram:efficientnet-lite") and "+flip" not in found.block.source
    assert found.block.train.shape == (40, 1280) and found.block.test.shape == (0, 1280)
    assert "40 clips drawn as 8000 Hz log-mel pictures" in found.note and "embedded by" in found.note
    assert len(list((tmp_path / "cache" / "spectrograms").glob("*.png"))) == 40
    # A mirrored picture would play backwards: the two kinds must stay apart in the features.
    model = make_pipeline(StandardScaler(), LogisticRegression(C=0.1, max_iter=2000))
    accuracy = cross_val_score(model, found.block.train, kinds, cv=StratifiedKFold(4, shuffle=True, random_state=0))
    assert accuracy.mean() >= 0.8, accuracy
    matrices = spectrogram_matrices(features, seconds=300.0)  # the memo: no second pass
    assert matrices is not None and matrices[0].shape == (40, features.tab_train.shape[1] + 1280)
    assert spectrogram_embedding(features, seconds=300.0) is found


def test_a_budget_that_cannot_hold_the_pictures_leaves_the_family_out(tmp_path: Path) -> None:
    features, _ = _sweeps(tmp_path, 24)
    found = spectrogram_embedding(features, seconds=0.05)
    assert found.block is None
    assert found.note.startswith("spectrograms: ") and "sits the race out" in found.note
    assert spectrogram_matrices(features, seconds=0.05) is None
