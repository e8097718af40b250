"""Keys written as several columns joined: a submission's `id` of "<sentence_id>_<token_id>" names a
row of a table that holds `sentence_id` and `token_id` apart (token normalisation, per-item
forecasts keyed "<store>_<date>").

Found by content: a unique column of one table whose every value splits at one separator into the
same number of parts, each part the value of one column of another table, and the parts joined
again naming (nearly) every row there. Every table holding those columns then gets the key as a
column of its own, in perception and in the generated map code alike (`ComposedKey.compose`).
"""

from __future__ import annotations

import pandas as pd
from pydantic import BaseModel

from setup_pipeline.perception.tables import MATCH, Logical, is_unique, overlap

_SEPARATORS = ("_", "-", ":", "|", "/", " ")
_PROBE = 2000  # key values a decision looks at
_MAX_PARTS = 3
_MAX_COLUMNS = 200  # a table this wide holds features, not the parts of a key


class ComposedKey(BaseModel):
    column: str  # the key's name, as the table naming it calls it
    parts: list[str]  # the columns joined, in order
    separator: str

    def compose(self, frame: pd.DataFrame) -> pd.Series:
        """The key of every row (blank where a part is blank)."""
        cells = [frame[c].astype(str).str.strip() for c in self.parts]
        key = cells[0]
        for part in cells[1:]:
            key = key + self.separator + part
        blank = pd.concat([c == "" for c in cells], axis=1).any(axis=1)
        return key.where(~blank, "")

    def describe(self) -> str:
        return f"{self.column!r} is {' and '.join(map(repr, self.parts))} joined by {self.separator!r}"


def _split_values(values: list[str]) -> tuple[str, list[list[str]]] | None:
    """The separator splitting every value into the same number (2..3) of non-blank parts."""
    for separator in _SEPARATORS:
        pieces = [v.split(separator) for v in values]
        counts = {len(p) for p in pieces}
        if len(counts) == 1 and 2 <= counts.pop() <= _MAX_PARTS and all(all(x for x in p) for p in pieces):
            return separator, pieces
    return None


def _composition(key: str, values: list[str], other: Logical) -> ComposedKey | None:
    """How `other`'s columns compose the key's `values`, if they do."""
    found = _split_values(values)
    if found is None or key in other.column_set or len(other.columns) > _MAX_COLUMNS:
        return None
    separator, pieces = found
    parts = []
    for i in range(len(pieces[0])):
        wanted = {p[i] for p in pieces}
        fits = [c for c in other.columns if c not in parts and overlap(wanted, other.values(c)) >= MATCH]
        if not fits:
            return None
        parts.append(fits[0])
    composed = ComposedKey(column=key, parts=parts, separator=separator)
    rows = composed.compose(other.frame)
    if overlap(set(values), set(rows.tolist())) < MATCH or not is_unique(other.frame.assign(__k=rows), "__k"):
        return None
    return composed


def find_composed_keys(tables: list[Logical]) -> tuple[list[Logical], list[ComposedKey], list[str]]:
    """The tables with every composed key added as a column, the keys found and evidence lines."""
    found: list[ComposedKey] = []
    for table in tables:
        for column in table.columns[:1]:  # a submission's key is its first column
            if not is_unique(table.frame, column):
                continue
            values = table.frame[column].astype(str).str.strip().head(_PROBE).tolist()
            # The smaller tables first: the test table is usually the one, and a training table of
            # ten million tokens is costly to list.
            for other in sorted((t for t in tables if t is not table), key=lambda t: len(t.frame)):
                composed = _composition(column, values, other)
                if composed is not None:
                    found.append(composed)
                    break
    if not found:
        return tables, [], []
    out = []
    for table in tables:
        keys = [k for k in found if set(k.parts) <= table.column_set and k.column not in table.column_set]
        frame = table.frame
        for key in keys:
            frame = frame.assign(**{key.column: key.compose(frame).to_numpy()})
        out.append(Logical(table.files, frame) if keys else table)
    evidence = [f"composed key: {k.describe()} (the submission's keys are those columns' values joined)" for k in found]
    return out, found, evidence


def composed_for(frame_columns: list[str], keys: list[ComposedKey]) -> ComposedKey | None:
    """The composed key a table of these columns gets (the first that applies)."""
    return next((k for k in keys if set(k.parts) <= set(frame_columns) and k.column not in frame_columns), None)
