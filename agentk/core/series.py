"""The forecasting facts setup hands the solver (plan.json's `facts.series`), and the one way both
read a column of dates. Perception finds them (setup_pipeline/perception/series.py); the solver's
horizon-respecting features read them (solve_pipeline/inputs/forecast_features.py)."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pandas as pd
from pydantic import BaseModel, Field

DATE_SAMPLE = 500
_HEAD_CELLS = 50
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
DAY = pd.Timedelta(days=1)


class EventTable(BaseModel):
    """A side table of dated events (holidays, paydays): a row's date in it is a feature."""

    file: str  # relative to raw/
    date_column: str
    dates: int  # distinct dates listed


class SeriesShape(BaseModel):
    """Many series over time, the test their future."""

    date_column: str
    keys: list[str]  # empty: one series
    n_series: int
    step_days: float  # the usual gap between consecutive dates
    horizon_days: float  # last test date minus last training date
    train_end: str  # the last training date, ISO
    events: list[EventTable] = Field(default_factory=list)

    def describe(self) -> str:
        keys = f"keys {self.keys}" if self.keys else "one series"
        events = f"; events from {', '.join(e.file for e in self.events)}" if self.events else ""
        return (f"forecasting: {self.n_series} series, horizon {self.horizon_days:g} days "
                f"(step {self.step_days:g} days), {keys}, dated by {self.date_column!r}{events}")


def parse_dates(values: pd.Series) -> pd.Series | None:
    """The column as timestamps (timezone dropped) when nearly every present value is a date and
    not a plain number; each distinct value is parsed once."""
    if pd.api.types.is_numeric_dtype(values) or pd.api.types.is_bool_dtype(values):
        return None  # numbers (store ids, years alone) are no dates
    # The first cells settle most columns of a wide table without building a sample: mostly
    # plain numbers there, or no digit at all, and the column is no date.
    head = [str(cell).strip() for cell in values.iloc[:_HEAD_CELLS].tolist() if cell is not None and cell == cell]
    head = [cell for cell in head if cell]
    if head and (sum(bool(_NUMBER.fullmatch(c)) for c in head) > 0.5 * len(head)
                 or not any(ch.isdigit() for c in head for ch in c)):
        return None
    # A sample of distinct values decides first: a wide table's other columns cost no full pass.
    sample = pd.Series(pd.unique(values.dropna())[:DATE_SAMPLE * 2]).astype(str).str.strip()
    sample = sample[sample != ""].head(DATE_SAMPLE)
    if sample.empty or pd.to_numeric(sample, errors="coerce").notna().mean() > 0.5:
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if pd.to_datetime(sample, errors="coerce", format="mixed").notna().mean() < 0.95:
            return None
        codes, uniques = pd.factorize(values.astype("string").str.strip())
        stamps = pd.DatetimeIndex(pd.to_datetime(pd.Series(uniques), errors="coerce", format="mixed", utc=True))
    stamps = stamps.tz_localize(None)
    out = pd.Series(stamps.take(np.maximum(codes, 0)), index=values.index)
    out[codes < 0] = pd.NaT
    return out


