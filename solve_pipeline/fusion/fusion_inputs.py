"""Inputs of the late-fusion network: a FeatureSet turned into per-modality blocks.

Standardised numerics, category codes, a dense text representation (MiniLM sentence embeddings,
or a TF-IDF SVD projection when embedding would cost too much) and image tensors. Every transform
here is unsupervised, so fitting it on train+test rows leaks nothing about targets.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Any

import numpy as np

from solve_pipeline.base.baseline_models import scaled_dense
from solve_pipeline.base.dataset import CATEGORY, ORDINAL_CODE, FeatureSet
from solve_pipeline.fusion.fusion_defaults import EMBED_DEFAULT_S
from solve_pipeline.fusion.pretrained_features import pretrained_features

# MiniLM measured ~100-180 sentences/s on this project's 2-core machines: 20k rows is minutes.
MAX_EMBED_ROWS = 30000
SVD_COMPONENTS = 128


@dataclass(frozen=True, eq=False)
class ModalityBlocks:
    """Per-modality arrays for one set of rows; row i of every block is the same example.

    `categories` holds codes 1..L per column with 0 for missing; `cardinalities` sizes the
    embedding tables and is shared by every row slice, so train and test rows agree on it.
    """

    numeric: np.ndarray  # (n, d) float32, standardised, with NaN indicator columns
    categories: np.ndarray  # (n, c) int64
    cardinalities: tuple[int, ...] = ()
    text: np.ndarray | None = None  # (n, e) float32
    # (n, channels, h, w) pixels for a CNN, or (n, d) standardised pretrained features
    image: np.ndarray | None = None
    text_source: str | None = None  # "minilm" or "tfidf_svd"

    def __post_init__(self) -> None:
        rows = {len(self.numeric), len(self.categories)}
        rows |= {len(block) for block in (self.text, self.image) if block is not None}
        if len(rows) != 1:
            raise ValueError(f"modality blocks disagree on the row count: {sorted(rows)}")
        if self.categories.shape[1] != len(self.cardinalities):
            raise ValueError("one cardinality per category column is required")

    def __getitem__(self, rows: Any) -> ModalityBlocks:
        return ModalityBlocks(
            numeric=self.numeric[rows],
            categories=self.categories[rows],
            cardinalities=self.cardinalities,
            text=None if self.text is None else self.text[rows],
            image=None if self.image is None else self.image[rows],
            text_source=self.text_source,
        )

    def __len__(self) -> int:
        return len(self.numeric)

    @property
    def shape(self) -> tuple[int, int]:
        """(rows, flattened feature count), so code written for matrices can read `.shape[0]`."""
        width = self.numeric.shape[1] + self.categories.shape[1]
        if self.text is not None:
            width += self.text.shape[1]
        if self.image is not None:
            width += int(np.prod(self.image.shape[1:]))
        return len(self), width


def _category_codes(features: FeatureSet) -> tuple[np.ndarray, tuple[int, ...]]:
    """FeatureSet codes (0..L-1, NaN) → 1..L with 0 for missing; tables sized on train+test."""
    columns = features.categorical_indices
    both = np.vstack([features.tab_train[:, columns], features.tab_test[:, columns]])
    codes = np.where(np.isnan(both), 0, np.nan_to_num(both, nan=0.0) + 1).astype(np.int64)
    cardinalities = tuple(int(codes[:, j].max(initial=0)) + 1 for j in range(codes.shape[1]))
    return codes, cardinalities


def _standardised(train: np.ndarray, test: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    from sklearn.preprocessing import StandardScaler

    both = StandardScaler().fit_transform(np.vstack([train, test]).astype(np.float64))
    both = both.astype(np.float32)
    return both[: len(train)], both[len(train):]


def _text_block(features: FeatureSet, seed: int, max_embed_rows: int, max_embed_seconds: float,
                svd_components: int, threads: int) -> tuple[np.ndarray, np.ndarray, str] | None:
    """Sentence embeddings when raw text is available and affordable, else an SVD of TF-IDF."""
    raw_train, raw_test = features.raw_text_columns_train, features.raw_text_columns_test
    if raw_train is not None and raw_test is not None and \
            0 < features.n_train + features.n_test <= max_embed_rows:
        text = pretrained_features(features, seconds=max_embed_seconds, threads=threads).text
        if text is not None:
            return text.train, text.test, "minilm"
    if features.text_train is None or features.text_test is None:
        return None
    from scipy import sparse
    from sklearn.decomposition import TruncatedSVD
    from threadpoolctl import threadpool_limits

    stacked = sparse.vstack([features.text_train, features.text_test]).tocsr()
    k = min(svd_components, stacked.shape[1] - 1, stacked.shape[0] - 1)
    if k < 1:
        return None
    # Two OpenBLAS threads on a busy 2-core machine measured up to 10x slower than one here.
    with threadpool_limits(limits=1, user_api="blas"):
        reduced = TruncatedSVD(n_components=k, random_state=seed).fit_transform(stacked)
    return reduced[: features.n_train], reduced[features.n_train:], "tfidf_svd"


# The solver and HEBO rebuild a candidate's matrices for every CV run; re-encoding the text each
# time would dominate tuning, so the last FeatureSet's blocks are kept while that FeatureSet lives
# (FeatureSets are treated as immutable once built).
_LAST: dict[str, Any] = {}


def _forget(reference: weakref.ref) -> None:
    if _LAST.get("features") is reference:
        _LAST.clear()


def fusion_matrices(features: FeatureSet, seed: int = 0, *, max_embed_rows: int = MAX_EMBED_ROWS,
                    max_embed_seconds: float = EMBED_DEFAULT_S,
                    svd_components: int = SVD_COMPONENTS,
                    threads: int = 2) -> tuple[ModalityBlocks, ModalityBlocks] | None:
    """Train and test ModalityBlocks, or None when the FeatureSet has nothing usable."""
    key = (seed, max_embed_rows, max_embed_seconds, svd_components)
    cached = _LAST.get("features")
    if cached is not None and cached() is features and _LAST.get("key") == key:
        return _LAST["blocks"]
    blocks = _build_blocks(features, seed, max_embed_rows, max_embed_seconds, svd_components, threads)
    _LAST.update(features=weakref.ref(features, _forget), key=key, blocks=blocks)
    return blocks


def _build_blocks(features: FeatureSet, seed: int, max_embed_rows: int, max_embed_seconds: float,
                  svd_components: int, threads: int) -> tuple[ModalityBlocks, ModalityBlocks] | None:
    n_train, n_test = features.n_train, features.n_test
    kinds = features.tab_kinds
    # Ordinal codes are arbitrary orders of many levels: neither a number nor worth an embedding.
    dense = [i for i, kind in enumerate(kinds) if kind not in (CATEGORY, ORDINAL_CODE)]
    if dense:
        numeric_train, numeric_test = scaled_dense(features.tab_train[:, dense], features.tab_test[:, dense])
    else:
        numeric_train, numeric_test = np.zeros((n_train, 0)), np.zeros((n_test, 0))
    codes, cardinalities = _category_codes(features)

    text_train = text_test = None
    text_source = None
    text = _text_block(features, seed, max_embed_rows, max_embed_seconds, svd_components, threads)
    if text is not None:
        text_train, text_test = _standardised(text[0], text[1])
        text_source = text[2]

    image_train = image_test = None
    pretrained = None
    if features.image_paths_train is not None:
        pretrained = pretrained_features(features, seconds=max_embed_seconds, threads=threads).image
    if pretrained is not None:
        image_train, image_test = _standardised(pretrained.train, pretrained.test)
    elif features.image_train is not None and features.image_test is not None and features.image_shape:
        shape = tuple(features.image_shape)
        both = np.vstack([features.image_train, features.image_test]).astype(np.float32)
        both = (both - np.nanmean(both)) / max(float(np.nanstd(both)), 1e-6)
        both = np.nan_to_num(both).reshape(-1, *shape)  # an unreadable pixel sits at the mean
        image_train, image_test = both[:n_train], both[n_train:]

    if numeric_train.shape[1] == 0 and not cardinalities and text_train is None and image_train is None:
        return None
    train = ModalityBlocks(numeric_train.astype(np.float32), codes[:n_train], cardinalities,
                           text_train, image_train, text_source)
    test = ModalityBlocks(numeric_test.astype(np.float32), codes[n_train:], cardinalities,
                          text_test, image_test, text_source)
    return train, test
