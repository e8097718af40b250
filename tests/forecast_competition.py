"""A forecasting competition made in the test: daily sales of stores x items with weekly and yearly
seasonality, a trend, holidays (a holiday table beside the data) and a promotion covariate, and
multiplicative noise; optionally zero-inflated. Train holds ~two years; test the next `horizon`
days with an `id`, as Kaggle's store-item and Rossmann competitions lay them out. The answers are
kept for the local grader, with seasonal-naive baselines to compare a submission against."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from agentk.core.metrics.functions import smape
from agentk.core.metrics.scaled_errors import context_columns

DESCRIPTION = """# Forecast the daily sales

## Description
You are given {days} days of daily sales for {stores} stores and {items} items. Predict the sales of
every store and item for the following {horizon} days. A holiday table lists the public holidays.

## Evaluation
{evaluation}

## Submission File
For each id in the test set, you must predict the sales. The file should contain a header and have
the following format:

    id,sales
    0,35
    1,22
    etc.
"""


def _holidays(start: pd.Timestamp, end: pd.Timestamp, rng: np.random.Generator) -> pd.DatetimeIndex:
    """Fixed-date holidays every year (as New Year, Christmas) plus a few moving ones."""
    days = []
    for year in range(start.year, end.year + 1):
        for month, day in ((1, 1), (5, 1), (7, 14), (12, 25), (12, 26)):
            days.append(pd.Timestamp(year, month, day))
        for month in (4, 9):  # moving feasts: a different day each year
            days.append(pd.Timestamp(year, month, int(rng.integers(1, 28))))
    return pd.DatetimeIndex([d for d in days if start <= d <= end]).sort_values()


def make_series(stores: int = 3, items: int = 5, days: int = 730, horizon: int = 60, seed: int = 0,
                zero_inflated: bool = False, start: str = "2021-01-01") -> tuple[pd.DataFrame, pd.DatetimeIndex]:
    """Every (date, store, item) row over train + horizon, with its sales; and the holidays."""
    rng = np.random.default_rng(seed)
    dates = pd.date_range(start, periods=days + horizon, freq="D")
    holidays = _holidays(dates[0], dates[-1], rng)
    t = np.arange(len(dates), dtype=float)
    weekday = dates.day_of_week.to_numpy()
    yearly = np.sin(2 * np.pi * dates.day_of_year.to_numpy() / 365.25)
    is_holiday = dates.isin(holidays)
    rows = []
    for store in range(1, stores + 1):
        store_level = rng.uniform(0.6, 1.6)
        for item in range(1, items + 1):
            level = store_level * rng.uniform(5, 40)
            week_shape = 1 + rng.uniform(0.2, 0.6) * np.array([-.3, -.2, -.1, 0, .2, .6, .4])[weekday]
            season = 1 + rng.uniform(0.1, 0.4) * yearly
            trend = 1 + rng.uniform(-0.1, 0.4) * t / len(t)
            # Real series drift (a competitor opens, a product catches on): a slow random walk
            # that store and item codes alone cannot know and recent lags can.
            drift = np.exp(np.cumsum(rng.normal(0, 0.01, len(t))))
            promo = (rng.random(len(dates)) < 0.1).astype(int)
            mean = level * week_shape * season * trend * drift * np.where(is_holiday, 1.8, 1.0) * np.where(promo, 1.5, 1.0)
            sales = rng.poisson(mean * rng.lognormal(0, 0.1, len(dates)))
            if zero_inflated:
                sales = np.where(rng.random(len(dates)) < 0.3, 0, sales)
            rows.append(pd.DataFrame({"date": dates, "store": store, "item": item, "onpromotion": promo,
                                      "sales": sales, "expected": mean * (0.7 if zero_inflated else 1.0)}))
    return pd.concat(rows, ignore_index=True), holidays


EVALUATIONS = {
    "smape": "Submissions are evaluated on SMAPE between forecasts and actual values. We define SMAPE = 0 when\n"
             "the actual and predicted values are both 0.",
    "rmsse": "Submissions are evaluated on the Root Mean Squared Scaled Error (RMSSE): each series' squared errors\n"
             "are divided by the mean squared day-to-day change of its training history, and the roots averaged.",
}


def scaled_error_answers(train: pd.DataFrame, test: pd.DataFrame, horizon: int) -> pd.DataFrame:
    """What an RMSSE grader reads beside each test row's answer: its series, the series' scale (the
    mean squared day-to-day change of its training sales from the first sale on) and weight (its
    mean sales over the last `horizon` training days), as `scaled_errors.context_columns` names them."""
    keys = ["store", "item"]
    stats = {}
    for key, rows in train.sort_values("date").groupby(keys):
        sales = rows["sales"].to_numpy(float)
        sold = sales[np.argmax(sales > 0):]
        stats[key] = (float(np.mean(np.diff(sold) ** 2)), float(sales[-horizon:].mean()))
    found = [stats[tuple(k)] for k in test[keys].itertuples(index=False)]
    series, scale, weight = context_columns("sales")
    return pd.DataFrame({series: test["store"].astype(str) + "/" + test["item"].astype(str),
                         scale: [f[0] for f in found], weight: [f[1] for f in found]})


def make_forecast_competition(root: Path, stores: int = 3, items: int = 5, days: int = 730, horizon: int = 60,
                              seed: int = 0, zero_inflated: bool = False, metric: str = "smape") -> Path:
    """The competition folder: description.md, data/ (train, test, holidays, sample submission),
    private/answers.csv and competition.toml (`metric`, SMAPE or RMSSE, on `sales`; RMSSE's answers
    carry each series' history)."""
    frame, holidays = make_series(stores, items, days, horizon, seed, zero_inflated)
    cut = frame["date"].min() + pd.Timedelta(days=days)
    train = frame[frame["date"] < cut].sort_values(["date", "store", "item"], ignore_index=True)
    test = frame[frame["date"] >= cut].sort_values(["date", "store", "item"], ignore_index=True)
    expected = test["expected"].to_numpy()
    train, test = train.drop(columns="expected"), test.drop(columns="expected")
    test.insert(0, "id", np.arange(len(test)))
    data = root / "data"
    data.mkdir(parents=True, exist_ok=True)
    stamp = {"date": lambda f: f["date"].dt.strftime("%Y-%m-%d")}
    train.assign(**stamp).to_csv(data / "train.csv", index=False)
    test.drop(columns="sales").assign(**stamp).to_csv(data / "test.csv", index=False)
    pd.DataFrame({"date": holidays.strftime("%Y-%m-%d"), "type": "Holiday"}).to_csv(data / "holidays.csv", index=False)
    test[["id"]].assign(sales=0).to_csv(data / "sample_submission.csv", index=False)
    (root / "private").mkdir(parents=True, exist_ok=True)
    answers = test[["id", "sales"]]
    if metric == "rmsse":
        answers = pd.concat([answers, scaled_error_answers(train, test, horizon)], axis=1)
    answers.to_csv(root / "private" / "answers.csv", index=False)
    # The noise-free mean of each test row: the best any forecast can hope for, kept for reports.
    test[["id"]].assign(sales=expected).to_csv(root / "private" / "expected.csv", index=False)
    (root / "description.md").write_text(
        DESCRIPTION.format(days=days, stores=stores, items=items, horizon=horizon, evaluation=EVALUATIONS[metric]),
        encoding="utf-8")
    (root / "competition.toml").write_text(
        '[competition]\nid = "daily-sales"\ninput_modalities = ["tabular"]\ntask_type = "regression"\n\n'
        f'[grading]\nmetric = "{metric}"\nhigher_is_better = false\nid_column = "id"\ntarget_columns = ["sales"]\n'
        'answers = "private/answers.csv"\n', encoding="utf-8")
    return root


def seasonal_naive(competition: Path) -> dict[str, pd.Series]:
    """Two baselines a forecaster tries first, per test row (in the test's order): the same weekday
    of the last four weeks averaged per series, and the same day one year (52 weeks) before."""
    train = pd.read_csv(competition / "data" / "train.csv", parse_dates=["date"])
    test = pd.read_csv(competition / "data" / "test.csv", parse_dates=["date"])
    keys = ["store", "item"]
    last = train["date"].max()
    recent = train[train["date"] > last - pd.Timedelta(days=28)]
    weekly = recent.assign(weekday=recent["date"].dt.day_of_week).groupby([*keys, "weekday"])["sales"].mean()
    week_key = pd.MultiIndex.from_frame(test[keys].assign(weekday=test["date"].dt.day_of_week))
    year_ago = train.set_index(["date", *keys])["sales"]
    year_key = pd.MultiIndex.from_frame(test[keys].assign(date=test["date"] - pd.Timedelta(weeks=52))[["date", *keys]])
    return {"last 4 weeks' weekday mean": pd.Series(weekly.reindex(week_key).to_numpy(), index=test["id"]),
            "same weekday a year before": pd.Series(year_ago.reindex(year_key).to_numpy(), index=test["id"])}


def baseline_scores(competition: Path) -> dict[str, float]:
    """SMAPE of each seasonal-naive baseline and of the best constant (the train median)."""
    answers = pd.read_csv(competition / "private" / "answers.csv").set_index("id")["sales"]
    scores = {name: smape(answers.to_numpy(), guess.reindex(answers.index).fillna(0).to_numpy())
              for name, guess in seasonal_naive(competition).items()}
    expected = pd.read_csv(competition / "private" / "expected.csv").set_index("id")["sales"]
    scores["noise-free mean (the floor)"] = smape(answers.to_numpy(), expected.reindex(answers.index).to_numpy())
    train = pd.read_csv(competition / "data" / "train.csv")
    scores["constant (train median)"] = smape(answers.to_numpy(), np.full(len(answers), train["sales"].median()))
    return scores
