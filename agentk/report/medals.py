"""Kaggle's progression medals by team bracket, and a campaign's medal counts.

The thresholds themselves live in `agentk.grading.medal_ranks` (the grader places submissions with
them); this module names the brackets for the report and counts medals over tasks.

    teams      gold                 silver         bronze
    0–99       top 10%              top 20%        top 40%
    100–249    top 10               top 20%        top 40%
    250–999    top 10 + 0.2%        top 50         top 100
    1000+      top 10 + 0.2%        top 5%         top 10%
"""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import BaseModel

from agentk.grading import medal_ranks

MEDALS = ("gold", "silver", "bronze")


def medal_for(rank: int, n_teams: int) -> str | None:
    """The medal a 1-based `rank` earns on a leaderboard of `n_teams` teams; None for no medal."""
    if rank < 1:
        raise ValueError(f"ranks start at 1, not {rank}")
    gold, silver, bronze = medal_ranks(n_teams)
    return "gold" if rank <= gold else "silver" if rank <= silver else "bronze" if rank <= bronze else None


def bracket(n_teams: int) -> str:
    """The team bracket whose rules apply, as Kaggle's progression page names it."""
    if n_teams < 100:
        return "0–99 teams"
    if n_teams < 250:
        return "100–249 teams"
    if n_teams < 1000:
        return "250–999 teams"
    return "1000+ teams"


class MedalCounts(BaseModel):
    gold: int = 0
    silver: int = 0
    bronze: int = 0
    none: int = 0  # placed on a leaderboard without a medal

    @property
    def placed(self) -> int:
        return self.gold + self.silver + self.bronze + self.none

    @property
    def medals(self) -> int:
        return self.gold + self.silver + self.bronze


def count_medals(medals: Iterable[str | None]) -> MedalCounts:
    """Counts over the tasks placed on a leaderboard (None: placed, no medal)."""
    counts = MedalCounts()
    for medal in medals:
        name = medal if medal in MEDALS else "none"
        setattr(counts, name, getattr(counts, name) + 1)
    return counts
