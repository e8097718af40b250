"""What every competition source yields: a frozen description of one competition.

Only the harness (prepare) and the grader touch `grading` and `answers()`; the agent sees the
folder that `prepare()` writes and nothing else.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Literal

import pandas as pd

from agentk.core.errors import GradingError
from agentk.core.records.workspace import safe_component


# Where a local or MLE-bench competition may keep its leaderboard (one row per team, a Score column).
LEADERBOARD_NAMES = ("leaderboard.csv", "private/leaderboard.csv")


@dataclass(frozen=True)
class GradingFacts:
    """Grading facts (from competition.toml, or derived from an MLE-bench private answers file)."""

    metric: str
    higher_is_better: bool
    id_column: str
    # Submissions with one column per target (titanic: Survived) ...
    target_columns: tuple[str, ...] = ()
    # ... or one probability column per class of a single label column (leaf: species).
    label_column: str | None = None


@dataclass(frozen=True)
class Competition:
    """One competition as loaded from a source folder."""

    id: str
    source_kind: Literal["local", "mlebench", "kaggle"]
    root: Path
    title: str
    grading: GradingFacts | None
    # Writes the agent's view into raw_dir: raw_dir/description.md and raw_dir/data/...
    prepare_fn: Callable[[Path], list[str] | None] = field(repr=False, compare=False)
    # Returns the answers table (id column + target or label columns); grader only.
    answers_fn: Callable[[], pd.DataFrame] | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        # The id names the workspace folder, and it comes from data (competition.toml, a
        # folder name): make it one safe path component here, once, for every source.
        object.__setattr__(self, "id", safe_component(self.id))

    def prepare(self, raw_dir: Path) -> list[str]:
        """Write the agent's view into raw_dir; returns warnings worth showing the user once
        (files of the source that were left out), empty when raw_dir was already up to date."""
        return list(self.prepare_fn(raw_dir) or [])

    @property
    def leaderboard_path(self) -> Path | None:
        """A leaderboard the grader places test scores on (MLE-bench keeps one per competition):
        `leaderboard.csv` beside the description or in private/, never part of the agent's view."""
        for name in LEADERBOARD_NAMES:
            path = self.root / name
            if path.is_file():
                return path
        return None

    @property
    def has_answers(self) -> bool:
        return self.answers_fn is not None and self.grading is not None

    def answers(self) -> pd.DataFrame:
        if self.answers_fn is None:
            raise GradingError(f"competition {self.id!r} has no answers to grade against")
        return self.answers_fn()
