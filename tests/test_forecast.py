"""Forecasting: the series perception finds (date, keys, horizon, event tables), the features that
respect the horizon, the model relative to a series' level, and `agentk run` end to end on a
generated daily-sales competition graded on its held-back future."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from agentk.core.series import SeriesShape
from forecast_competition import baseline_scores, make_forecast_competition, make_series
from setup_pipeline.perception.series import find_series
from agentk.core.metrics import get_metric
from agentk.core.metrics.scaled_errors import context_columns
from solve_pipeline.inputs.forecast_features import PREFIX, forecast_block, level_columns, scaled_error_context
from solve_pipeline.tables.target_scale import Log1pTarget

AGENTK = [sys.executable, "-m", "agentk.cli"]


def _as_text(frame: pd.DataFrame) -> pd.DataFrame:
    """Cells as perception reads them: text."""
    return frame.assign(date=frame["date"].dt.strftime("%Y-%m-%d")).astype(str)


def _split(days: int = 120, horizon: int = 14, **kwargs: object) -> tuple[pd.DataFrame, pd.DataFrame, pd.DatetimeIndex]:
    frame, holidays = make_series(days=days, horizon=horizon, **kwargs)  # type: ignore[arg-type]
    cut = frame["date"].min() + pd.Timedelta(days=days)
    train = frame[frame["date"] < cut].drop(columns="expected").reset_index(drop=True)
    test = frame[frame["date"] >= cut].drop(columns=["expected", "sales"]).reset_index(drop=True)
    return train, test, holidays


# ---------------------------------------------------------------- perception


def test_series_are_found_by_structure_with_keys_horizon_and_an_event_table() -> None:
    train, test, holidays = _split(stores=2, items=3)
    # Renamed columns: nothing hangs on the names.
    names = {"date": "d", "store": "a", "item": "b", "onpromotion": "c"}
    train, test = _as_text(train).rename(columns=names), _as_text(test).rename(columns=names)
    events = pd.DataFrame({"when": holidays.strftime("%Y-%m-%d"), "kind": "x"})
    daily = pd.DataFrame({"d": train["d"].unique(), "price": "1.5"})  # a daily table is no event table
    shape = find_series(train, test, ["d", "a", "b", "c"], [("data/events.csv", events), ("data/daily.csv", daily)])
    assert shape is not None
    assert shape.date_column == "d" and shape.keys == ["a", "b"] and shape.n_series == 6
    assert shape.step_days == 1 and shape.horizon_days == 14
    assert [e.file for e in shape.events] == ["data/events.csv"]
    assert "forecasting: 6 series, horizon 14 days" in shape.describe()


def test_keys_are_whole_numbers_or_codes_and_series_may_have_gaps() -> None:
    train, test, _ = _split(days=420, stores=3, items=1)
    # One store closed for most of the period: dates hold fewer rows than there are series.
    closed = (train["store"] == 1) & (train["date"] < train["date"].min() + pd.Timedelta(days=300))
    train = train[~closed].reset_index(drop=True)
    # A price of three values that differ within every date names rows as well as the store does,
    # but a fraction is no key.
    rng = np.random.default_rng(1)
    for frame in (train, test):
        frame["price"] = frame.groupby("date")["store"].transform(lambda s: rng.permutation([1.25, 2.5, 3.75])[: len(s)])
    shape = find_series(_as_text(train), _as_text(test), ["date", "price", "store", "item", "onpromotion"])
    assert shape is not None and shape.keys == ["store"] and shape.n_series == 3


def test_a_single_series_needs_no_keys() -> None:
    train, test, _ = _split(stores=1, items=1)
    shape = find_series(_as_text(train), _as_text(test), ["date", "store", "item", "onpromotion"])
    assert shape is not None and shape.keys == [] and shape.n_series == 1


def test_no_series_when_test_dates_are_interleaved_with_train() -> None:
    train, test, _ = _split(stores=2, items=2)
    both = pd.concat([train.drop(columns="sales"), test], ignore_index=True)
    days = both["date"].dt.day
    shape = find_series(_as_text(both[days <= 20]), _as_text(both[days > 20]), ["date", "store", "item", "onpromotion"])
    assert shape is None


# ---------------------------------------------------------------- features


def _block(train: pd.DataFrame, test: pd.DataFrame, y: np.ndarray, horizon: int, tmp_path: Path):
    shape = SeriesShape(date_column="date", keys=["store", "item"], n_series=int(train[["store", "item"]].drop_duplicates().shape[0]),
                        step_days=1, horizon_days=horizon, train_end=train["date"].max().isoformat())
    return forecast_block(shape, _as_text(train), _as_text(test), {"sales": y}, tmp_path)


def test_a_row_sees_only_targets_before_its_origin_and_test_rows_see_train(tmp_path: Path) -> None:
    horizon = 14
    train, test, _ = _split(days=420, horizon=horizon, stores=2, items=2)
    y = train["sales"].to_numpy(dtype=float)
    block = _block(train, test, y, horizon, tmp_path)
    ahead = block.columns[f"{PREFIX}ahead"]
    assert ahead.min() == 1 and ahead.max() == horizon
    n_train = len(train)
    # Test rows count their steps from the last training date.
    test_days = (test["date"] - train["date"].max()).dt.days.to_numpy()
    assert np.array_equal(ahead[n_train:], test_days)
    lagged = [name for name in block.columns if name.startswith(f"{PREFIX}sales__") and not name.endswith("series_mean")]
    assert len(lagged) >= 5
    # Every test row of a series with history has every lag.
    assert not np.isnan(np.column_stack([block.columns[n][n_train:] for n in lagged])).any()
    # Changing the targets on and after a row's origin + 1 leaves that row's lags as they were.
    days = (train["date"] - train["date"].min()).dt.days.to_numpy()
    row = int(np.flatnonzero(days == 400)[0])
    origin_day = days[row] - int(ahead[row])
    changed = np.where(days > origin_day, y * 10 + 100, y)
    again = _block(train, test, changed, horizon, tmp_path)
    for name in lagged:
        assert again.columns[name][row] == pytest.approx(block.columns[name][row], nan_ok=True), name
    # ...while a target before the origin does move them.
    moved = np.where(days == origin_day, y + 1000, y)
    assert _block(train, test, moved, horizon, tmp_path).columns[f"{PREFIX}sales__last"][row] != block.columns[f"{PREFIX}sales__last"][row]


def test_a_scaled_error_reads_each_series_history_up_to_the_rows_origin() -> None:
    """RMSSE's scale and weight per training row: its own series' history, cut at the row's origin
    (a validation row is never scaled by the targets it is judged on)."""
    horizon = 14
    train, test, _ = _split(days=200, horizon=horizon, stores=2, items=2)
    shape = SeriesShape(date_column="date", keys=["store", "item"], n_series=4, step_days=1, horizon_days=horizon,
                        train_end=train["date"].max().isoformat())
    y = train["sales"].to_numpy(dtype=float)
    context = scaled_error_context(shape, _as_text(train), _as_text(test), {"sales": y})
    series, scale, weight = (context[c] for c in context_columns("sales"))
    assert len(series) == len(train) and len(np.unique(series)) == 4
    assert np.all(np.isfinite(scale) & (scale > 0)) and np.all(weight >= 0)
    days = (train["date"] - train["date"].min()).dt.days.to_numpy()
    row = int(np.flatnonzero((days == 190) & (train["store"] == 2) & (train["item"] == 1))[0])
    origin_day = days[-1] - horizon * ((days[-1] - 190) // horizon + 1)
    mine = (train["store"] == 2).to_numpy() & (train["item"] == 1).to_numpy() & (days <= origin_day)
    history = y[mine][np.argsort(days[mine])]
    assert scale[row] == pytest.approx(np.mean(np.diff(history) ** 2))
    assert weight[row] == pytest.approx(np.mean(history[-horizon:]))
    later = scaled_error_context(shape, _as_text(train), _as_text(test), {"sales": np.where(days > origin_day, y * 5, y)})
    assert later[context_columns("sales")[1]][row] == scale[row]


def test_event_tables_become_flags_and_distances(tmp_path: Path) -> None:
    train, test, holidays = _split(days=120, horizon=14, stores=1, items=2)
    (tmp_path / "data").mkdir()
    pd.DataFrame({"day": holidays.strftime("%Y-%m-%d")}).to_csv(tmp_path / "data" / "feasts.csv", index=False)
    shape = SeriesShape(date_column="date", keys=["item"], n_series=2, step_days=1, horizon_days=14,
                        train_end=train["date"].max().isoformat(),
                        events=[{"file": "data/feasts.csv", "date_column": "day", "dates": len(holidays)}])
    block = forecast_block(shape, _as_text(train), _as_text(test), {"sales": train["sales"].to_numpy(float)}, tmp_path)
    dates = pd.concat([train["date"], test["date"]], ignore_index=True)
    on = block.columns[f"{PREFIX}feasts__on"]
    assert np.array_equal(on.astype(bool), dates.isin(holidays).to_numpy())
    to_next = block.columns[f"{PREFIX}feasts__days_to_next"]
    assert (to_next[on == 1] == 0).all() and (to_next[on == 0] > 0).all()


# ---------------------------------------------------------------- the model relative to a level


class _Mean:
    """A stand-in regressor: the training mean of y for every row."""

    def fit(self, X, y, *, X_val=None, y_val=None):  # noqa: ANN001, ANN201
        self.mean_ = float(np.mean(y))
        return self

    def predict(self, X):  # noqa: ANN001, ANN201
        return np.full(X.shape[0], self.mean_)


def test_a_model_relative_to_the_level_keeps_each_series_at_its_own_level() -> None:
    rng = np.random.default_rng(0)
    level = rng.choice([5.0, 50.0, 500.0], size=300)
    X = np.column_stack([level, np.full(300, np.nan)])
    y = level * 1.2  # every series 20% above its recent level
    wrapped = Log1pTarget(_Mean(), level=0, fallback=1).fit(X, y)
    assert np.allclose(wrapped.predict(X), y, rtol=0.05)
    plain = Log1pTarget(_Mean()).fit(X, y)  # without the level one number serves all series
    assert np.abs(plain.predict(X) - y).mean() > 10 * np.abs(wrapped.predict(X) - y).mean()
    assert (plain.predict(X) >= 0).all()


def test_a_target_with_negative_values_is_fitted_as_it_is() -> None:
    X = np.zeros((4, 1))
    y = np.array([-3.0, -1.0, 1.0, 3.0])
    model = Log1pTarget(_Mean(), level=0).fit(X, y)
    assert not model.logged_ and model.predict(X)[0] == pytest.approx(0.0)


def test_level_columns_are_found_by_the_target_name() -> None:
    names = ["a", f"{PREFIX}sales__level", f"{PREFIX}sales__series_mean"]
    assert level_columns(names, "sales") == (1, 2)
    assert level_columns(names, "other") is None


# ---------------------------------------------------------------- end to end


@pytest.mark.integration
def test_daily_sales_are_forecast_end_to_end(tmp_path: Path) -> None:
    competition = make_forecast_competition(tmp_path / "sales", stores=2, items=4, days=600, horizon=42)
    proc = subprocess.run([*AGENTK, "run", str(competition), "--workspace-root", str(tmp_path / "ws"),
                           "--time-budget", "20", "--json"], cwd=tmp_path, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    workspace = tmp_path / "ws" / "daily-sales"
    result = json.loads((workspace / "result.json").read_text())
    assert result["valid_submission"] is True
    plan = json.loads((workspace / "setup" / "plan.json").read_text())
    assert plan["facts"]["series"]["keys"] == ["store", "item"]
    assert any(n.startswith("forecasting: 8 series, horizon 42 days") for n in plan["facts"]["notes"])
    assert any(s.startswith("forecasting: 8 series") for s in plan["steps"])
    solve = json.loads((workspace / "solve" / "solve_result.json").read_text())
    assert solve["validation"]["scheme"] == "time"
    assert f"{PREFIX}sales__level" in solve["forecast"]["columns"]
    baselines = baseline_scores(competition)
    naive = min(v for k, v in baselines.items() if "constant" not in k and "floor" not in k)
    assert result["test_score"] < naive, (result["test_score"], baselines)
    assert result["test_score"] < 0.7 * baselines["constant (train median)"], (result["test_score"], baselines)


@pytest.mark.integration
def test_sales_judged_by_rmsse_are_scored_with_each_series_history(tmp_path: Path) -> None:
    """A page naming RMSSE: the solve's CV reads each series' scale from its own history, and the
    grader (whose answers carry the history) finds the forecast far better than a constant."""
    competition = make_forecast_competition(tmp_path / "sales", stores=2, items=3, days=420, horizon=28,
                                            metric="rmsse")
    proc = subprocess.run([*AGENTK, "run", str(competition), "--workspace-root", str(tmp_path / "ws"),
                           "--time-budget", "10", "--json"], cwd=tmp_path, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    workspace = tmp_path / "ws" / "daily-sales"
    result = json.loads((workspace / "result.json").read_text())
    assert result["valid_submission"] is True and result["test_metric"] == "rmsse"
    assert json.loads((workspace / "setup" / "plan.json").read_text())["metric"] == "rmsse"
    solve = json.loads((workspace / "solve" / "solve_result.json").read_text())
    assert solve["forecast"]["scored_by"].startswith("rmsse: each series' scale and weight from its training history")
    assert solve["cv"][solve["model"]] < solve["cv"]["constant"]
    answers = pd.read_csv(competition / "private" / "answers.csv")
    median = pd.read_csv(competition / "data" / "train.csv")["sales"].median()
    series, scale, _ = context_columns("sales")
    constant = get_metric("rmsse").fn(answers["sales"], np.full(len(answers), median), series=answers[series],
                                      scale=answers[scale])
    assert result["test_score"] < 0.8 * constant, (result["test_score"], constant)
