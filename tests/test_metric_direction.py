"""Direction: the one place that says which score is better, best, or ranks first."""

from __future__ import annotations

import math

import numpy as np

from agentk.core.metrics import Direction, get_metric

NAN = float("nan")


def test_better_never_prefers_a_score_that_is_not_finite() -> None:
    higher = Direction(True)
    assert not higher.better(math.inf, 0.5) and not higher.better(None, 0.5)
    assert higher.better(0.1, None) and higher.better(0.1, -math.inf)
    assert higher.better(np.float32(0.9), np.int64(0))


def test_at_least_accepts_a_tie() -> None:
    assert Direction(True).at_least(0.5, 0.5) and Direction(False).at_least(0.4, 0.5)
    assert not Direction(False).at_least(0.6, 0.5) and not Direction(True).at_least(NAN, NAN)


def test_ranked_is_stable_and_puts_unscored_items_last() -> None:
    items = [("a", 0.5), ("n", NAN), ("b", 0.2), ("c", 0.5), ("m", None), ("d", 0.9)]
    assert [n for n, _ in Direction(True).ranked(items, key=lambda i: i[1])] == ["d", "a", "c", "b", "n", "m"]
    assert [n for n, _ in Direction(False).ranked(items, key=lambda i: i[1])] == ["b", "a", "c", "d", "n", "m"]


def test_best_is_the_first_best_or_none() -> None:
    items = [("a", 0.5), ("b", 0.9), ("c", 0.9)]
    assert Direction(True).best(items, key=lambda i: i[1]) == ("b", 0.9)
    assert Direction(False).best_score([NAN, 3.0, 2.0, None]) == 2.0
    assert Direction(True).best_score([NAN, None]) is None


def test_recorded_reads_only_a_bool() -> None:
    assert Direction.recorded(False) == Direction(False)
    assert Direction.recorded(None) is None and Direction.recorded("true") is None


def test_metric_knows_its_direction() -> None:
    assert get_metric("rmse").direction == Direction(False) and get_metric("auc").direction.higher_is_better
