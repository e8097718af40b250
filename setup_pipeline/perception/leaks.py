"""Joined columns that give the answer away: telling on the training rows, blank on the test rows.

A side table may hold what is being predicted for the training rows only: a customers table whose
`churned` column is filled for the customers seen in train and blank for the others, a copy of the
label kept for the rows already scored. On train rows such a column equals or nearly determines
the target, so every model leans on it and the CV shines; on test rows it is blank, and the
submission pays. A Kaggle expert spots the two together (this telling on train, this empty on
test) and leaves the column out. A telling column that test rows hold too is a good feature, and
a column blank on test that tells little is only weak: neither is touched here.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from setup_pipeline.perception.keys import cells

MAX_TEST_PRESENT = 0.5  # "most test rows have no value"
MIN_GAP = 0.3  # train rows have a value this much more often than test rows
EQUAL = 0.95  # share of train rows where the column is the target
DETERMINES = 0.98  # share of the target the column's values account for
MIN_GROUP = 3  # rows per distinct value: a column unique per row "determines" anything
_MIN_ROWS = 10
_CLASSES = 20  # a target with at most this many values is judged as classes
_NUMERIC_SHARE = 0.95


def _present(series: pd.Series) -> pd.Series:
    return cells(series) != ""


def _numbers(text: pd.Series) -> pd.Series | None:
    numbers = pd.to_numeric(text, errors="coerce")
    return numbers if numbers.notna().mean() >= _NUMERIC_SHARE else None


def _explained(column: pd.Series, target: pd.Series) -> float:
    """How much of the target the column's values account for: the share of rows in their value's
    majority class (classes), or the share of the variance between values (numbers); 0 when the
    grouping is too fine to mean anything."""
    if len(column) / max(column.nunique(), 1) < MIN_GROUP:
        return 0.0
    numbers = _numbers(target)
    if numbers is not None and target.nunique() > _CLASSES:
        spread = float(((numbers - numbers.mean()) ** 2).sum())
        within = float(((numbers - numbers.groupby(column.to_numpy()).transform("mean")) ** 2).sum())
        return 1.0 - within / spread if spread > 0 else 0.0
    majority = target.groupby(column.to_numpy()).agg(lambda v: v.value_counts().iloc[0]).sum()
    overall = target.value_counts().iloc[0]
    if overall / len(target) >= DETERMINES:  # a near-constant target is "determined" by anything
        return 0.0
    return float(majority) / len(target)


def gives_away(column: pd.Series, target: pd.Series) -> str | None:
    """How the column gives the target away on the rows holding both ("equals", "nearly
    determines"), or None."""
    both = _present(column) & _present(target)
    if both.sum() < _MIN_ROWS:
        return None
    mine, theirs = cells(column)[both], cells(target)[both]
    mine_n, theirs_n = _numbers(mine), _numbers(theirs)
    if mine_n is not None and theirs_n is not None:
        paired = mine_n.notna() & theirs_n.notna()
        a, b = mine_n[paired].to_numpy(float), theirs_n[paired].to_numpy(float)
        if np.isclose(a, b, rtol=1e-6, atol=1e-9).mean() >= EQUAL:
            return "equals"
        if len(a) >= _MIN_ROWS and a.std() > 0 and b.std() > 0 and abs(np.corrcoef(a, b)[0, 1]) >= DETERMINES:
            return "nearly determines"
    elif (mine == theirs).mean() >= EQUAL:
        return "equals"
    return "nearly determines" if _explained(mine, theirs) >= DETERMINES else None


def leaking(train: pd.DataFrame, test: pd.DataFrame, columns: list[str], targets: list[str]) -> dict[str, str]:
    """Of the joined `columns` (in the train and test frames as joined), those that give one of the
    `targets` (train columns) away on train rows while blank on most test rows: column -> why."""
    found: dict[str, str] = {}
    for column in columns:
        on_test = float(_present(test[column]).mean()) if len(test) else 0.0
        on_train = float(_present(train[column]).mean()) if len(train) else 0.0
        if on_test >= MAX_TEST_PRESENT or on_train < on_test + MIN_GAP:
            continue
        for target in targets:
            how = gives_away(train[column], train[target])
            if how:
                found[column] = (f"{how} the target {target!r} on train rows but is blank on "
                                 f"{1 - on_test:.0%} of test rows (a leak)")
                break
    return found
