"""Forecasting, recognised from structure: a date column, series keys, and test dates after train's.

Opening Rossmann or store-item demand, a forecaster sees that train and test share a date column
and a few key columns (a store, an item) that, with the date, name each row once; that every test
date comes after the last training date; and that a holiday table beside them lists dates. Nothing
here reads a column's name: the date is whichever column parses as dates, the keys the smallest set
of the other shared columns that makes (keys, date) unique, and an event table any other table whose
dates fall inside the data's period. The solver reads the result (plan.json's `facts.series`) to
build lags that respect the horizon (solve_pipeline/inputs/forecast_features.py).
"""

from __future__ import annotations

from itertools import combinations
from typing import Sequence

import numpy as np
import pandas as pd

from agentk.core.series import DAY, EventTable, SeriesShape, parse_dates

MAX_KEY_COLUMNS = 3
MAX_KEY_CANDIDATES = 8
DATES_CHECKED = 30  # uniqueness of (keys, date) is checked on the rows of this many dates
MIN_DATES = 20  # distinct training dates a series needs to be one
MIN_SEEN_SERIES = 0.5  # share of test rows whose series has training rows
MAX_LATE_SLACK = 0.01  # share of test rows allowed on or before the last training date


def _can_key(values: pd.Series, per_date: float) -> bool:
    """A key has a few levels: at most about one per series (rows per date; twice that, as series
    with gaps, such as stores closed for months, leave fewer rows on some dates); and a number is a
    key only when whole (a price or a temperature can differ on every row of a date by chance)."""
    levels = values.nunique()
    if not 2 <= levels <= max(2 * per_date, 2):
        return False
    numbers = pd.to_numeric(pd.Series(values.unique()), errors="coerce")
    return bool(numbers.isna().any() or (numbers == numbers.round()).all())


def _unique_per_date(frame: pd.DataFrame, dates: pd.Series, keys: Sequence[str]) -> bool:
    rows = frame[list(keys)].copy()
    rows["__date"] = dates.to_numpy()
    return not rows.duplicated().any()


def _find_keys(train: pd.DataFrame, dates: pd.Series, candidates: list[str]) -> list[str] | None:
    """The smallest set of candidate columns that names each row once per date (checked on the
    rows of a spread of dates: duplicates can only sit within one date)."""
    distinct = np.sort(dates.dropna().unique())
    picked = distinct[np.linspace(0, len(distinct) - 1, min(DATES_CHECKED, len(distinct))).astype(int)]
    rows = dates.isin(picked).to_numpy()
    frame, when = train.loc[rows], dates[rows]
    for size in range(0, MAX_KEY_COLUMNS + 1):
        # Fewest distinct combinations first: a key set that names rows with fewer series is the
        # structure; a covariate added to it only splits them further.
        found = [(int(frame[list(c)].drop_duplicates().shape[0]), list(c)) for c in combinations(candidates, size)
                 if _unique_per_date(frame, when, c)]
        if found:
            return min(found)[1]
    return None


def _events(tables: Sequence[tuple[str, pd.DataFrame]], start: pd.Timestamp, end: pd.Timestamp,
            n_dates: int) -> list[EventTable]:
    """Side tables whose dates mostly lie in the data's period and list far fewer dates than the
    period has: dated events, not a second daily table (those are joined by relations.py)."""
    found = []
    for file, frame in tables:
        for column in frame.columns:
            stamps = parse_dates(frame[column])
            if stamps is None or stamps.isna().mean() > 0.05:
                continue
            listed = stamps.dropna().dt.normalize().unique()
            inside = float(np.mean((listed >= start) & (listed <= end))) if len(listed) else 0.0
            if len(listed) >= 2 and inside >= 0.5 and len(listed) <= 0.5 * n_dates:
                found.append(EventTable(file=file, date_column=str(column), dates=len(listed)))
                break
    return found


def find_series(train: pd.DataFrame, test: pd.DataFrame, columns: Sequence[str],
                side_tables: Sequence[tuple[str, pd.DataFrame]] = ()) -> SeriesShape | None:
    """The forecasting structure of train and test (cells as text), or None when there is none:
    no date column whose test values all come after the training period, or no series keys."""
    for date_column in columns:
        train_dates = parse_dates(train[date_column])
        if train_dates is None or train_dates.isna().mean() > 0.01:
            continue
        test_dates = parse_dates(test[date_column])
        if test_dates is None or test_dates.isna().mean() > 0.01:
            continue
        end = train_dates.max()
        if (test_dates <= end).mean() > MAX_LATE_SLACK:
            continue
        distinct = np.sort(train_dates.dropna().unique())
        if len(distinct) < MIN_DATES:
            continue
        step = pd.Timedelta(pd.Series(np.diff(distinct)).mode().iloc[0])
        per_date = len(train) / len(distinct)
        candidates = [c for c in columns if c != date_column and _can_key(train[c], per_date)][:MAX_KEY_CANDIDATES]
        keys = _find_keys(train, train_dates, candidates)
        if keys is None:
            continue
        train_series = pd.MultiIndex.from_frame(train[keys]) if keys else None
        n_series = 1 if train_series is None else int(train_series.nunique())
        if keys:
            seen = pd.MultiIndex.from_frame(test[keys]).isin(train_series.unique()).mean()
            if seen < MIN_SEEN_SERIES or len(train) / n_series < MIN_DATES:
                continue
        start = min(train_dates.min(), test_dates.min())
        events = _events(side_tables, start, test_dates.max(), len(distinct))
        return SeriesShape(date_column=str(date_column), keys=[str(k) for k in keys], n_series=n_series,
                           step_days=round(step / DAY, 6), horizon_days=round((test_dates.max() - end) / DAY, 6),
                           train_end=end.isoformat(), events=events)
    return None
