"""The tabular block is encoded once per distinct value and spread over the rows: each cell must
get exactly what encoding that cell alone gives (hand-computed here, row by row)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from solve_pipeline.base.dataset import CATEGORY, DATE_PART, FREQUENCY, NUMERIC
from solve_pipeline.tables.tabular_features import tabular_columns


def _cell(value: object) -> str | None:
    return value.strip() if isinstance(value, str) else None  # pandas reads a blank as NaN


def _frame(repeat: int = 3) -> pd.DataFrame:
    n = 25 * repeat
    # Compound codes (deck/number/side) with stray spaces and gaps; more than 20 distinct values.
    cabins = [None if i % 9 == 4 else f"{' ' if i % 4 == 1 else ''}{'ABC'[i % 3]}/{i % 11}/{'PS'[i % 2]}" for i in range(n)]
    return pd.DataFrame({
        "amount": [" 1.5", "2", None, "3e2", "-4"] * 5 * repeat,
        "flag": ["TRUE", "false", "True", None, "FALSE"] * 5 * repeat,
        "colour": ["red", " red", "blue ", None, "green"] * 5 * repeat,
        "cabin": cabins,
        "when": ["2021-01-02", "2021-01-02 10:00", None, "2022-03-04", "2021-12-31"] * 5 * repeat,
    })


def test_every_cell_gets_its_own_encoding() -> None:
    frame = _frame()
    columns, kinds = tabular_columns(frame)
    # Numbers: each cell parsed on its own; missing stays missing.
    expected = [float(v) if _cell(v) is not None else np.nan for v in frame["amount"]]
    assert kinds["amount"] == NUMERIC and np.array_equal(columns["amount"].to_numpy(), expected, equal_nan=True)
    # Spreadsheet booleans, whatever their case.
    flags = [{"true": 1.0, "false": 0.0}[v.lower()] if _cell(v) else np.nan for v in frame["flag"]]
    assert np.array_equal(columns["flag"].to_numpy(), flags, equal_nan=True)
    # Categories: stripped values, codes in sorted order of the distinct stripped values.
    stripped = [_cell(v) for v in frame["colour"]]
    levels = sorted({v for v in stripped if v is not None})
    codes = [float(levels.index(v)) if v is not None else np.nan for v in stripped]
    assert kinds["colour"] == CATEGORY and np.array_equal(columns["colour"].to_numpy(), codes, equal_nan=True)
    # Dates: each cell parsed on its own ("mixed" formats).
    days = pd.to_datetime(pd.Series(frame["when"], dtype="string"), format="mixed", utc=True)
    assert kinds["when__year"] == DATE_PART
    assert np.array_equal(columns["when__year"].to_numpy(), days.dt.year.astype(float).to_numpy(), equal_nan=True)


def test_compound_codes_split_cell_by_cell_with_frequencies() -> None:
    frame = _frame(repeat=2)
    columns, kinds = tabular_columns(frame)
    cells = [_cell(v) for v in frame["cabin"]]
    counts = pd.Series(cells).value_counts()
    freq = [counts[v] / len(cells) if v is not None else np.nan for v in cells]
    assert kinds["cabin__freq"] == FREQUENCY and np.allclose(columns["cabin__freq"].to_numpy(), freq, equal_nan=True)
    numbers = [float(v.split("/")[1]) if v else np.nan for v in cells]
    assert kinds["cabin__part1"] == NUMERIC and np.array_equal(columns["cabin__part1"].to_numpy(), numbers, equal_nan=True)
    decks = [v.split("/")[0] for v in cells if v]
    deck_levels = sorted(set(decks))
    expected = [float(deck_levels.index(v.split("/")[0])) if v else np.nan for v in cells]
    assert kinds["cabin__part0"] == CATEGORY and np.array_equal(columns["cabin__part0"].to_numpy(), expected, equal_nan=True)
