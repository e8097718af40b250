"""What the role decisions ask of the tables, cached: a column's values, the columns that may
hold some values, the key two tables share, a column counting rows, a column of image names or of
class labels.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from agentk.core.metrics import normalise_labels
from setup_pipeline.perception.catalogue import Catalogue
from setup_pipeline.perception.column_profile import ColumnProfile, arrow_text, profiles_of
from setup_pipeline.perception.tables import MATCH, Logical, blank_for, group_parts, keys_agree, overlap

# Wider tables look for keys in one vectorised pass (columns_with).
WIDE_COLUMNS = 1000
# A key's first rows are distinct and filled: a repeat there settles that a column is none.
_HEAD_ROWS = 1000
# Values looked up one by one before a column is hashed whole, where every value must be found.
_PROBES = 3


def _spelled(cells: pa.Array) -> pa.Array:
    """Stripped cells as keys are spelled (agentk.core.maps.id_text): a whole number saved through
    floats (`892.0`) meets its digits (`892`) in the sample or another table."""
    return pc.replace_substring_regex(cells, pattern=r"^(-?\d+)\.0+$", replacement=r"\1")


class TableIndex:
    """The catalogue's tables (parts grouped) with lookups that remember what they computed."""

    def __init__(self, catalogue: Catalogue) -> None:
        self.catalogue = catalogue
        self.tables = group_parts(catalogue)
        self._value_cache: dict[tuple[int, str], set[str]] = {}
        self._repeating_cache: dict[int, set[str]] = {}
        self._distinct_cache: dict[tuple[int, str], pa.Array] = {}
        self._profile_cache: dict[tuple[int, str], tuple[int, bool]] = {}
        self._profiles_cache: dict[int, dict[str, ColumnProfile]] = {}
        self._text_cache: dict[tuple[int, str], pa.Array | pa.ChunkedArray] = {}
        # Per-row files, images or sound clips: a table whose key names them lists the examples.
        media = catalogue.images + catalogue.audio
        self.image_names = {p.stem for p in media} | {p.name for p in media}
        per_folder: dict = {}
        for p in media:
            per_folder[p.parent] = per_folder.get(p.parent, 0) + 1
        self.image_names |= {d.name for d, n in per_folder.items() if n <= 3}  # one folder per image

    def image_key(self, table: Logical) -> str | None:
        """The first column of `table` whose values name image files (with or without extension),
        else, for a table as long as an array of stacked pictures, its first unique column: its
        rows are the pictures, in order."""
        if self.image_names:
            for column in table.columns:
                if self.is_unique(table, column) and overlap(self.values(table, column), self.image_names) >= MATCH:
                    return column
        if self.beside_stack(table):
            return next((c for c in table.columns if self.is_unique(table, c)), None)
        return None

    def beside_stack(self, table: Logical) -> bool:
        """Whether an array of stacked pictures has one picture per row of `table`."""
        return any(stack.count == len(table.frame) for stack in self.catalogue.stacks)

    def columns_with(self, table: Logical, values: set[str], least: float = 0) -> list[str]:
        """The columns of `table` that may share values with `values`: all of a table of usual
        width; of a very wide one only those holding one of them as written, found in one pass
        over the table rather than a set of values per column (20,000 columns took minutes), among
        those with at least `least` distinct cells (known from the table's one profile)."""
        if len(table.columns) <= WIDE_COLUMNS:
            return table.columns
        profiles = self._profiles(table)
        # One Arrow lookup per column against the values as written: no set of values per column,
        # no copy of the frame's cells into Python objects (both took minutes at 20,000 columns).
        wanted = pa.array(sorted(values), type=pa.large_string())
        return [name for name in table.columns if profiles[name].distinct >= least
                and pc.any(pc.is_in(self._text(table, name), value_set=wanted)).as_py()]

    def _text(self, table: Logical, column: str) -> pa.Array | pa.ChunkedArray:
        """A column's cells as written, in Arrow, made once: a wide table's columns are asked again."""
        key = (id(table), column)
        if key not in self._text_cache:
            self._text_cache[key] = arrow_text(table.frame[column])
        return self._text_cache[key]

    def _profiles(self, table: Logical) -> dict[str, ColumnProfile]:
        """Every column's profile (column_profile.py), computed once per table."""
        key = id(table)
        if key not in self._profiles_cache:
            # Each column's Arrow text is kept for the lookups that follow: one pass over the frame.
            texts = {str(name): arrow_text(column) for name, column in table.frame.items()}
            self._profiles_cache[key] = profiles_of(texts)
            self._text_cache.update({(key, name): cells for name, cells in texts.items()})
        return self._profiles_cache[key]

    def _repeating(self, table: Logical) -> set[str]:
        """The columns of a wide table holding some cell twice as written (so twice stripped too,
        hence no key), settled by one count of distinct cells per column (column_profile) instead
        of a profile of stripped cells per column."""
        key = id(table)
        if key not in self._repeating_cache:
            rows = len(table.frame)
            self._repeating_cache[key] = {c for c, p in self._profiles(table).items() if p.distinct < rows}
        return self._repeating_cache[key]

    def values(self, table: Logical, column: str) -> set[str]:
        key = (id(table), column)
        if key not in self._value_cache:
            self._value_cache[key] = table.values(column)
        return self._value_cache[key]

    # ---- counted by Arrow: a million-row column is hashed once, never turned into Python objects

    def _profile(self, table: Logical, column: str) -> tuple[int, bool]:
        """The column's count of distinct stripped cells (nunique) and whether it is a key
        (tables.is_unique), from one pass."""
        key = (id(table), column)
        if key not in self._profile_cache:
            cells = table.frame[column].astype(str).str.strip()
            uniq = cells.unique()
            unique = bool(len(cells)) and len(uniq) == len(cells) and not (cells == "").any()
            self._profile_cache[key] = (len(uniq) - int(pd.isna(uniq).any()), unique)
        return self._profile_cache[key]

    def is_unique(self, table: Logical, column: str) -> bool:
        key = (id(table), column)
        if len(table.columns) > WIDE_COLUMNS and key not in self._profile_cache and column in self._repeating(table):
            return False
        for rows in (_HEAD_ROWS, len(table.frame) // 8):
            if key in self._profile_cache or rows < _HEAD_ROWS or len(table.frame) <= rows:
                break
            head = table.frame[column].head(rows).astype(str).str.strip()
            if not head.is_unique or (head == "").any():
                return False  # a repeat or a blank among the first rows: no key, as the whole column says
        return self._profile(table, column)[1]

    def distinct(self, table: Logical, column: str) -> pa.Array:
        """`values` as an Arrow array of key spellings (`_spelled`), compared by Arrow's `is_in`
        (pandas' `isin` on text loops in Python)."""
        key = (id(table), column)
        if key not in self._distinct_cache:
            cells = table.frame[column].astype(str).str.strip()
            self._distinct_cache[key] = pc.unique(_spelled(pa.array(cells[cells != ""], type=pa.large_string())))
        return self._distinct_cache[key]

    def stripped_in(self, table: Logical, column: str, other: Logical, theirs: str) -> np.ndarray:
        """Per row of `table`, whether its stripped `column` cell is one of values(other, theirs)."""
        cells = _spelled(pa.array(table.frame[column].astype(str).str.strip(), type=pa.large_string()))
        return pc.is_in(cells, value_set=self.distinct(other, theirs)).to_numpy(zero_copy_only=False)

    def share(self, table: Logical, column: str, other: Logical, theirs: str) -> float:
        """overlap(values(table, column), values(other, theirs))."""
        mine = self.distinct(table, column)
        if not len(mine):
            return 0.0
        return pc.sum(pc.is_in(mine, value_set=self.distinct(other, theirs))).as_py() / len(mine)

    def can_agree(self, table: Logical, column: str, other: Logical, theirs: str) -> bool:
        """False when keys_agree(column, theirs, share) cannot hold, known without comparing the
        values: `theirs` has fewer rows or distinct cells than the share asks for, or, where every
        value must be found (two names), the first values are not all there."""
        mine = self.distinct(table, column)
        need = MATCH if column.lower() == theirs.lower() else 1.0
        if not len(mine) or len(other.frame) / len(mine) < need:
            return False  # fewer rows than the share asks for distinct values
        if len(other.columns) > WIDE_COLUMNS and self._profiles(other)[theirs].distinct < need * len(mine):
            return False  # fewer distinct cells as written, hence stripped, than the share asks for
        if need == 1.0 and (id(other), theirs) not in self._profile_cache:
            probes = mine[:_PROBES].to_pylist()
            written = self._text(other, theirs)
            # A cell that reads as a value holds it as written (stripping and spelling cut only
            # around it): a column without each value written somewhere holds none of them.
            if not all(pc.any(pc.match_substring(written, value)).as_py() for value in probes):
                return False
            stripped = _spelled(pc.utf8_trim_whitespace(written))  # as pandas' str.strip() strips Arrow text
            if not all(pc.any(pc.equal(stripped, value)).as_py() for value in probes):
                return False
        return self._profile(other, theirs)[0] / len(mine) >= need

    def key_match(self, table: Logical, others: list[Logical]) -> tuple[str, Logical, str, float] | None:
        """The column of `table` whose values best match a column of another table."""
        best = None
        for column in table.columns:
            if not self.is_unique(table, column):
                continue
            mine = self.distinct(table, column)
            for other in others:
                wide = len(other.columns) > WIDE_COLUMNS
                for theirs in self.columns_with(other, self.values(table, column), 0.5 * len(mine)) if wide else other.columns:
                    if not self.can_agree(table, column, other, theirs):
                        continue
                    if self._profile(other, theirs)[0] < 0.5 * len(mine):
                        continue
                    share = self.share(table, column, other, theirs)
                    if keys_agree(column, theirs, share) and (best is None or share > best[3]):
                        best = (column, other, theirs, share)
            if best is not None:
                return best  # the earliest matching column is the key
        return best

    def row_numbers(self, table: Logical, others: list[Logical]) -> str | None:
        """A column counting the rows (from 0 or 1) of a table as long as another: rows matched by order."""
        n = len(table.frame)
        if not any(len(o.frame) == n for o in others):
            return None
        for column in table.columns:
            cells = table.frame[column].astype(str).str.strip()
            for start in (0, 1):
                if cells.tolist() == [str(i) for i in range(start, start + n)]:
                    return column
        return None

    def labels_every_row(self, table: Logical, answers: list[str]) -> bool:
        """A column of `table` labels every row with exactly the submission's class columns: the
        training answers (labels.csv beside image folders), not rows to predict. Exactly: a feature
        counting months (1..12) or an id counting rows also holds the classes 1..10."""
        return len(answers) >= 2 and any(self.labels(table, c, answers, exact=True) and not blank_for(table, "", set(), c)
                                         for c in table.columns)

    def labels(self, table: Logical, column: str, names: list[str], exact: bool = False) -> bool:
        """Every one of `names` is a value of the column (`exact`: and no other value), spelled
        alike: class "5" is "5.0" in a column of whole numbers with gaps, written as floats."""
        values = self.values(table, column)
        if not names or "..." in names or len(values) > 1000:
            return False  # many distinct values: no label column
        mine, theirs = set(normalise_labels(names)), set(normalise_labels(list(values)))
        return mine == theirs if exact else mine <= theirs

