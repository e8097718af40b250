"""Which way a metric improves, as a value: every "is this score better" and "best first" goes
through `Direction`, so a NaN, an infinity or a missing score is treated the same everywhere.

A score that is not a finite number (NaN, ±inf, None) never wins and ranks last: the setup's
metric reports a failure as NaN, and a failed candidate must not become the submission.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")


def finite(score: object) -> bool:
    """True for a real, finite number (bools are not scores)."""
    # numbers.Real takes numpy's scalars too.
    return isinstance(score, numbers.Real) and not isinstance(score, bool) and math.isfinite(score)


@dataclass(frozen=True)
class Direction:
    """A metric's direction: `higher_is_better` True (accuracy, AUC) or False (log loss, RMSE)."""

    higher_is_better: bool

    @classmethod
    def recorded(cls, value: object) -> Direction | None:
        """The direction a record (plan.json, result.json, ...) holds; None when it holds none,
        so that each reader decides what an unknown direction means instead of assuming one."""
        return cls(value) if isinstance(value, bool) else None

    def better(self, a: float | None, b: float | None) -> bool:
        """True when score `a` is strictly better than `b`; a non-finite `a` never is, and any
        finite `a` beats a non-finite `b`."""
        if not finite(a):
            return False
        if not finite(b):
            return True
        return a > b if self.higher_is_better else a < b  # type: ignore[operator]

    def at_least(self, a: float | None, b: float | None) -> bool:
        """`a` is better than or as good as `b` (both finite when equal)."""
        return self.better(a, b) or (finite(a) and a == b)

    def ranked(self, items: Iterable[T], key: Callable[[T], float | None]) -> list[T]:
        """Items best first by `key` (computed once each); ties keep their order, and items
        whose score is not finite come last in their order."""
        scored = [(item, key(item)) for item in items]
        return [item for item, _ in self._finite_first(scored)] + [item for item, score in scored if not finite(score)]

    def best(self, items: Iterable[T], key: Callable[[T], float | None]) -> T | None:
        """The best item by `key` (the first of tied ones); None when no item has a finite score."""
        good = self._finite_first([(item, key(item)) for item in items])
        return good[0][0] if good else None

    def _finite_first(self, scored: list[tuple[T, float | None]]) -> list[tuple[T, float | None]]:
        good = [pair for pair in scored if finite(pair[1])]
        # sorted() is stable with reverse=True too: tied scores keep their order either way.
        return sorted(good, key=lambda pair: pair[1], reverse=self.higher_is_better)  # type: ignore[arg-type, return-value]

    def best_score(self, scores: Iterable[float | None]) -> float | None:
        """The best finite score; None when there is none."""
        return self.best(scores, lambda score: score)
