"""A one-to-many side table summarised to one row per key, as a Kaggle expert first aggregates a
customer's past loans or a store's transactions: how many rows, the mean, least and largest of each
number, how many distinct values each word column takes, and the most recent value of each column
where the table has a time. Cells come back as text ("" when missing), like every assembled frame.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from setup_pipeline.perception.keys import cells

_NUMERIC_SHARE = 0.95  # a column this numeric is a number column (a few "n/a" aside)


def _numbers(column: pd.Series) -> pd.Series | None:
    """The column as numbers, or None when it holds words."""
    text = cells(column)
    present = text != ""
    numbers = pd.to_numeric(text.where(present), errors="coerce")
    if not present.any() or numbers[present].notna().mean() < _NUMERIC_SHARE:
        return None
    return numbers


def _as_text(values: pd.Series) -> pd.Series:
    return values.map(lambda v: "" if pd.isna(v) else repr(float(v)))


def summarise(side: pd.DataFrame, columns: list[str], prefix: str) -> pd.DataFrame:
    """`side` holds `__key__`, the `columns` and optionally `__time__` (sortable text); the result
    holds `__key__` and the summary columns, named `prefix + column + "__" + statistic`."""
    keys = side["__key__"]
    grouped = keys.groupby(keys, sort=False)
    out = pd.DataFrame({"__key__": list(grouped.groups)})
    index = pd.Index(out["__key__"])
    out[f"{prefix}rows"] = grouped.size().reindex(index).astype(int).astype(str).to_numpy()
    blocks: dict[str, np.ndarray] = {}
    for column in columns:
        numbers = _numbers(side[column])
        if numbers is not None:
            stats = numbers.groupby(keys, sort=False).agg(["mean", "min", "max"]).reindex(index)
            for name in ("mean", "min", "max"):
                blocks[f"{prefix}{column}__{name}"] = _as_text(stats[name]).to_numpy()
        else:
            words = cells(side[column]).replace("", np.nan)
            distinct = words.groupby(keys, sort=False).nunique().reindex(index).fillna(0)
            blocks[f"{prefix}{column}__distinct"] = distinct.astype(int).astype(str).to_numpy()
    if "__time__" in side.columns:
        # The most recent row per key: a stable sort by time keeps the file's order among ties.
        ordered = side.iloc[np.argsort(side["__time__"].to_numpy(), kind="stable")]
        latest = ordered[columns].apply(lambda c: cells(c).replace("", np.nan)).groupby(ordered["__key__"], sort=False).last()
        latest = latest.reindex(index)
        for column in columns:
            blocks[f"{prefix}{column}__last"] = latest[column].fillna("").astype(str).to_numpy()
    return pd.concat([out, pd.DataFrame(blocks, index=out.index)], axis=1)
