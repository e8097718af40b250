"""The one rule for cutting rows into K folds, shared by the race's CV and the blender's nested CV."""

from __future__ import annotations

import warnings

import numpy as np


def make_folds(n_rows: int, folds: int, seed: int, strata: np.ndarray | None) -> list[tuple]:
    """Stratified folds when `strata` (class indices) allow it; plain shuffled KFold otherwise."""
    from sklearn.model_selection import KFold, StratifiedKFold

    k = max(2, min(folds, n_rows))
    if strata is not None:
        counts = np.bincount(np.asarray(strata).astype(int))
        counts = counts[counts > 0]
        # StratifiedKFold only refuses when no class can fill k folds; rarer classes are merely
        # spread thinly (some folds' training then lacks them, which the models tolerate).
        if len(counts) > 1 and counts.max() >= k:
            splitter = StratifiedKFold(n_splits=k, shuffle=True, random_state=seed)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return list(splitter.split(np.zeros(n_rows), strata))
    return list(KFold(n_splits=k, shuffle=True, random_state=seed).split(np.zeros(n_rows)))
