"""A long submission mapped through a lookup table: the sample lists one row per (test entity,
target) pair, `RowId,Location`, and another file says which pair each row is, `RowId,ImageId,
FeatureName` (facial keypoints: only the coordinates listed are scored).

Found by structure alone: a table holding the sample's key column (nearly every sample key, once
each) beside a column whose values are the key of another table (the test rows, each named on
several lookup rows) and a column whose values are column names of a third table that the test
table lacks (the targets). The setup then works as for a wide submission (one row per test
entity, one column per target) and writes the long one through the lookup, for its rows only,
in the sample's order (`LookupTable`, read by the submission code codegen.py writes).
"""

from __future__ import annotations

from pydantic import BaseModel

from setup_pipeline.perception.tables import MATCH, Logical, is_unique, overlap

_MAX_NAMES = 2000  # distinct names a column of target names holds at most
_LONGEST_KEY = 200  # characters of a key cell at most
_NARROW_TRAIN = 20  # columns of a train table whose classes a lookup may name
_WIDEST = 6  # a lookup's columns at most: the key, the pair, a blank value and a note or two


class LookupTable(BaseModel):
    file: str  # relative to raw/
    key: str  # the sample's id column, as the lookup calls it
    entity: str  # the lookup column naming a test row
    name: str  # the lookup column naming a target column
    test_file: str  # the table of test rows (its first file)
    test_key: str  # its column the entity values name
    train_file: str  # the table whose columns (or one column's classes) the names are (its first file)
    # What the names are, in the lookup's order of first mention: train's target columns, or with
    # `label` the classes of that train column (each pair's value then the class's probability).
    targets: list[str]
    label: str | None = None
    # Packed ids (packed_ids.py): no lookup file, `file` is the sample and each of its ids is
    # entity * packed + class; `classes` maps each class (as text) to its target column, and a
    # class no column holds (no training row has it) is predicted 0.
    packed: int | None = None
    classes: dict[str, str] = {}
    unseen: list[str] = []  # classes of the sample's ids that no target column holds

    def describe(self, sample: str, value: str) -> str:
        if self.packed is not None:
            return (f"ids packed as entity*{self.packed}+class: each row of {sample} ({self.key!r}) is the pair "
                    f"(test row {self.key} // {self.packed} = {self.test_file}'s {self.test_key!r}, class "
                    f"{self.key} % {self.packed}), {len(self.classes)} classes read from the columns "
                    f"{', '.join(self.targets[:3])}{', ...' if len(self.targets) > 3 else ''}; each row's "
                    f"{value!r} is that row's probability of that class, in the sample's order"
                    + (f"; class(es) {', '.join(self.unseen[:5])} no training row holds: predicted 0" if self.unseen else ""))
        named = f"{len(self.targets)} columns of {self.train_file}" if self.label is None else \
            f"{len(self.targets)} classes of {self.train_file}'s {self.label!r}"
        return (f"long submission through a lookup table: each row of {sample} ({self.key!r}) is a pair "
                f"({self.entity!r} = {self.test_file}'s {self.test_key!r}, {self.name!r} = one of {named}) "
                f"listed in {self.file}; the wide predictions are written to {value!r} for the listed pairs "
                "only, in the sample's order")


def _names(table: Logical, column: str) -> list[str]:
    """The column's distinct values in order of first mention."""
    cells = table.frame[column].astype(str).str.strip()
    return [v for v in cells.unique().tolist() if v]


def find_lookup(sample: Logical, key: str, tables: list[Logical]) -> tuple[LookupTable, Logical, Logical, Logical] | None:
    """The lookup table of the sample's rows (and the lookup, test and train tables), if any."""
    keys = sample.values(key)
    for lookup in tables:
        if key not in lookup.column_set or not 3 <= len(lookup.columns) <= _WIDEST \
                or not is_unique(lookup.frame, key):
            continue
        if overlap(keys, lookup.values(key)) < MATCH:
            continue
        others = [t for t in tables if t is not lookup]
        found = _pair_columns(lookup, key, others)
        if found is not None:
            entity, test, test_key, name, train, targets, label = found
            spec = LookupTable(file=lookup.files[0], key=key, entity=entity, name=name, test_file=test.files[0],
                               test_key=test_key, train_file=train.files[0], targets=targets, label=label)
            return spec, lookup, test, train
    return None


def _pair_columns(lookup: Logical, key: str, others: list[Logical]) -> tuple | None:
    """(entity column, test table, its key, name column, train table, names, label column) of a lookup."""
    rest = [c for c in lookup.columns if c != key]
    for name in rest:
        names = _names(lookup, name)
        if not names or len(names) > _MAX_NAMES or len(names) * 2 > len(lookup.frame):
            continue
        wanted = set(names)
        for train in others:
            if len(lookup.column_set & train.column_set) > 1:
                continue  # a table sharing train's columns holds examples (a test table), no pairs
            label = None if overlap(wanted, set(train.columns)) >= MATCH else _label_of(train, wanted)
            if label is None and overlap(wanted, set(train.columns)) < MATCH:
                continue
            for entity in (c for c in rest if c != name and not is_unique(lookup.frame, c)):
                for test in (t for t in others if t is not train):
                    if (wanted if label is None else {label}) & test.column_set:
                        continue  # the targets are what test lacks
                    test_key = _key_of(test, lookup.values(entity))
                    inputs = test.column_set - {test_key}
                    # Test rows hold train's inputs (or only their key, their files named by it).
                    if test_key is not None and (not inputs or inputs & train.column_set):
                        known = set(train.columns) if label is None else train.values(label)
                        return entity, test, test_key, name, train, [n for n in names if n in known], label
    return None


def _label_of(train: Logical, wanted: set[str]) -> str | None:
    """The column of short cells whose classes (nearly) every name is. Only a narrow table is
    looked at (labels beside an input or two): listing every column of a wide one costs minutes."""
    if len(train.columns) > _NARROW_TRAIN:
        return None
    for column in train.columns:
        if train.frame[column].astype(str).str.len().head(20).max() <= _LONGEST_KEY \
                and overlap(wanted, train.values(column)) >= MATCH:
            return column
    return None


def _key_of(test: Logical, entities: set[str]) -> str | None:
    """The unique column of `test` holding (nearly) every entity the lookup names."""
    for column in test.columns:
        if test.frame[column].astype(str).str.len().head(20).max() > _LONGEST_KEY:
            continue  # pictures written as numbers, texts: no key, and costly to list
        if is_unique(test.frame, column) and overlap(entities, test.values(column)) >= MATCH:
            return column
    return None
