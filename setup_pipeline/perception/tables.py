"""Tables as perception compares them: logical tables made of part files, and the cell-level
tests the role decisions rest on (shared keys, blank answers, repeated columns)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property
from pathlib import PurePosixPath

import numpy as np
import pandas as pd

from setup_pipeline.perception.catalogue import Catalogue

MATCH = 0.9  # share of one key's values found in the other's to call them the same key


@dataclass
class Logical:
    """A table made of one file or of several parts with the same columns (`train_1`, `train_2`)."""

    files: list[str]
    frame: pd.DataFrame

    @property
    def name(self) -> str:
        return self.files[0].lower()

    # Cached: the frame is never replaced, and listing 20,000 columns on every use (in loops
    # over columns) made a wide table's perception quadratic.
    @cached_property
    def columns(self) -> list[str]:
        return list(self.frame.columns)

    @cached_property
    def column_set(self) -> frozenset[str]:
        """For membership tests (`in columns` is a scan)."""
        return frozenset(self.frame.columns)

    def values(self, column: str) -> set[str]:
        cells = self.frame[column].astype(str).str.strip()
        # Distinct first, then one list: iterating an Arrow-backed column cell by cell into a set
        # cost seconds per column of a million rows.
        return set(cells[cells != ""].unique().tolist())

    def shows(self, words: tuple[str, ...]) -> bool:
        stem = PurePosixPath(self.name).name
        return any(w in stem for w in words)



def family(path: str) -> str:
    """Part files share a family: digits removed, and `part`/`chunk` words with them."""
    stem = re.sub(r"\.(csv|tsv|txt|json|jsonl|parquet|xlsx|gz|zip)$", "", path.lower())
    stem = re.sub(r"\.(csv|tsv|txt|json|jsonl|parquet)$", "", stem)
    return re.sub(r"[-_ ]?(part|chunk|shard|batch)?[-_ ]?\d+", "#", stem)


def group_parts(catalogue: Catalogue) -> list[Logical]:
    groups: dict[tuple, list] = {}
    for table in catalogue.tables:
        key = (tuple(table.columns), family(table.path.as_posix()))
        groups.setdefault(key, []).append(table)
    out = []
    for members in groups.values():
        members.sort(key=lambda t: [int(n) if n.isdigit() else n for n in re.split(r"(\d+)", t.path.as_posix())])
        frame = pd.concat([m.frame for m in members], ignore_index=True) if len(members) > 1 else members[0].frame
        out.append(Logical([m.path.as_posix() for m in members], frame))
    return out


def overlap(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a) if a else 0.0


def keys_agree(name: str, other_name: str, share: float) -> bool:
    """Two columns hold the same key: most values shared under one name, all of them under two
    (a feature counting 0..n can otherwise pass for row numbers 1..n)."""
    return share >= (MATCH if name.lower() == other_name.lower() else 1.0)


def is_unique(frame: pd.DataFrame, column: str) -> bool:
    cells = frame[column].astype(str).str.strip()
    return bool(len(cells)) and cells.is_unique and not (cells == "").any()


def is_constant(frame: pd.DataFrame, column: str) -> bool:
    return frame[column].astype(str).str.strip().nunique() <= 1


def match_column(columns: list[str], name: str) -> str | None:
    if name in columns:
        return name
    folded = [c for c in columns if c.lower() == name.lower()]
    return folded[0] if len(folded) == 1 else None


def blank_for(table: Logical, key: str, keys: set[str], column: str) -> bool:
    """True when `column` is blank on the rows of `table` whose key is one of `keys` (or on some rows, without keys)."""
    cells = table.frame[column].astype(str).str.strip()
    if keys:
        rows = table.frame[key].astype(str).str.strip().isin(keys)
        return bool(rows.any()) and bool((cells[rows] == "").all())
    return bool((cells == "").any())


def agrees(sample: Logical, key: str, table: Logical, table_key: str, column: str) -> bool:
    """True when the sample's `column` repeats the table's on the rows their keys match."""
    mine = sample.frame.assign(__k=sample.frame[key].astype(str).str.strip())
    theirs = table.frame.assign(__k=table.frame[table_key].astype(str).str.strip()).drop_duplicates("__k")
    aligned = mine[["__k", column]].merge(theirs[["__k", column]], on="__k", how="inner", suffixes=("", "__t"))
    if aligned.empty:
        return False
    return bool(same_cells(aligned[column], aligned[column + "__t"]).mean() >= 0.95)


def same_cells(a: pd.Series, b: pd.Series) -> np.ndarray:
    """Cell by cell equality of two text columns; numbers compare by value ("92" is "92.0")."""
    left, right = a.astype(str).str.strip().to_numpy(), b.astype(str).str.strip().to_numpy()
    same = left == right
    x = pd.to_numeric(pd.Series(left), errors="coerce").to_numpy()
    y = pd.to_numeric(pd.Series(right), errors="coerce").to_numpy()
    close = np.isclose(x, y, rtol=1e-9, atol=0.0, equal_nan=False)
    return same | close


