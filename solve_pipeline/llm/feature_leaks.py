"""Does a feature block leak the target? Two signs the permutation check cannot see when the code
reads the answers from somewhere else than the target column (memorised labels, a file):

- one new column alone nearly determines the target (a lookup from its values, out of fold, is right
  almost always), where no input column does;
- the block's cross-validated gain is far beyond the noise of the fold scores (feature_trial.py).

Both run on the output that is kept, never on a sample the code could tell apart.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

# "Nearly determines": right on this share of the rows (classes), or this share of the variance
# explained (numbers), out of fold. A real feature of a noisy target stays below it.
DETERMINES = 0.99
MAX_ROWS = 50_000  # a random subset of the kept output: enough to tell, cheap at any size
BINS = 64  # numeric columns are looked up by quantile bin
MAX_CLASSES = 20  # a numeric target with few integral values is a class label
# A gain this many standard errors of the fold scores beyond the old CV is not a feature's (the
# issue's leak: 0.816 -> 1.0 on titanic, about 18; a strong real feature: 0.89 -> 0.95, about 2).
JUMP_SIGMAS = 10.0


def determining_column(block: pd.DataFrame, train: pd.DataFrame, targets: list[str], seed: int = 0) -> str | None:
    """Why the block leaks (a column of it nearly determines a target no input column does), or None."""
    rng = np.random.default_rng(seed)
    rows = np.sort(rng.choice(len(train), min(MAX_ROWS, len(train)), replace=False))
    half = rng.random(len(rows)) < 0.5
    inputs = [c for c in train.columns if c not in targets and c != "id"]
    for target in targets:
        y = train[target].iloc[rows].reset_index(drop=True)
        known = y.notna().to_numpy()
        if known.sum() < 20:
            continue
        for column in block.columns:
            score = _lookup_score(block[column].iloc[rows].reset_index(drop=True), y, known, half)
            if score is None or score < DETERMINES:
                continue
            plain = [c for c in inputs
                     if (s := _lookup_score(train[c].iloc[rows].reset_index(drop=True), y, known, half)) is not None
                     and s >= DETERMINES]
            if not plain:
                return (f"the new column {column!r} alone determines {target!r} ({score:.4f} out of fold), "
                        "which no input column does")
    return None


def _is_class(y: pd.Series) -> bool:
    if not pd.api.types.is_numeric_dtype(y) or pd.api.types.is_bool_dtype(y):
        return True
    values = y.dropna().to_numpy(float)
    return len(np.unique(values)) <= MAX_CLASSES and bool(np.all(values == np.round(values)))


def _codes(x: pd.Series) -> np.ndarray:
    """Lookup keys: the values themselves when few or not numeric, else quantile bins; -1 for missing."""
    if pd.api.types.is_numeric_dtype(x) and not pd.api.types.is_bool_dtype(x):
        values = pd.to_numeric(x, errors="coerce").to_numpy(float, copy=True)
        values[~np.isfinite(values)] = np.nan
        finite = values[~np.isnan(values)]
        if len(np.unique(finite)) > BINS:
            edges = np.unique(np.quantile(finite, np.linspace(0, 1, BINS + 1)[1:-1]))
            codes = np.searchsorted(edges, values, side="right")
            return np.where(np.isnan(values), -1, codes)
    codes, _ = pd.factorize(x.astype("string"), use_na_sentinel=True)
    return codes


def _lookup_score(x: pd.Series, y: pd.Series, known: np.ndarray, half: np.ndarray) -> float | None:
    """Out of fold (two halves), how well a lookup from x's value predicts y: accuracy for classes,
    the share of variance explained for numbers. None where it says nothing (a constant target)."""
    codes = _codes(x)[known]
    split = half[known]
    if _is_class(y):
        labels, _ = pd.factorize(y[known].astype("string"))
        if np.bincount(labels).max() / len(labels) >= DETERMINES:
            return None  # one class nearly everywhere: any column "determines" it
        right = 0
        for fit in (split, ~split):
            right += int((_class_lookup(codes[fit], labels[fit], codes[~fit]) == labels[~fit]).sum())
        return right / len(labels)
    values = pd.to_numeric(y[known], errors="coerce").to_numpy(float)
    total = float(np.sum((values - values.mean()) ** 2))
    if total <= 0:
        return None
    error = 0.0
    for fit in (split, ~split):
        guess = _mean_lookup(codes[fit], values[fit], codes[~fit])
        error += float(np.sum((values[~fit] - guess) ** 2))
    return 1.0 - error / total


def _class_lookup(keys: np.ndarray, labels: np.ndarray, asked: np.ndarray) -> np.ndarray:
    frame = pd.DataFrame({"k": keys, "y": labels})
    best = frame.groupby("k")["y"].agg(lambda s: s.value_counts().idxmax())
    fallback = int(np.bincount(labels).argmax()) if len(labels) else 0
    return pd.Series(asked).map(best).fillna(fallback).to_numpy(int)


def _mean_lookup(keys: np.ndarray, values: np.ndarray, asked: np.ndarray) -> np.ndarray:
    means = pd.Series(values).groupby(keys).mean()
    fallback = float(values.mean()) if len(values) else 0.0
    return pd.Series(asked).map(means).fillna(fallback).to_numpy(float)


def cv_jump(gain: float, margin: float) -> str | None:
    """Why a CV gain is a leak's, not a feature's (far beyond the fold noise `margin`), or None.
    Without a noise estimate (one fold, or folds that all scored the same) nothing is said."""
    if margin > 0 and gain > JUMP_SIGMAS * margin:
        return f"the CV jumped {gain:.5g}, {gain / margin:.0f} times the fold noise ({margin:.3g})"
    return None
