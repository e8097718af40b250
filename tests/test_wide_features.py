"""The wide-table screen: columns above 1,000 are cut to those correlated with a target beyond
chance, as many as the budget carries; a table of usual width is never touched."""

from __future__ import annotations

import numpy as np

from solve_pipeline.base.dataset import NUMERIC, FeatureSet
from solve_pipeline.inputs.wide_features import MIN_KEPT, MIN_SIGNAL, WIDE_FEATURES, feature_cap, screen


def test_the_cap_engages_only_above_the_wide_width() -> None:
    assert feature_cap(WIDE_FEATURES, 5.0, light=False) is None
    assert feature_cap(WIDE_FEATURES + 1, 5.0, light=False) == MIN_KEPT
    assert feature_cap(20_000, 600.0, light=False) == 15_000
    assert feature_cap(5_000, 600.0, light=False) is None  # the budget carries them all
    assert feature_cap(5_000, None, light=True) == WIDE_FEATURES


def test_the_screen_keeps_signal_and_leaves_the_luck_of_noise() -> None:
    rng = np.random.default_rng(0)
    n, width = 800, 3_000
    y = rng.integers(0, 3, n)
    x = rng.normal(size=(n, width)).astype(np.float32)
    x[:, 7] += (y == 2) * 1.5  # one class stands out in one column
    x[:, 11] -= y * 0.6
    x[::5, 11] = np.nan  # missing cells count as the column's mean
    names = [f"c{j}" for j in range(width)]
    features = FeatureSet(train_ids=[str(i) for i in range(n)], test_ids=["t"], tab_train=x, tab_test=x[:1],
                          tab_names=names, tab_kinds=[NUMERIC] * width)
    record = screen(features, [y], [True], cap=500)
    assert {"c7", "c11"} <= set(features.tab_names)
    assert record["kept"] == len(features.tab_names) == features.tab_train.shape[1] == features.tab_test.shape[1]
    assert len(features.tab_names) <= MIN_SIGNAL + 2  # not 500 columns chosen for their chance correlation
    assert features.tab_names == sorted(features.tab_names, key=names.index)  # in the table's order
