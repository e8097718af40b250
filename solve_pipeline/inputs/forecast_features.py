"""Forecast features that respect the horizon: what a forecaster adds to the table when setup found
many series whose future is the test (plan.json's `facts.series`, agentk/core/series.py).

The "direct" way, without recursion: a test row `h` steps after the last training date knows the
targets up to that date (its origin) and nothing later. Every row gets the same kind of origin: the
training period is cut, backwards from its end, into windows as long as the horizon, and a row's
origin is the end of the window before its own, so a training row is `h` steps (1..horizon) past
its origin exactly as a test row is. Its features are then what was known at the origin: the last
value, the means of the last week, four weeks and a quarter, the same weekday over the last four
weeks, and a year back (52 weeks, the weekday kept); `h` itself is a feature. One global boosted
model over all series learns from them with the calendar (day of year, week) and the dated events
of a side table (a holiday, the days to the next one). These are the one place the solver's
features read the target, and only the targets before each row's origin (and the series' mean).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from agentk.core.metrics.scaled_errors import context_columns, series_history_scale
from agentk.core.readers import read_table
from agentk.core.series import SeriesShape, parse_dates
from solve_pipeline.base.dataset import CATEGORY, NUMERIC, ORDINAL_CODE, FeatureSet
from solve_pipeline.inputs.features import aligned
from solve_pipeline.tables.tabular_features import MAX_CATEGORICAL_LEVELS

PREFIX = "forecast__"
# Series x time steps held as one dense grid; beyond it (Favorita's 170,000 series) the lags are
# left to a later, sparse version and the plain table features stand alone.
MAX_GRID_CELLS = 10_000_000  # two float64 grids per target: 160 MB
SEASONS_AVERAGED = 4  # same weekday over the last four weeks: the seasonal-naive forecast
LONG_WINDOW_SEASONS = 13  # a quarter of weeks: the series' recent level
LEVEL, SERIES_MEAN = "level", "series_mean"  # the mean of the four seasons before the origin; of all training
EVENT_REACH = 30  # steps to the next / since the last event are capped here


@dataclass
class ForecastBlock:
    """The columns made, and what a report says about them."""

    columns: dict[str, np.ndarray] = field(default_factory=dict)  # name -> train + test values
    kinds: dict[str, str] = field(default_factory=dict)
    record: dict[str, Any] = field(default_factory=dict)


def level_columns(names: list[str], target: str) -> tuple[int, int] | None:
    """Where a target's recent level and its series mean sit in the tabular block, when both do."""
    try:
        return names.index(f"{PREFIX}{target}__{LEVEL}"), names.index(f"{PREFIX}{target}__{SERIES_MEAN}")
    except ValueError:
        return None


def series_shape(plan: dict[str, Any]) -> SeriesShape | None:
    found = (plan.get("facts") or {}).get("series")
    try:
        return SeriesShape.model_validate(found) if found else None
    except ValueError:
        return None


def _steps(shape: SeriesShape) -> tuple[int, int, int | None]:
    """(horizon, season, year) in time steps: the season is a week where the step divides one."""
    step = shape.step_days
    horizon = max(1, math.ceil(shape.horizon_days / step - 1e-9))
    per_week = 7 / step
    season = int(round(per_week)) if per_week >= 2 and abs(per_week - round(per_week)) < 1e-6 else 1
    year = int(round(364 / step)) if step <= 31 else None  # 52 weeks: the weekday kept
    return horizon, season, year


class _Grid:
    """The target as a dense (series, step) grid with running sums, for window means in O(1)."""

    def __init__(self, series: np.ndarray, steps: np.ndarray, y: np.ndarray, shape: tuple[int, int]) -> None:
        total = np.zeros(shape)
        count = np.zeros(shape)
        known = ~np.isnan(y)
        np.add.at(total, (series[known], steps[known]), y[known])
        np.add.at(count, (series[known], steps[known]), 1.0)
        self.sums = np.concatenate([np.zeros((shape[0], 1)), np.cumsum(total, axis=1)], axis=1)
        self.counts = np.concatenate([np.zeros((shape[0], 1)), np.cumsum(count, axis=1)], axis=1)

    def window_mean(self, series: np.ndarray, steps: np.ndarray, end_lag: np.ndarray | int, width: int) -> np.ndarray:
        """Mean of the known values in steps [t - end_lag - width + 1, t - end_lag] of each row's series
        (`end_lag` one for all rows or one per row)."""
        stop = np.clip(steps - end_lag + 1, 0, self.sums.shape[1] - 1)
        start = np.clip(steps - end_lag - width + 1, 0, self.sums.shape[1] - 1)
        n = self.counts[series, stop] - self.counts[series, start]
        total = self.sums[series, stop] - self.sums[series, start]
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(n > 0, total / np.maximum(n, 1), np.nan)

    def seasonal_mean(self, series: np.ndarray, steps: np.ndarray, lag: np.ndarray | int, season: int,
                      k: int) -> np.ndarray:
        """Mean of the values `lag`, `lag + season`, ... (k of them) steps back."""
        values = np.stack([self.window_mean(series, steps, lag + i * season, 1) for i in range(k)])
        with np.errstate(invalid="ignore"):
            present = ~np.isnan(values)
            return np.where(present.any(axis=0), np.nansum(values, axis=0) / np.maximum(present.sum(axis=0), 1), np.nan)


