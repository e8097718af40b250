"""Setup maps → the feature blocks of a `FeatureSet`, aligned to train/test ids.

Everything here is unsupervised: no transform ever looks at a target.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

from solve_pipeline.sound.audio_features import audio_blocks
from solve_pipeline.base.dataset import FREQUENCY, NUMERIC, TEXT_STAT, FeatureSet
from solve_pipeline.images.image_features import ImageBlocks, image_blocks
from solve_pipeline.base.setup_modules import SetupArtifacts
from solve_pipeline.tables.tabular_features import id_parts, tabular_columns
from solve_pipeline.texts.text_features import TextBlocks, text_blocks


def aligned(frame: pd.DataFrame, ids: Sequence[str]) -> pd.DataFrame:
    """Rows of a map in `ids` order; ids absent from the map become all-missing rows."""
    return frame.drop_duplicates("id").set_index("id").reindex(list(ids))


def build_features(
    artifacts: SetupArtifacts,
    *,
    max_text_features: int = 30000,
    image_size: int = 32,
    train_ids: Sequence[str] | None = None,
    audio_seconds: float | None = None,
    test_ids: Sequence[str] | None = None,
) -> FeatureSet:
    """Build the three feature blocks for the train ids (default: every row with targets); sound
    clips become numeric columns of the tabular block, featurised within `audio_seconds` if given.
    `test_ids` (default: every test row) lets a probe featurise a few rows only."""
    train_ids = list(artifacts.train_ids if train_ids is None else train_ids)
    test_ids = list(artifacts.test_ids if test_ids is None else test_ids)
    n_train = len(train_ids)

    tab_parts: dict[str, pd.Series] = {}
    kinds: dict[str, str] = {}
    if "tab" in artifacts.train_maps:
        train_tab = aligned(artifacts.train_maps["tab"], train_ids)
        test_tab = aligned(artifacts.test_maps["tab"], test_ids)
        common = [c for c in train_tab.columns if c in test_tab.columns]
        both = pd.concat([train_tab[common], test_tab[common]], ignore_index=True)
        tab_parts, kinds = tabular_columns(both)
        for key, values in id_parts([*train_ids, *test_ids]).items():
            tab_parts[key], kinds[key] = values, FREQUENCY
    text = TextBlocks()
    if "txt" in artifacts.train_maps:
        text = text_blocks(aligned(artifacts.train_maps["txt"], train_ids),
                           aligned(artifacts.test_maps["txt"], test_ids), max_text_features)
        for key, values in text.stats.items():
            tab_parts[key], kinds[key] = values, TEXT_STAT

    audio_note = None
    if "aud" in artifacts.train_maps:
        # Clips are summarised as numbers (log-mel statistics): every table family reads them.
        audio = audio_blocks(aligned(artifacts.train_maps["aud"], train_ids), aligned(artifacts.test_maps["aud"], test_ids),
                             artifacts.setup_dir, seconds=audio_seconds, cache_dir=artifacts.workspace / "solve" / "cache")
        assert audio.train is not None and audio.test is not None
        both = np.concatenate([audio.train, audio.test]) if audio.names else np.zeros((0, 0))
        for j, name in enumerate(audio.names):
            tab_parts[name], kinds[name] = pd.Series(both[:, j]), NUMERIC
        audio_note = audio.note

    image = ImageBlocks()
    if "img" in artifacts.train_maps:
        image = image_blocks(aligned(artifacts.train_maps["img"], train_ids),
                             aligned(artifacts.test_maps["img"], test_ids), artifacts.setup_dir, image_size)

    names, matrix_columns = [], []
    for name, values in tab_parts.items():
        array = values.to_numpy(dtype=np.float64, na_value=np.nan)
        train_part = array[:n_train]
        present = train_part[~np.isnan(train_part)]
        # Constant (or all-missing) in train: nothing to learn, and it would only confuse scalers.
        if present.size == 0 or np.all(present == present[0]):
            continue
        names.append(name)
        matrix_columns.append(array)
    if matrix_columns:
        matrix = np.column_stack(matrix_columns).astype(np.float32)
    else:
        matrix = np.zeros((n_train + len(test_ids), 0), dtype=np.float32)
    return FeatureSet(
        train_ids=train_ids,
        test_ids=test_ids,
        tab_train=matrix[:n_train],
        tab_test=matrix[n_train:],
        tab_names=names,
        tab_kinds=[kinds[n] for n in names],
        text_train=text.train,
        text_test=text.test,
        image_train=image.train,
        image_test=image.test,
        image_shape=image.shape,
        raw_text_train=_joined(text.columns_train) if text.columns_train else None,
        raw_text_test=_joined(text.columns_test) if text.columns_test else None,
        raw_text_columns_train=text.columns_train or None,
        raw_text_columns_test=text.columns_test or None,
        image_paths_train=image.paths_train,
        image_paths_test=image.paths_test,
        cache_dir=artifacts.workspace / "solve" / "cache",
        audio_note=audio_note,
    )


def _joined(columns: dict[str, list[str]]) -> list[str]:
    return [" | ".join(part for part in parts if part) for parts in zip(*columns.values(), strict=True)]
