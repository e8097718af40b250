"""Target encoding fitted inside folds only, as a wrapper around any model of the protocol.

`TargetEncoded.fit` learns the encoding from the rows it is given (scikit-learn's TargetEncoder,
whose cross fitting keeps each training row from seeing its own target), appends the encoded
columns to X and fits the inner model; validation and test rows are encoded with the fitted
encoder. Nothing outside the training fold ever reaches the encoder.
"""

from __future__ import annotations

import warnings

import numpy as np
import sklearn
from sklearn.preprocessing import TargetEncoder

from solve_pipeline.base.baseline_models import Matrix, Model
from solve_pipeline.base.dataset import CATEGORY, ORDINAL_CODE, FeatureSet
from solve_pipeline.base.setup_modules import TargetSpec

MISSING_LEVEL = -1.0  # category codes are >= 0, so missing becomes a level of its own
CROSS_FIT_FOLDS = 5


def high_cardinality_columns(features: FeatureSet, min_levels: int = 10) -> list[int]:
    """Category / ordinal-code columns with at least `min_levels` distinct values in train."""
    chosen = []
    for i, kind in enumerate(features.tab_kinds):
        if kind not in (CATEGORY, ORDINAL_CODE):
            continue
        values = features.tab_train[:, i]
        if len(np.unique(values[~np.isnan(values)])) >= min_levels:
            chosen.append(i)
    return chosen


def _encoder(target_type: str, seed: int) -> TargetEncoder:
    # scikit-learn 1.9 moved the shuffling seed from TargetEncoder's own arguments into `cv`.
    if tuple(int(p) for p in sklearn.__version__.split(".")[:2]) < (1, 9):
        return TargetEncoder(target_type=target_type, cv=CROSS_FIT_FOLDS, shuffle=True,
                             random_state=seed)
    from sklearn.model_selection import KFold, StratifiedKFold

    splitter = KFold if target_type == "continuous" else StratifiedKFold
    return TargetEncoder(target_type=target_type,
                         cv=splitter(n_splits=CROSS_FIT_FOLDS, shuffle=True, random_state=seed))


class TargetEncoded:
    """Model wrapper: X gains target-encoded copies of `columns`, learned on the training fold."""

    def __init__(self, inner: Model, columns: list[int], spec: TargetSpec, seed: int = 0) -> None:
        self.inner = inner
        self.columns = list(columns)
        self.spec = spec
        self.seed = seed

    def _codes(self, X: Matrix) -> np.ndarray:
        block = np.asarray(X[:, self.columns].toarray() if hasattr(X, "toarray") else X[:, self.columns],
                           dtype=np.float64)
        return np.where(np.isnan(block), MISSING_LEVEL, block)

    def _target_type(self, y: np.ndarray) -> str | None:
        """None when the fold cannot support an encoding (too few rows or a single class)."""
        if not self.columns or len(y) < 2 * CROSS_FIT_FOLDS:
            return None
        if not self.spec.is_classification:
            return "continuous"
        n_present = len(np.unique(y))
        if n_present < 2:
            return None
        # TargetEncoder's multiclass mode breaks on two labels: a fold of a multiclass task that
        # holds only two classes is encoded as binary.
        return "binary" if n_present == 2 else "multiclass"

    def _with_encoding(self, X: Matrix, encoded: np.ndarray) -> np.ndarray:
        dense = X.toarray() if hasattr(X, "toarray") else np.asarray(X)
        return np.hstack([dense, encoded.astype(dense.dtype, copy=False)])

    def transform(self, X: Matrix) -> Matrix:
        """X with the fitted encodings appended (unchanged when the fold had no encoding)."""
        if self.encoder_ is None:
            return X
        return self._with_encoding(X, self.encoder_.transform(self._codes(X)))

    def fit(self, X: Matrix, y: np.ndarray, *, X_val: Matrix | None = None,
            y_val: np.ndarray | None = None) -> TargetEncoded:
        target_type = self._target_type(y)
        self.encoder_ = None
        if target_type is not None:
            encoder = _encoder(target_type, self.seed)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # rare classes below the fold count: still usable
                encoded = encoder.fit_transform(self._codes(X), y)
            self.encoder_ = encoder
            X = self._with_encoding(X, encoded)
            if X_val is not None:
                X_val = self.transform(X_val)
        self.inner.fit(X, y, X_val=X_val, y_val=y_val)
        return self

    def predict_proba(self, X: Matrix) -> np.ndarray:
        return self.inner.predict_proba(self.transform(X))

    def predict(self, X: Matrix) -> np.ndarray:
        return self.inner.predict(self.transform(X))
