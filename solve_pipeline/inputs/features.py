"""Setup maps → the feature blocks of a `FeatureSet`, aligned to train/test ids.

Everything here is unsupervised: no transform ever looks at a target.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pandas as pd

from solve_pipeline.sound.audio_features import audio_blocks
from solve_pipeline.base.dataset import FREQUENCY, NUMERIC, TEXT_STAT, AudioClips, FeatureSet
from solve_pipeline.images.image_features import ImageBlocks, image_blocks
from solve_pipeline.base.setup_modules import SetupArtifacts
from solve_pipeline.tables.tabular_features import IdParts, TableEncoding, fit_id_parts, fit_table
from solve_pipeline.texts.text_features import TextBlocks, text_blocks


@dataclass(frozen=True)
class TableRecipe:
    """How the tabular block's columns were made from the maps' rows, so that unseen rows get the
    very encoding the run's rows got: the map's columns, their encoding, the ids' group parts."""

    columns: tuple[str, ...]
    encoding: TableEncoding
    ids: IdParts | None

    def parts(self, frame: pd.DataFrame, ids: Sequence[str]) -> tuple[dict[str, pd.Series], dict[str, str]]:
        """Every encoded column of `frame` (rows in `ids` order, index 0..n-1), with its kind."""
        parts, kinds = self.encoding.encode(frame)
        if self.ids is not None:
            for key, values in self.ids.encode(list(ids)).items():
                parts[key], kinds[key] = values, FREQUENCY
        return parts, kinds


def tab_matrix(parts: dict[str, pd.Series], names: Sequence[str], n_rows: int) -> np.ndarray:
    """The named columns as the float32 block every family reads."""
    if not names:
        return np.zeros((n_rows, 0), dtype=np.float32)
    return np.column_stack([_floats(parts[name]) for name in names]).astype(np.float32)


def _floats(values: pd.Series) -> np.ndarray:
    return values.to_numpy(dtype=np.float64, na_value=np.nan)


def aligned(frame: pd.DataFrame, ids: Sequence[str]) -> pd.DataFrame:
    """Rows of a map in `ids` order; ids absent from the map become all-missing rows."""
    ids = list(ids)
    if len(ids) < len(frame) // 4:
        # A few rows of a long map (the maps check's probe: 256 of ten million): the others are
        # dropped first, so the repeated ids are looked for among a few rows (the first kept still).
        frame = frame[frame["id"].isin(ids)]
    return frame.drop_duplicates("id").set_index("id").reindex(ids)


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
    table = None
    if "tab" in artifacts.train_maps:
        train_tab = aligned(artifacts.train_maps["tab"], train_ids)
        test_tab = aligned(artifacts.test_maps["tab"], test_ids)
        common = [c for c in train_tab.columns if c in test_tab.columns]
        both = pd.concat([train_tab[common], test_tab[common]], ignore_index=True)
        encoding, tab_parts, kinds = fit_table(both)
        group_parts = fit_id_parts([*train_ids, *test_ids])
        table = TableRecipe(tuple(str(c) for c in common), encoding, group_parts)
        if group_parts is not None:
            for key, values in group_parts.encode([*train_ids, *test_ids]).items():
                tab_parts[key], kinds[key] = values, FREQUENCY
    text = TextBlocks()
    if "txt" in artifacts.train_maps:
        text = text_blocks(aligned(artifacts.train_maps["txt"], train_ids),
                           aligned(artifacts.test_maps["txt"], test_ids), max_text_features)
        for key, values in text.stats.items():
            tab_parts[key], kinds[key] = values, TEXT_STAT

    audio_note, clips = None, None
    if "aud" in artifacts.train_maps:
        # Clips are summarised as numbers (log-mel statistics): every table family reads them.
        audio = audio_blocks(aligned(artifacts.train_maps["aud"], train_ids), aligned(artifacts.test_maps["aud"], test_ids),
                             artifacts.setup_dir, seconds=audio_seconds, cache_dir=artifacts.workspace / "solve" / "cache")
        assert audio.train is not None and audio.test is not None
        both = np.concatenate([audio.train, audio.test]) if audio.names else np.zeros((0, 0))
        for j, name in enumerate(audio.names):
            tab_parts[name], kinds[name] = pd.Series(both[:, j]), NUMERIC
        audio_note = audio.note
        if audio.plan is not None:
            clips = AudioClips(audio.paths, audio.windows, audio.plan.rate, audio.plan.max_seconds)

    image = ImageBlocks()
    if "img" in artifacts.train_maps:
        image = image_blocks(aligned(artifacts.train_maps["img"], train_ids),
                             aligned(artifacts.test_maps["img"], test_ids), artifacts.setup_dir, image_size)

    names = []
    for name, values in tab_parts.items():
        train_part = _floats(values)[:n_train]
        present = train_part[~np.isnan(train_part)]
        # Constant (or all-missing) in train: nothing to learn, and it would only confuse scalers.
        if present.size == 0 or np.all(present == present[0]):
            continue
        names.append(name)
    matrix = tab_matrix(tab_parts, names, n_train + len(test_ids))
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
        raw_text_train=joined_texts(text.columns_train) if text.columns_train else None,
        raw_text_test=joined_texts(text.columns_test) if text.columns_test else None,
        raw_text_columns_train=text.columns_train or None,
        raw_text_columns_test=text.columns_test or None,
        image_paths_train=image.paths_train,
        image_paths_test=image.paths_test,
        cache_dir=artifacts.workspace / "solve" / "cache",
        audio_note=audio_note,
        audio_clips=clips,
        table=table,
        text_recipe=text.recipe,
    )


def joined_texts(columns: dict[str, list[str]]) -> list[str]:
    """Each row's texts, its columns joined with " | " (FeatureSet.raw_text_*)."""
    return [" | ".join(part for part in parts if part) for parts in zip(*columns.values(), strict=True)]