def _calendar(dates: pd.Series) -> dict[str, np.ndarray]:
    return {f"{PREFIX}dayofyear": dates.dt.day_of_year.to_numpy(dtype=float),
            f"{PREFIX}week": dates.dt.isocalendar().week.to_numpy(dtype=float)}


def _events(shape: SeriesShape, raw_dir: Path, days: np.ndarray) -> dict[str, np.ndarray]:
    """Per event table: the row's date is an event, and the days to the next and since the last."""
    out: dict[str, np.ndarray] = {}
    for table in shape.events:
        try:
            stamps = parse_dates(read_table(raw_dir / table.file)[table.date_column])
        except (OSError, ValueError, KeyError):
            continue
        if stamps is None:
            continue
        listed = np.unique(stamps.dropna().dt.normalize().to_numpy().astype("datetime64[D]").astype(np.int64))
        if len(listed) == 0:
            continue
        stem = Path(table.file).stem
        after = np.searchsorted(listed, days, side="left")
        following = np.where(after < len(listed), listed[np.minimum(after, len(listed) - 1)] - days, EVENT_REACH)
        before = np.searchsorted(listed, days, side="right") - 1
        previous = np.where(before >= 0, days - listed[np.maximum(before, 0)], EVENT_REACH)
        out[f"{PREFIX}{stem}__on"] = (following == 0).astype(float)
        out[f"{PREFIX}{stem}__days_to_next"] = np.minimum(following, EVENT_REACH).astype(float)
        out[f"{PREFIX}{stem}__days_since"] = np.minimum(previous, EVENT_REACH).astype(float)
    return out


@dataclass(frozen=True)
class Timeline:
    """Every row's series and time step (train rows then test rows), and the origin it is forecast from."""

    dates: pd.Series
    series: np.ndarray  # the series' number, 0..n_series - 1
    steps: np.ndarray  # time steps since the first date
    origin: np.ndarray  # the last step whose targets a forecast of the row may read
    n_series: int
    n_steps: int

    @property
    def ahead(self) -> np.ndarray:
        return self.steps - self.origin  # 1..horizon for every row, train and test alike


def timeline(shape: SeriesShape, train_tab: pd.DataFrame, test_tab: pd.DataFrame) -> Timeline | str:
    """The rows' timeline, or why there is none (columns missing, dates unread, too many cells)."""
    needed = [shape.date_column, *shape.keys]
    if any(c not in train_tab.columns or c not in test_tab.columns for c in needed):
        return f"the maps lack the series columns {needed}"
    both = pd.concat([train_tab[needed], test_tab[needed]], ignore_index=True)
    dates = parse_dates(both[shape.date_column])
    if dates is None or dates.isna().any():
        return f"{shape.date_column!r} does not read as dates in every row"
    steps = np.round((dates - dates.min()) / pd.Timedelta(days=shape.step_days)).to_numpy().astype(np.int64)
    series = (both.groupby(shape.keys, sort=False, dropna=False).ngroup().to_numpy() if shape.keys
              else np.zeros(len(both), dtype=np.int64))
    n_series, n_steps = int(series.max()) + 1, int(steps.max()) + 1
    if n_series * n_steps > MAX_GRID_CELLS:
        return f"{n_series} series x {n_steps} steps: too many for the dense lag grid"
    horizon, _, _ = _steps(shape)
    end = int(steps[:len(train_tab)].max())
    # Origins every `horizon` steps back from the training end; a test row's is the end itself.
    origin = end - horizon * (np.floor_divide(end - steps, horizon) + 1)
    return Timeline(dates, series, steps, origin, n_series, n_steps)


