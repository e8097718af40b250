"""A long submission whose ids pack the (test entity, class) pair into one number: the sample's
`Id` is `rec_id * 100 + class_id`, one row per test recording and class (a bird-song challenge's
`Id,Probability`). It is a lookup table (lookup_table.py) computed instead of read: each id names
the pair (id // M, id % M).

Found by structure alone: every sample id a whole number, and a power of ten M (the smallest one
that works, larger than the number of classes) such that the quotients are exactly the keys of the
rows to predict in some table and every quotient appears with the same remainders (the classes).
The rows to predict are those of a table whose key holds the quotients and whose other columns are
blank on exactly those rows: one file holding train and test with blank answers, the blank columns
the classes (`labels_3` is class 3, by its trailing number; else by order when they are as many).
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from setup_pipeline.perception.lookup_table import LookupTable
from setup_pipeline.perception.tables import MATCH, Logical, is_unique, overlap

_MOST_DIGITS = 6  # M up to 10**6: more classes than that are no classes
_KEY_COLUMNS = 3  # a table's key among its first columns: a wide table's every column is not listed
_TRAILING = re.compile(r"(\d+)$")


def _whole_numbers(cells: pd.Series) -> np.ndarray | None:
    text = cells.astype(str).str.strip()
    digits = r"\d{1,15}"
    if text.empty or not text.head(100).str.fullmatch(digits).all() or not text.str.fullmatch(digits).all():
        return None
    return text.astype(np.int64).to_numpy()


def unpack(ids: np.ndarray, modulus: int) -> tuple[np.ndarray, np.ndarray]:
    """(entity, class) of each packed id."""
    return ids // modulus, ids % modulus


def _moduli(ids: np.ndarray) -> list[int]:
    """The powers of ten that split the ids into a full grid of entities by classes, smallest first
    (rec_id * 100 + class with 5 classes is a grid by 10 too, of entities rec_id * 10)."""
    found = []
    for digits in range(1, _MOST_DIGITS + 1):
        modulus = 10 ** digits
        entities, classes = unpack(ids, modulus)
        n_entities, n_classes = len(np.unique(entities)), len(np.unique(classes))
        if n_classes >= 2 and n_entities >= 2 and len(np.unique(ids)) == len(ids) == n_entities * n_classes:
            found.append(modulus)
    return found


def _class_columns(columns: list[str], classes: list[int]) -> dict[str, str]:
    """Each class (as text) -> its column: by the columns' trailing numbers, else by order."""
    numbered = {int(m.group(1)): c for c in columns if (m := _TRAILING.search(c))}
    if len(numbered) == len(columns) and set(numbered) <= set(classes):
        return {str(k): numbered[k] for k in classes if k in numbered}
    if len(columns) == len(classes):
        return {str(k): c for k, c in zip(classes, columns)}
    return {}


def _blank_rows(table: Logical, key: str, entities: set[str]) -> list[str]:
    """The columns blank on exactly the rows whose key is one of `entities`, and holding two values
    or more on the others (a class no training row has is no target: the submission predicts 0)."""
    rows = table.frame[key].astype(str).str.strip().isin(entities).to_numpy()
    if not rows.any() or rows.all():
        return []
    found = []
    for column in table.columns:
        if column == key:
            continue
        cells = table.frame[column].astype(str).str.strip()
        blank = (cells == "").to_numpy()
        if blank[rows].all() and not blank[~rows].any() and cells[~rows].nunique() > 1:
            found.append(column)
    return found


def find_packed(sample: Logical, key: str, tables: list[Logical]) -> tuple[LookupTable, Logical] | None:
    """The packed ids of the sample's `key` and the table holding train and test rows, if any. Only
    a sample of an id and one placeholder column is looked at (this runs on every sample candidate)."""
    if len(sample.columns) != 2 or sample.frame[sample.columns[1]].astype(str).str.strip().nunique() > 1:
        return None
    ids = _whole_numbers(sample.frame[key])
    for modulus in _moduli(ids) if ids is not None else []:
        entities, remainders = unpack(ids, modulus)
        wanted = {str(e) for e in np.unique(entities)}
        classes = sorted(int(c) for c in np.unique(remainders))
        for table in tables:
            for column in table.columns[:_KEY_COLUMNS]:
                if not is_unique(table.frame, column) or overlap(wanted, table.values(column)) < MATCH:
                    continue
                mapped = _class_columns(_blank_rows(table, column, wanted), classes)
                if mapped:
                    spec = LookupTable(file=sample.files[0], key=key, entity=column, name="", test_file=table.files[0],
                                       test_key=column, train_file=table.files[0], targets=list(mapped.values()),
                                       packed=modulus, classes=mapped,
                                       unseen=[str(k) for k in classes if str(k) not in mapped])
                    return spec, table
    return None
