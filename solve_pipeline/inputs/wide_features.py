"""A table wider than its budget can race: its columns screened before any family reads them.

Every family pays per feature (LightGBM's histograms, CatBoost's borders, a forest's splits), and
a race of seven families over 10,000 noise columns does not end in a short budget. Above
`WIDE_FEATURES` columns the solver keeps those correlated with a target (any class of it) beyond
what chance gives among as many columns, as many as the budget carries (`FEATURES_PER_SECOND`); a
table of usual width is never touched. The screen reads every training row's target: the chance
bar keeps the folds from scoring the luck of columns it picked.
"""

from __future__ import annotations

import numpy as np

from solve_pipeline.base.dataset import FeatureSet

WIDE_FEATURES = 1000  # at most this many columns are never screened
FEATURES_PER_SECOND = 25  # columns a second of budget carries through the race
MIN_KEPT = 200
LIGHT_KEPT = WIDE_FEATURES  # the setup's light solve has no budget, only a timeout
SCREEN_ROWS = 20_000
MIN_SIGNAL = 10  # kept whatever their correlation: a table with no linear signal still gets columns


def feature_cap(n_features: int, budget: float | None, light: bool) -> int | None:
    """How many columns the solve keeps; None when it keeps them all."""
    if n_features <= WIDE_FEATURES:
        return None
    cap = LIGHT_KEPT if light or budget is None else max(MIN_KEPT, int(FEATURES_PER_SECOND * budget))
    return cap if cap < n_features else None


def _centred(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    centred = x - x.mean(axis=0)
    return centred, np.sqrt((centred ** 2).sum(axis=0))


def screen_scores(x: np.ndarray, targets: list[np.ndarray], classification: list[bool]) -> np.ndarray:
    """Per column, its largest absolute correlation with a target (each class of a class target
    on its own); a missing cell counts as its column's mean, a constant column scores 0."""
    filled = np.where(np.isnan(x), np.nanmean(np.where(np.isnan(x).all(axis=0), 0.0, x), axis=0), x)
    centred, norms = _centred(filled)
    best = np.zeros(x.shape[1])
    for y, is_class in zip(targets, classification):
        columns = [(y == k).astype(float) for k in np.unique(y)] if is_class else [y.astype(float)]
        known = ~np.isnan(columns[0])
        # A target missing on some rows (several targets, each given where known) is correlated
        # over the rows that have it.
        part, part_norms = (centred, norms) if known.all() else _centred(filled[known])
        for column in columns:
            c = column[known] - column[known].mean()
            denominator = part_norms * np.sqrt((c ** 2).sum())
            with np.errstate(invalid="ignore", divide="ignore"):
                r = np.abs(part.T @ c) / denominator
            best = np.maximum(best, np.nan_to_num(r, nan=0.0))
    return best


def screen(features: FeatureSet, targets: list[np.ndarray], classification: list[bool], cap: int) -> dict[str, object]:
    """Keep the columns of `features` (in their order) correlated with a target beyond chance, the
    best `cap` of them, at least `MIN_SIGNAL`; what was done, for the run's events."""
    # Spread rows stand for a long table: the screen's cost is bounded whatever the row count.
    rows = np.unique(np.linspace(0, features.n_train - 1, min(features.n_train, SCREEN_ROWS)).astype(int))
    scores = screen_scores(features.tab_train[rows].astype(np.float64), [y[rows] for y in targets], classification)
    # Only columns correlated beyond what the largest of as many noise columns reaches by chance
    # (sqrt(2 ln 2p / n)): the screen reads every row's target, and 500 noise columns chosen from
    # 10,000 for their luck made the folds score 0.91 where the test scored the constant's 0.62.
    # (two-sided, each class of a class target a test of its own).
    tests = len(scores) * sum(len(np.unique(y)) if c else 1 for y, c in zip(targets, classification))
    chance = np.sqrt(2.0 * np.log(2.0 * max(tests, 1)) / max(len(rows), 2))
    ranked = np.argsort(-scores, kind="stable")
    signal = int((scores > chance).sum())
    keep = np.sort(ranked[:min(cap, max(signal, MIN_SIGNAL))])
    before = len(features.tab_names)
    features.tab_train = features.tab_train[:, keep]
    features.tab_test = features.tab_test[:, keep]
    features.tab_names = [features.tab_names[i] for i in keep]
    features.tab_kinds = [features.tab_kinds[i] for i in keep]
    return {"features": before, "kept": int(len(keep)), "cap": cap, "chance_correlation": round(float(chance), 4),
            "message": f"a wide table: {before} feature columns screened to the {len(keep)} correlated with the "
                       f"target beyond chance (|r| > {chance:.3f}), at most {cap}: as many as the budget carries"}
