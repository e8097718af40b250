"""Which folds match the test: random, grouped by an entity, or ordered in time.

A Kaggle expert's first question. Rows that share an entity (a passenger group in ids like
`gggg_pp`, a repeated customer key) leak into each other's folds, so CV flatters models that
memorise the entity; but that only misleads when the test holds *other* entities. Likewise time:
a test that lies after the training period wants folds that predict later rows from earlier ones,
while a test interleaved with train (days 20-31 of the same months) does not. So each scheme is
chosen by comparing train with test, never by names alone, and the choice and its evidence are
recorded (solve_result.json's `validation`).
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import pandas as pd

from solve_pipeline.base.dataset import CATEGORY, DATE_PART, ORDINAL_CODE, FeatureSet
from solve_pipeline.base.folds import make_folds
from solve_pipeline.tables.tabular_features import id_prefix

Kind = Literal["random", "group", "time"]
# A key groups rows when its groups average at least this many train rows...
MIN_GROUP_SIZE = 1.3
# ...and the test mostly holds other groups: at most this share of test rows has a train group.
MAX_TEST_SHARED = 0.2
# A table column is an entity key (a customer, a patient) only with this many levels at least, and
# larger groups than an id prefix needs: ordinary categories repeat too.
KEY_MIN_LEVELS = 50
KEY_MIN_GROUP_SIZE = 2.0
# Time: the test starts after this quantile of the training period (for nearly all its rows).
TIME_TRAIN_QUANTILE = 0.9
TIME_TEST_QUANTILE = 0.1


@dataclass(frozen=True)
class Validation:
    kind: Kind
    reason: str
    groups: np.ndarray | None = field(default=None, repr=False)  # one code per train row (group)
    order: np.ndarray | None = field(default=None, repr=False)  # a sortable time per train row

    def folds(self, n_rows: int, k: int, seed: int, strata: np.ndarray | None) -> list[tuple]:
        """K folds of this kind; `seed` varies the partition where the kind allows it."""
        if self.kind == "group" and self.groups is not None:
            return _group_folds(self.groups, k, seed, strata)
        if self.kind == "time" and self.order is not None:
            # Contiguous periods (every row still gets an out-of-fold prediction); the partition
            # does not depend on the seed.
            by_time = np.argsort(self.order, kind="stable")
            blocks = np.array_split(by_time, max(2, min(k, n_rows)))
            return [(np.sort(np.setdiff1d(by_time, block)), np.sort(block)) for block in blocks]
        return make_folds(n_rows, k, seed, strata)

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {"scheme": self.kind, "reason": self.reason}
        if self.groups is not None:
            out["groups"] = int(len(np.unique(self.groups)))
        return out


RANDOM = Validation("random", "no entity repeated across train rows with other entities in test, and no "
                              "test period after the training period")


def _group_folds(groups: np.ndarray, k: int, seed: int, strata: np.ndarray | None) -> list[tuple]:
    from sklearn.model_selection import GroupKFold, StratifiedGroupKFold

    n_groups = len(np.unique(groups))
    k = max(2, min(k, n_groups))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if strata is not None:
            splitter = StratifiedGroupKFold(n_splits=k, shuffle=True, random_state=seed)
            return list(splitter.split(np.zeros(len(groups)), strata, groups))
        # GroupKFold balances sizes deterministically; shuffling the group labels varies it by seed.
        relabel = np.random.default_rng(seed).permutation(n_groups)
        codes = relabel[pd.factorize(groups)[0]]
        return list(GroupKFold(n_splits=k).split(np.zeros(len(groups)), groups=codes))


def _grouping(train_keys: np.ndarray, test_keys: np.ndarray, what: str) -> Validation | None:
    # Hash-based (pandas), never np.isin on objects: that is quadratic on a million keys.
    train_series = pd.Series(np.asarray(train_keys))
    n_groups = int(train_series.nunique(dropna=False))
    if n_groups < 2 or len(train_keys) / n_groups < MIN_GROUP_SIZE:
        return None
    shared = float(pd.Series(np.asarray(test_keys)).isin(train_series.unique()).mean()) if len(test_keys) else 1.0
    size = len(train_keys) / n_groups
    if shared > MAX_TEST_SHARED:
        return Validation("random", f"{what} groups train rows ({size:.1f} per group), but {shared:.0%} of test "
                                    "rows share a train group: random folds mirror that test")
    return Validation("group", f"{what} groups train rows ({n_groups} groups, {size:.1f} rows each) and only "
                               f"{shared:.0%} of test rows share a train group: grouped folds keep an entity "
                               "in one fold, as the test does", groups=pd.factorize(train_keys)[0])


def _time_order(features: FeatureSet) -> Validation | None:
    for name, kind in zip(features.tab_names, features.tab_kinds, strict=True):
        if kind != DATE_PART or not name.endswith("__days"):
            continue
        column = features.tab_names.index(name)
        train, test = features.tab_train[:, column], features.tab_test[:, column]
        if np.isnan(train).mean() > 0.05 or np.isnan(test).mean() > 0.05 or len(test) == 0:
            continue
        late = np.nanquantile(train, TIME_TRAIN_QUANTILE)
        if np.nanquantile(test, TIME_TEST_QUANTILE) >= late and np.nanmax(test) > np.nanmax(train):
            stem = name[: -len("__days")]
            return Validation("time", f"test rows of '{stem}' lie after {TIME_TRAIN_QUANTILE:.0%} of the training "
                                      "period: folds are contiguous periods", order=np.nan_to_num(train))
    return None


def choose_validation(features: FeatureSet) -> Validation:
    """Time order first (a forecast is judged on the future), then entity groups, else random."""
    timed = _time_order(features)
    if timed is not None:
        return timed
    prefix = id_prefix(features.train_ids)
    if prefix is not None:
        delimiter, train_keys = prefix
        test = pd.Series(features.test_ids, dtype="string").str.split(re.escape(delimiter), n=1, regex=True).str[0]
        chosen = _grouping(train_keys, test.fillna("").to_numpy(dtype=object), f"the id's prefix (before '{delimiter}')")
        if chosen is not None:
            return chosen
    for column, (name, kind) in enumerate(zip(features.tab_names, features.tab_kinds, strict=True)):
        if kind not in (CATEGORY, ORDINAL_CODE) or "__" in name:
            continue
        train = features.tab_train[:, column]
        present = train[~np.isnan(train)]
        levels = len(np.unique(present))
        if len(present) < 0.95 * len(train) or levels < max(KEY_MIN_LEVELS, len(train) / 50) \
                or len(train) / levels < KEY_MIN_GROUP_SIZE:
            continue
        chosen = _grouping(np.nan_to_num(train, nan=-1.0), features.tab_test[:, column], f"column '{name}'")
        if chosen is not None:
            return chosen
    return RANDOM
