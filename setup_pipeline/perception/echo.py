"""The submission columns that only repeat a test column (echoed, not predicted)."""

from __future__ import annotations

from setup_pipeline.perception.tables import Logical, match_column, same_cells


def echoed_by_sample(sample: Logical, test: Logical, key: str, test_key: str | None) -> dict[str, str]:
    """Sample columns that repeat a test column (after matching rows): submission column -> test column."""
    if test_key is not None:
        left = sample.frame.assign(__k=sample.frame[key].astype(str).str.strip())
        right = test.frame.assign(__k=test.frame[test_key].astype(str).str.strip()).drop_duplicates("__k")
        aligned = left[["__k"]].merge(right, on="__k", how="left")
    else:
        aligned = test.frame if len(test.frame) == len(sample.frame) else None
    echo: dict[str, str] = {}
    if aligned is None:
        return echo
    for column in sample.columns:
        if column == key:
            continue
        source = match_column(test.columns, column)
        if source is None:
            continue
        mine = sample.frame[column]
        theirs = aligned[source].fillna("")
        if len(mine) and same_cells(mine, theirs).mean() >= 0.95:
            echo[column] = source
    return echo


def echoed_by_example(header: list[str], key: str | None, test: Logical) -> dict[str, str]:
    """Without a sample, the example's columns that are test inputs: submission column -> test column."""
    return {c: found for c in header if c not in (key, "...") and (found := match_column(test.columns, c))}
