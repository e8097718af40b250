"""The table index counts with Arrow and skips what cannot match; its answers are those of the
plain set arithmetic it replaced, on columns whose repeats and blanks come after the first rows."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from setup_pipeline.perception.catalogue import build_catalogue
from setup_pipeline.perception.table_index import TableIndex
from setup_pipeline.perception.tables import Logical, is_unique, keys_agree, overlap

N = 20_000


def _tables(tmp_path: Path) -> TableIndex:
    rng = np.random.default_rng(0)
    ids = [str(i) for i in range(N)]
    late_repeat = ids[:-1] + ["7"]
    late_blank = ids[:-1] + [""]
    main = pd.DataFrame({"id": ids, "late_repeat": late_repeat, "late_blank": late_blank,
                         "padded": [f" {i} " for i in range(N)], "x": rng.normal(size=N).round(6).astype(str),
                         "city": rng.choice(["a", "b", "c"], N)})
    keys = pd.DataFrame({"ID": [str(i) for i in range(0, N, 2)], "row": [str(i) for i in range(N // 2)],
                         "most": [str(i) if i % 20 else "z" + str(i) for i in range(N // 2)]})
    data = tmp_path / "raw" / "data"
    data.mkdir(parents=True)
    main.to_csv(data / "main.csv", index=False)
    keys.to_csv(data / "keys.csv", index=False)
    return TableIndex(build_catalogue(tmp_path / "raw"))


def _reference_key_match(table: Logical, others: list[Logical]) -> tuple[str, Logical, str, float] | None:
    """The key match as written before Arrow counted it: sets of every column's values."""
    best = None
    for column in table.columns:
        if not is_unique(table.frame, column):
            continue
        mine = table.values(column)
        for other in others:
            for theirs in other.columns:
                if other.frame[theirs].astype(str).str.strip().nunique() < 0.5 * len(mine):
                    continue
                share = overlap(mine, other.values(theirs))
                if keys_agree(column, theirs, share) and (best is None or share > best[3]):
                    best = (column, other, theirs, share)
        if best is not None:
            return best
    return best


def test_counts_and_matches_are_the_set_arithmetic(tmp_path: Path) -> None:
    index = _tables(tmp_path)
    tables = index.tables
    for table in tables:
        others = [t for t in tables if t is not table]
        assert index.key_match(table, others) == _reference_key_match(table, others)
        for column in table.columns:
            assert index.is_unique(table, column) == is_unique(table.frame, column), column
            for other in others:
                for theirs in other.columns:
                    share = overlap(table.values(column), other.values(theirs))
                    assert index.share(table, column, other, theirs) == share
                    if keys_agree(column, theirs, share):
                        assert index.can_agree(table, column, other, theirs)