def forecast_block(shape: SeriesShape, train_tab: pd.DataFrame, test_tab: pd.DataFrame,
                   targets: dict[str, np.ndarray], raw_dir: Path) -> ForecastBlock:
    """The forecast columns over train rows then test rows (`targets`: numeric targets of the
    train rows, in the model's scale)."""
    block = ForecastBlock()
    line = timeline(shape, train_tab, test_tab)
    if isinstance(line, str):
        block.record = {"skipped": line}
        return block
    n_train, dates, series, steps, ahead = len(train_tab), line.dates, line.series, line.steps, line.ahead
    n_series, n_steps = line.n_series, line.n_steps
    horizon, season, year = _steps(shape)
    columns: dict[str, np.ndarray] = {}
    if shape.keys:
        columns[f"{PREFIX}series"] = series.astype(float)
    columns[f"{PREFIX}ahead"] = ahead.astype(float)
    columns.update(_calendar(dates))
    for name, y in targets.items():
        full = np.concatenate([np.asarray(y, dtype=float), np.full(len(series) - n_train, np.nan)])
        grid = _Grid(series, steps, full, (n_series, n_steps))
        stem = f"{PREFIX}{name}__"
        columns[f"{stem}last"] = grid.window_mean(series, steps, ahead, 1)
        columns[f"{stem}{LEVEL}"] = grid.window_mean(series, steps, ahead, SEASONS_AVERAGED * season)
        for width in sorted({season, LONG_WINDOW_SEASONS * season} - {SEASONS_AVERAGED * season}):
            columns[f"{stem}mean{width}"] = grid.window_mean(series, steps, ahead, width)
        if season > 1:
            # The same weekday: the latest such step at or before the origin, and the three before.
            same = season * np.ceil(ahead / season).astype(np.int64)
            columns[f"{stem}seasonal_mean{SEASONS_AVERAGED}"] = grid.seasonal_mean(series, steps, same, season,
                                                                                   SEASONS_AVERAGED)
        if year is not None and year - season // 2 >= horizon:
            # A year back, a week wide and centred: last year's level at this time of year.
            columns[f"{stem}year_ago"] = grid.window_mean(series, steps, year - season // 2, season)
        means = pd.Series(full[:n_train]).groupby(series[:n_train]).mean()
        columns[f"{stem}{SERIES_MEAN}"] = means.reindex(range(n_series)).to_numpy()[series]
    days = dates.dt.normalize().to_numpy().astype("datetime64[D]").astype(np.int64)
    columns.update(_events(shape, raw_dir, days))
    block.columns = columns
    block.kinds = {name: NUMERIC for name in columns}
    if shape.keys:
        block.kinds[f"{PREFIX}series"] = CATEGORY if n_series <= MAX_CATEGORICAL_LEVELS else ORDINAL_CODE
    block.record = {"series": n_series, "horizon_steps": horizon, "season_steps": season, "columns": list(columns)}
    return block


def add_forecast_features(features: FeatureSet, artifacts: Any, y: dict[str, np.ndarray],
                          regression: list[str], shape: SeriesShape) -> dict[str, Any]:
    """Append the forecast columns to the tabular block in place; the record of what was made."""
    if "tab" not in artifacts.train_maps:
        return {"skipped": "no table"}
    train_tab = aligned(artifacts.train_maps["tab"], features.train_ids)
    test_tab = aligned(artifacts.test_maps["tab"], features.test_ids)
    block = forecast_block(shape, train_tab, test_tab, {c: y[c] for c in regression},
                           Path(artifacts.workspace) / "raw")
    names, arrays = [], []
    for name, values in block.columns.items():
        train_part = values[:features.n_train]
        present = train_part[~np.isnan(train_part)]
        if present.size == 0 or np.all(present == present[0]):
            continue  # constant in train: nothing to learn
        names.append(name)
        arrays.append(values)
    if names:
        matrix = np.column_stack(arrays).astype(np.float32)
        features.tab_train = np.hstack([features.tab_train, matrix[:features.n_train]])
        features.tab_test = np.hstack([features.tab_test, matrix[features.n_train:]])
        features.tab_names = [*features.tab_names, *names]
        features.tab_kinds = [*features.tab_kinds, *(block.kinds[n] for n in names)]
    return block.record


def scaled_error_context(shape: SeriesShape, train_tab: pd.DataFrame, test_tab: pd.DataFrame,
                         targets: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """What RMSSE and its weighted form read beside each training row's answer
    (`scaled_errors.context_columns`): the row's series, and per target that series' scale and
    weight, from the raw `targets` of the training rows ({} without a timeline).

    Assumed, as the M5 competition defines them: a series is one combination of the series keys
    perception found; its scale is the mean squared one-step change of its training target from
    its first non-zero value, and its weight its level over the last horizon of training (the
    target's mean there: the volume, where M5 weighs by dollar sales, whose prices another table
    holds). Both are read up to each row's own origin, as for its features: a validation row
    never scales by the targets it is judged on, and a test row by the whole training history,
    as the grader does. A row whose series has no change before its origin takes the series'
    whole-history scale, else the median of the others' (a flat series would divide by zero).
    """
    line = timeline(shape, train_tab, test_tab)
    if isinstance(line, str):
        return {}
    n_train = len(train_tab)
    series, steps, origin = line.series[:n_train], line.steps[:n_train], line.origin[:n_train]
    horizon, _, _ = _steps(shape)
    out: dict[str, np.ndarray] = {}
    for name, y in targets.items():
        values = np.asarray(y, dtype=float)
        grid = np.full((line.n_series, line.n_steps), np.nan)
        grid[series, steps] = values
        scale = series_history_scale(grid, origin, series)
        whole = series_history_scale(grid, np.full(n_train, int(steps.max())), series)
        scale = np.where(np.isfinite(scale) & (scale > 0), scale, whole)
        positive = scale[np.isfinite(scale) & (scale > 0)]
        scale = np.where(np.isfinite(scale) & (scale > 0), scale, float(np.median(positive)) if positive.size else 1.0)
        level = _Grid(series, steps, values, (line.n_series, line.n_steps)).window_mean(series, origin, 0, horizon)
        key, scale_column, weight_column = context_columns(name)
        out[key] = series.astype(np.int64)
        out[scale_column], out[weight_column] = scale, np.nan_to_num(level)
    return out
