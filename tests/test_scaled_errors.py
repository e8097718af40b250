"""RMSSE and its weighted form: each series' errors scaled by its own history, the history carried
beside the answers (`scaled_errors.context_columns`), and the invariants a scaled error keeps."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from agentk.core.metrics import get_metric, score_prediction_frame
from agentk.core.metrics.scaled_errors import context_columns, series_history_scale

RMSSE, WRMSSE = get_metric("rmsse").fn, get_metric("wrmsse").fn


def _series(rng: np.random.Generator, levels: tuple[float, ...] = (10.0, 100.0, 1000.0), past: int = 60,
            future: int = 14) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    """Weekly-seasonal series of very different sizes: their future (truth), a fair forecast of it,
    each future row's series, and the context (series, scale from each one's past, weight)."""
    truth, forecast, keys, scales = [], [], [], []
    for k, level in enumerate(levels):
        t = np.arange(past + future)
        clean = level * (1 + 0.3 * np.sin(2 * np.pi * t / 7))
        values = clean * (1 + 0.1 * rng.normal(size=t.size))
        scale = float(np.mean(np.diff(values[:past]) ** 2))
        truth.append(values[past:])
        forecast.append(clean[past:])
        keys += [k] * future
        scales += [scale] * future
    context = {"series": np.array(keys), "scale": np.array(scales), "weight": np.array(scales) ** 0.5}
    return np.concatenate(truth), np.concatenate(forecast), np.array(keys), context


@pytest.mark.parametrize("fn", [RMSSE, WRMSSE], ids=["rmsse", "wrmsse"])
def test_perfect_constant_and_permuted_forecasts(fn) -> None:
    rng = np.random.default_rng(0)
    truth, forecast, keys, context = _series(rng)
    assert fn(truth, truth, **context) == 0.0
    fair = fn(truth, forecast, **context)
    means = pd.Series(truth).groupby(keys).transform("mean").to_numpy()
    constant = fn(truth, means, **context)
    assert 0 < fair < constant
    order = rng.permutation(len(truth))  # the same rows in another order: the same score
    assert fn(truth[order], forecast[order], **{k: v[order] for k, v in context.items()}) == pytest.approx(fair)
    assert fn(truth, forecast[order], **context) > constant  # forecasts given to the wrong rows


def test_each_series_counts_alike_whatever_its_size() -> None:
    truth, forecast, keys, context = _series(np.random.default_rng(1))
    base = RMSSE(truth, forecast, **context)
    grown = np.where(keys == 0, 1000.0, 1.0)  # the smallest series a thousand times larger
    scaled = {**context, "scale": context["scale"] * grown ** 2}
    assert RMSSE(truth * grown, forecast * grown, **scaled) == pytest.approx(base)
    # Without its history every row is one series of scale 1: the root of the mean squared error.
    assert RMSSE(truth, forecast) == pytest.approx(np.sqrt(np.mean((truth - forecast) ** 2)))


def test_the_naive_forecast_scores_one_on_the_history_that_scales_it() -> None:
    history = np.abs(np.random.default_rng(2).normal(50, 10, size=40))
    grid = history[None, :]
    scale = series_history_scale(grid, np.array([39]), np.array([0]))
    assert scale[0] == pytest.approx(np.mean(np.diff(history) ** 2))
    assert RMSSE(history[1:], history[:-1], scale=np.full(39, scale[0])) == pytest.approx(1.0)


def test_the_history_starts_at_the_first_sale_and_stops_at_the_origin() -> None:
    grid = np.array([[0, 0, 0, 4, 6, 5, 9, 100, 200],
                     [1, np.nan, 3, 4, np.nan, np.nan, np.nan, np.nan, np.nan]], dtype=float)
    scales = series_history_scale(grid, np.array([6, 6, 2, 3]), np.array([0, 0, 1, 0]))
    assert scales[0] == pytest.approx(np.mean([4.0, 1.0, 16.0]))  # 4->6->5->9: the zeros before are not history
    assert scales[1] == scales[0]  # the 100 and 200 after the origin are never read
    assert np.isnan(scales[2])  # 1, gap, 3: no known one-step change
    assert np.isnan(scales[3])  # nothing sold before the origin


def test_weights_decide_between_the_series() -> None:
    truth, forecast, keys, context = _series(np.random.default_rng(3))
    equal = {**context, "weight": np.ones(len(truth))}
    assert WRMSSE(truth, forecast, **equal) == pytest.approx(RMSSE(truth, forecast, **context))
    only_first = {**context, "weight": (keys == 0).astype(float)}
    first = keys == 0
    alone = RMSSE(truth[first], forecast[first], scale=context["scale"][first])
    assert WRMSSE(truth, forecast, **only_first) == pytest.approx(alone)
    assert RMSSE(truth, forecast, **only_first) == pytest.approx(RMSSE(truth, forecast, **context))
    with pytest.raises(ValueError, match="positive"):
        RMSSE(truth, forecast, series=keys, scale=np.zeros(len(truth)))


@pytest.mark.parametrize("name", ["rmsse", "wrmsse"])
def test_answer_frames_carry_each_series_history(name: str) -> None:
    truth, forecast, keys, context = _series(np.random.default_rng(4))
    series, scale, weight = context_columns("sales")
    answers = pd.DataFrame({"id": [f"r{i}" for i in range(len(truth))], "sales": truth, series: context["series"],
                            scale: context["scale"], weight: context["weight"]})
    predicted = pd.DataFrame({"id": answers["id"][::-1].to_numpy(), "sales": forecast[::-1]})  # aligned on id
    direct = get_metric(name).fn(truth, forecast, **context)
    assert score_prediction_frame(name, answers, predicted, ["sales"]) == pytest.approx(direct)
    plain = score_prediction_frame(name, answers[["id", "sales"]], predicted, ["sales"])
    assert plain == pytest.approx(np.sqrt(np.mean((truth - forecast) ** 2)))


def test_the_grader_reads_the_history_its_answers_carry() -> None:
    from agentk.grading import grade_submission
    from agentk.sources.base import GradingFacts

    truth, forecast, _, context = _series(np.random.default_rng(5))
    series, scale, weight = context_columns("sales")
    answers = pd.DataFrame({"id": range(len(truth)), "sales": truth, series: context["series"],
                            scale: context["scale"], weight: context["weight"]})
    submission = pd.DataFrame({"id": range(len(truth)), "sales": forecast}).sample(frac=1, random_state=0)
    facts = GradingFacts(metric="wrmsse", higher_is_better=False, id_column="id", target_columns=("sales",))
    report = grade_submission(submission, answers, facts)
    assert report.valid and report.score == pytest.approx(WRMSSE(truth, forecast, **context))
