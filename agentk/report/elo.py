"""An Elo-MMR rating of agentk against the teams of the leaderboards its campaign was placed on
(Agent K's Figure 9), with `elo_mmr_py`.

Each competition is one round: its standings are the leaderboard's teams by score, with agentk
inserted where its own score falls (ties share a place). Rounds are rated in the order the campaign
solved them. Teams are known by name across rounds, as a Kaggle user is.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import groupby

import elo_mmr_py
import numpy as np
from pydantic import BaseModel

from agentk.core.metrics.direction import Direction, finite
from agentk.report.page import NotAvailable

AGENT = "agentk"
# Exact Elo-MMR costs grow with the square of a round's size (a 3000-team leaderboard takes seconds
# per round), and the report is refreshed after every task: a larger leaderboard is thinned to
# evenly spaced places (its shape kept), and Elo-MMR's own subsampling bounds each update.
MAX_TEAMS = 500
SUBSAMPLE = 64


@dataclass(frozen=True)
class Round:
    """One competition's leaderboard and where agentk's score places it."""

    name: str
    teams: Sequence[str]
    scores: Sequence[float]
    ours: float
    higher_is_better: bool


class RatingStep(BaseModel):
    round: str
    rating: float  # agentk's rating after this round
    sigma: float
    place: int  # 0-based, as Elo-MMR counts
    n_players: int


class EloRating(BaseModel):
    rating: float  # agentk's latest rating (mean)
    sigma: float
    rounds: int
    thinned: int = 0  # rounds whose leaderboard was thinned to MAX_TEAMS places
    history: list[RatingStep]
    others: list[float]  # every other rated team's latest rating
    percentile: float  # fraction of the other teams rated below agentk


def standings(round_: Round) -> list[tuple[str, int, int]]:
    """(name, low, high) zero-based places, best first, ties sharing an inclusive interval."""
    scores = [*map(float, round_.scores), float(round_.ours)]
    everyone = [*_unique_names(round_.teams), AGENT]
    scored = [i for i, score in enumerate(scores) if finite(score)]
    placed: list[tuple[str, int, int]] = []
    for _, tied in groupby(Direction(round_.higher_is_better).ranked(scored, key=lambda i: scores[i]),
                           key=lambda i: scores[i]):
        members = list(tied)
        low = len(placed)
        placed += [(everyone[i], low, low + len(members) - 1) for i in members]
    return placed


def thin(round_: Round, max_teams: int = MAX_TEAMS) -> Round:
    """The round with at most `max_teams` teams, kept at evenly spaced places (best and worst
    included), so agentk's place among them stays where it was."""
    if len(round_.scores) <= max_teams:
        return round_
    scores = np.asarray(round_.scores, dtype=float)
    order = Direction(round_.higher_is_better).ranked(range(len(scores)), key=lambda i: scores[i])
    keep = [order[i] for i in np.unique(np.linspace(0, len(order) - 1, max_teams).round().astype(int))]
    return Round(round_.name, [round_.teams[i] for i in keep], [float(scores[i]) for i in keep],
                 round_.ours, round_.higher_is_better)


def _unique_names(teams: Sequence[str]) -> list[str]:
    """Team names made unique within a round, none spelled as agentk's own."""
    seen: dict[str, int] = {}
    names = []
    for team in teams:
        name = str(team) if str(team) != AGENT else f"{AGENT} (a team)"
        count = seen.get(name, 0)
        seen[name] = count + 1
        names.append(name if count == 0 else f"{name} #{count + 1}")
    return names


def elo_mmr(rounds: Sequence[Round]) -> EloRating | NotAvailable:
    """agentk's Elo-MMR rating over `rounds` (chronological); NotAvailable without a leaderboard."""
    usable = [r for r in rounds if len(r.scores) > 0 and np.isfinite(r.ours)]
    if not usable:
        return NotAvailable("no leaderboard is known for any solved task (a Kaggle submission or a "
                            "leaderboard file beside the competition places agentk on one)")
    thinned = [thin(r) for r in usable]
    contests = [elo_mmr_py.Contest(standings(r), name=r.name) for r in thinned]
    players = elo_mmr_py.rate(contests, system=elo_mmr_py.EloMmrConfig("mmr", subsample_size=SUBSAMPLE))
    me = players[AGENT]
    history = [RatingStep(round=usable[e.contest_index].name, rating=e.rating_mu, sigma=e.rating_sig,
                          place=e.place, n_players=len(contests[e.contest_index].standings))
               for e in me.events]
    others = [float(p.rating) for name, p in players.items() if name != AGENT]
    below = sum(r < me.rating for r in others)
    return EloRating(rating=float(me.rating), sigma=float(me.events[-1].rating_sig), rounds=len(usable),
                     thinned=sum(len(t.scores) < len(r.scores) for t, r in zip(thinned, usable)),
                     history=history, others=others, percentile=below / len(others) if others else 0.0)
