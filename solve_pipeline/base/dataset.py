"""What the solver's models read: the feature blocks aligned to train/test ids (`FeatureSet`), and
the kinds of the tabular block's columns. `features.py` builds them from the setup maps.

Three blocks are kept apart so each model can pick what suits it: trees want the dense
tabular block with category codes, linear models want one-hot + TF-IDF, nets want tensors.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from scipy import sparse

# From this many training rows a table is "big": fewer folds, boosting leads the race with a
# faster learning rate, and the race's pace-setter gets a share of the race, not all of it.
BIG_ROWS = 200_000
BIG_FOLDS = 3

# Column kinds in the tabular block; linear models treat them differently.
NUMERIC, CATEGORY, ORDINAL_CODE, FREQUENCY, DATE_PART, TEXT_STAT = (
    "numeric", "category", "ordinal_code", "frequency", "date_part", "text_stat",
)


@dataclass(frozen=True)
class AudioClips:
    """The sound clips behind the tabular block's log-mel statistics, for families that read the
    clips themselves (spectrogram images), read as the statistics were."""

    paths: list[str]  # train rows then test rows; "" where a row has no clip
    windows: list[tuple[float, float] | None]  # (start, end) seconds inside the recording, or the whole clip
    rate: int
    max_seconds: float


@dataclass
class FeatureSet:
    """Feature blocks; row i of every train block belongs to train_ids[i] (same for test)."""

    train_ids: list[str]
    test_ids: list[str]
    tab_train: np.ndarray
    tab_test: np.ndarray
    tab_names: list[str] = field(default_factory=list)
    tab_kinds: list[str] = field(default_factory=list)
    text_train: sparse.csr_matrix | None = None
    text_test: sparse.csr_matrix | None = None
    image_train: np.ndarray | None = None
    image_test: np.ndarray | None = None
    image_shape: tuple[int, int, int] | None = None  # (channels=image columns, h, w)
    # Text columns of each row joined with " | ", for models that read raw text (sentence encoders).
    raw_text_train: list[str] | None = None
    raw_text_test: list[str] | None = None
    # The same texts column by column (insertion order = the map's column order), for models that
    # treat each text field on its own (text pairs, per-column embeddings).
    raw_text_columns_train: dict[str, list[str]] | None = None
    raw_text_columns_test: dict[str, list[str]] | None = None
    # Image files per image column ("" where a row has none), for pretrained backbones that read
    # the photos at their own resolution and in colour.
    image_paths_train: dict[str, list[str]] | None = None
    image_paths_test: dict[str, list[str]] | None = None
    # Where expensive unsupervised transforms (pretrained embeddings) keep their results between
    # runs over the same workspace; None: nowhere.
    cache_dir: Path | None = None
    # What the audio block read (clips, rate, cut length) and any cut the budget imposed.
    audio_note: str | None = None
    audio_clips: AudioClips | None = None
    # How the tabular block was made from the maps' rows (features.TableRecipe), for a predictor
    # that encodes unseen rows the same way; None without a tabular map.
    table: Any = None
    # How the text block and style columns were made (text_features.TextRecipe); None without texts.
    text_recipe: Any = None

    @property
    def categorical_indices(self) -> list[int]:
        return [i for i, kind in enumerate(self.tab_kinds) if kind == CATEGORY]

    @property
    def n_train(self) -> int:
        return len(self.train_ids)

    @property
    def n_test(self) -> int:
        return len(self.test_ids)

    @property
    def big(self) -> bool:
        return self.n_train >= BIG_ROWS
