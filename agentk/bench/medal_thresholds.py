"""Medal thresholds (MLE-bench's format: per competition id, the gold / silver / bronze / median
scores of its final Kaggle leaderboard and the direction) and where a test score falls on them."""

from __future__ import annotations

import json
import math
from pathlib import Path

from pydantic import BaseModel, ValidationError

from agentk.core.errors import AgentKError
from agentk.core.metrics.direction import Direction

LEVELS = ("gold", "silver", "bronze", "median")


class Thresholds(BaseModel):
    gold: float
    silver: float
    bronze: float
    median: float | None = None
    higher_is_better: bool

    def place(self, score: float | None) -> str:
        """'gold', 'silver', 'bronze', 'above median' or 'below median' ('—' without a score)."""
        if score is None or not math.isfinite(score):
            return "—"
        direction = Direction(self.higher_is_better)
        for level in ("gold", "silver", "bronze"):
            if direction.at_least(score, getattr(self, level)):
                return level
        if self.median is not None:
            return "above median" if direction.at_least(score, self.median) else "below median"
        return "no medal"


def read_thresholds(path: Path) -> dict[str, Thresholds]:
    """Every competition's thresholds in the file; keys starting with '_' are comments."""
    try:
        raw = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise AgentKError(f"--medals: cannot read {path}: {exc}") from exc
    if not isinstance(raw, dict):
        raise AgentKError(f"--medals: {path} is not a JSON object of competitions")
    thresholds = {}
    for competition, entry in raw.items():
        if competition.startswith("_"):
            continue
        try:
            thresholds[competition] = Thresholds.model_validate(entry)
        except ValidationError as exc:
            raise AgentKError(f"--medals: {path}: {competition}: {exc.errors()[0]['msg']}") from exc
    return thresholds
