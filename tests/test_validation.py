"""Which folds match the test: grouped by an entity, ordered in time, or random, chosen by
comparing train with test (tiny frames built here)."""

from __future__ import annotations

import numpy as np

from solve_pipeline.base.dataset import CATEGORY, DATE_PART, NUMERIC, FeatureSet
from solve_pipeline.inputs.validation import choose_validation


def _features(train_ids: list[str], test_ids: list[str], tab_train: np.ndarray, tab_test: np.ndarray,
              names: list[str], kinds: list[str]) -> FeatureSet:
    return FeatureSet(train_ids=train_ids, test_ids=test_ids, tab_train=tab_train.astype(np.float32),
                      tab_test=tab_test.astype(np.float32), tab_names=names, tab_kinds=kinds)


def _noise(n: int) -> np.ndarray:
    return np.random.default_rng(0).normal(size=(n, 1))


def _group_ids(groups: range, per: int = 3) -> list[str]:
    return [f"{g:04d}_{p:02d}" for g in groups for p in range(1, per + 1)]


def test_compound_ids_with_other_groups_in_test_get_grouped_folds() -> None:
    train, test = _group_ids(range(0, 60)), _group_ids(range(60, 80))
    features = _features(train, test, _noise(len(train)), _noise(len(test)), ["x"], [NUMERIC])
    validation = choose_validation(features)
    assert validation.kind == "group" and "prefix" in validation.reason
    y = np.arange(len(train)) % 2
    for seed in (0, 1):
        folds = validation.folds(len(train), 5, seed, y)
        assert len(folds) == 5
        groups = np.array([i.split("_")[0] for i in train])
        for fit, held in folds:
            assert not set(groups[fit]) & set(groups[held])  # an entity lives in one fold
        assert sorted(np.concatenate([h for _, h in folds]).tolist()) == list(range(len(train)))
    # Another seed, another partition (bagging's fresh repeats need it).
    assert any(not np.array_equal(a[1], b[1]) for a, b in zip(validation.folds(len(train), 5, 0, y),
                                                               validation.folds(len(train), 5, 1, y)))


def test_groups_shared_with_the_test_keep_random_folds() -> None:
    ids = _group_ids(range(0, 80))
    rng = np.random.default_rng(1)
    in_test = rng.random(len(ids)) < 0.15  # a random row split, as MLE-bench's: groups straddle it
    train = [i for i, t in zip(ids, in_test) if not t]
    test = [i for i, t in zip(ids, in_test) if t]
    features = _features(train, test, _noise(len(train)), _noise(len(test)), ["x"], [NUMERIC])
    validation = choose_validation(features)
    assert validation.kind == "random" and "share a train group" in validation.reason


def test_a_repeated_key_column_groups_rows() -> None:
    n = 600
    customers_train = np.repeat(np.arange(100), 6).astype(float)[:, None]
    customers_test = np.repeat(np.arange(100, 130), 4).astype(float)[:, None]
    train = np.hstack([customers_train, _noise(n)])
    test = np.hstack([customers_test, _noise(120)])
    features = _features([str(i) for i in range(n)], [str(i) for i in range(n, n + 120)], train, test,
                         ["customer", "x"], [CATEGORY, NUMERIC])
    validation = choose_validation(features)
    assert validation.kind == "group" and "customer" in validation.reason


def test_a_test_period_after_training_gets_time_folds() -> None:
    days_train = np.arange(300, dtype=float)[:, None]
    days_test = np.arange(300, 360, dtype=float)[:, None]
    features = _features([str(i) for i in range(300)], [str(i) for i in range(300, 360)], days_train, days_test,
                         ["date__days"], [DATE_PART])
    validation = choose_validation(features)
    assert validation.kind == "time"
    folds = validation.folds(300, 5, 0, None)
    for k, (fit, held) in enumerate(folds):
        assert held.tolist() == list(range(60 * k, 60 * (k + 1)))  # contiguous periods
        assert len(fit) == 240
    # Interleaved periods (days 20-31 of the same months) are no forecast: random folds.
    mixed = _features([str(i) for i in range(300)], [str(i) for i in range(300, 360)], days_train,
                      np.linspace(0, 299, 60)[:, None], ["date__days"], [DATE_PART])
    assert choose_validation(mixed).kind == "random"


def test_only_prefixes_that_group_rows_count_as_entities() -> None:
    from solve_pipeline.tables.tabular_features import id_prefix

    assert id_prefix(["0001_01", "0001_02", "0002_01", "0003_01", "0003_02"]) is not None
    assert id_prefix([f"id_{i:05d}" for i in range(300)]) is None  # one prefix for every row
    assert id_prefix([f"20{y:02d}-01-{d:02d}" for y in range(2) for d in range(1, 29)] * 5) is None  # years
    assert id_prefix([str(i) for i in range(50)]) is None
