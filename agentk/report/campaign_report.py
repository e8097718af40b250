"""`agentk report CAMPAIGN_DIR`: the campaign's page (CAMPAIGN_DIR/report.html) — the task table,
Figures 8, 9, 12, 13 and 14 of Agent K, Table 4 and the curriculum's choices.

Each section is built on its own: an error in one becomes that section's "not available: <reason>"
and the rest of the page is still written (the campaign driver refreshes this page after every
task, and a report never fails a campaign).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agentk.core.errors import AgentKError
from agentk.report import campaign_figures as figures
from agentk.core.records.campaign_record import CampaignState, TaskState
from agentk.report.campaign_data import (
    PASS_AT,
    TaskRow,
    order_curves,
    pass_at_k,
    read_decisions,
    stage_rates,
    task_row,
)
from agentk.report.elo import MAX_TEAMS, EloRating, Round, elo_mmr
from agentk.report.medals import count_medals
from agentk.report.page import REPORT_FILE, NotAvailable, figure, guarded, render, utc_minute, write_page

TEMPLATE = "campaign.html.j2"
TOP_RANKED = 5  # candidates shown under each choice
# Equation 7's terms as decisions.jsonl records them, with the table's headers.
TERMS = (("positive_description", "+ description"), ("positive_tree", "+ tree"),
         ("negative_description", "− description"), ("negative_tree", "− tree"),
         ("recent_failure", "failure"))

def _rows(campaign_dir: Path, state: CampaignState) -> tuple[list[TaskRow], list[Round]]:
    """Task rows in the order the campaign took the tasks (never-run tasks last, in pool order)."""
    rows, rounds = [], []
    for task in state.tasks.values():
        try:
            row, round_ = task_row(campaign_dir, task)
        except Exception as exc:  # noqa: BLE001 - a task whose files are unreadable keeps a bare row
            row, round_ = _bare_row(task, f"its workspace could not be read: {type(exc).__name__}: {exc}"), None
        rows.append(row)
        if round_ is not None:
            rounds.append(round_)
    taken = {row.key: row.taken for row in rows}
    rows.sort(key=lambda r: (r.taken is None, r.taken or 0))
    rounds.sort(key=lambda r: taken.get(r.name) or 0)
    return rows, rounds


def _bare_row(task: TaskState, note: str) -> TaskRow:
    return TaskRow(key=task.key, family=task.pool_key, seed=task.seed, status=task.status, attempts=len(task.attempts),
                   taken=min((a.round for a in task.attempts), default=None), note=note)


def _cards(state: CampaignState, rows: list[TaskRow]) -> list[tuple[str, str]]:
    statuses = [t.status for t in state.tasks.values()]
    set_up = [r for r in rows if r.setup_ok is not None]
    cards = [
        ("solved", f"{statuses.count('solved')} / {len(statuses)}"),
        ("failed / gave up", f"{statuses.count('failed')} / {statuses.count('gave_up')}"),
        ("set up", f"{sum(bool(r.setup_ok) for r in set_up)} / {len(set_up)}" if set_up else "—"),
        ("runs", str(sum(len(t.attempts) for t in state.tasks.values()))),
        ("wall time", f"{state.elapsed_s / 60:.1f} min"),
        ("LLM tokens", f"{state.tokens:,}"),
    ]
    medals = count_medals(r.medal for r in rows if r.percentile is not None)
    if medals.placed:
        cards.append(("medals", f"{medals.gold} gold · {medals.silver} silver · {medals.bronze} bronze"))
    return cards


@dataclass(frozen=True)
class TaskColumns:
    """The task table's optional columns: each shown only when some task has a value for it (a
    campaign without leaderboards would otherwise carry three columns of dashes)."""

    leaderboard: bool
    place: bool
    medal: bool
    tokens: bool

    @classmethod
    def of(cls, rows: list[TaskRow]) -> TaskColumns:
        return cls(leaderboard=any(r.leaderboard_score is not None for r in rows),
                   place=any(r.rank is not None for r in rows),
                   # a placed task without a medal still says something: "no medal"
                   medal=any(r.medal is not None or r.rank is not None for r in rows),
                   tokens=any(r.tokens for r in rows))


def campaign_context(campaign_dir: Path) -> dict[str, Any]:
    """Everything the template shows; raises AgentKError only when the folder holds no campaign."""
    campaign_dir = Path(campaign_dir)
    try:
        state = CampaignState.read(campaign_dir)
    except ValueError as exc:
        raise AgentKError(f"{campaign_dir / 'state.json'} is not a campaign's state: {exc}") from None
    if state is None:
        raise AgentKError(f"no campaign in {campaign_dir}: state.json is missing")

    built = guarded("the task table", lambda: _rows(campaign_dir, state))
    rows: list[TaskRow] | NotAvailable = built[0] if isinstance(built, tuple) else built
    rounds: list[Round] = built[1] if isinstance(built, tuple) else []
    listed = rows if isinstance(rows, list) else []

    medals = guarded("the medal counts", lambda: count_medals(r.medal for r in listed if r.percentile is not None))
    elo: EloRating | NotAvailable = guarded("the Elo-MMR rating", lambda: elo_mmr(rounds))
    if isinstance(rows, NotAvailable) and isinstance(elo, NotAvailable):
        elo = rows
    bench = guarded("Figure 14's campaigns", lambda: order_curves(campaign_dir))
    curves = bench if isinstance(bench, NotAvailable) else bench.orders
    this = None if isinstance(bench, NotAvailable) else bench.this
    decisions = guarded("the decisions log", lambda: read_decisions(campaign_dir) or NotAvailable(
        "no choice has been made yet (decisions.jsonl is empty)"))
    rates = guarded("the stage success rates", lambda: stage_rates(listed))

    def chart(title: str, build: Callable[[], Any]) -> Any:
        return figure(title, guarded(title, build))

    return {
        "campaign": state,
        "folder": str(campaign_dir),
        "cards": guarded("the summary", lambda: _cards(state, listed)) if listed else [],
        "rows": rows,
        "columns": TaskColumns.of(listed),
        "started": utc_minute(state.created),
        "fig8": chart("Figure 8: share of teams beaten per competition, coloured by medal",
                      lambda: rows if isinstance(rows, NotAvailable) else figures.percentile_bars(listed)),
        "medals": medals if not isinstance(medals, NotAvailable) and medals.placed else None,
        "fig_medals": chart("Medal counts by Kaggle's progression rules",
                            lambda: medals if isinstance(medals, NotAvailable) else figures.medal_bars(medals)),
        "elo": elo,
        "fig9": chart("Figure 9: Elo-MMR ratings of the leaderboards' teams, and agentk's",
                      lambda: elo if isinstance(elo, NotAvailable) else figures.rating_histogram(elo)),
        "fig9_history": chart("agentk's Elo-MMR rating after each competition (± one sigma)",
                              lambda: elo if isinstance(elo, NotAvailable) else figures.rating_history(elo)),
        "fig12": chart("Figure 12: unit-test success rate per setup stage (runs passed / runs)",
                       lambda: rates if isinstance(rates, NotAvailable) else figures.stage_rate_bars(rates)),
        "fig13": chart("Figure 13: setup success rate per task (unit-test runs passed / runs)",
                       lambda: rows if isinstance(rows, NotAvailable) else figures.task_setup_bars(listed)),
        "pass_at": guarded("Table 4", lambda: rows if isinstance(rows, NotAvailable) else pass_at_k(listed)),
        "ks": PASS_AT,
        "curves": curves,
        "this_order": this,
        "fig14_time": chart("Figure 14: tasks solved against wall time, per selection order",
                            lambda: curves if isinstance(curves, NotAvailable) else figures.successes_vs(curves, "time", this)),
        "fig14_tokens": chart("Figure 14: tasks solved against LLM tokens, per selection order",
                              lambda: curves if isinstance(curves, NotAvailable) else figures.successes_vs(curves, "tokens", this)),
        "decisions": decisions,
        "fig_choices": chart("Difficulty (tree complexity) of each chosen task, round by round",
                             lambda: decisions if isinstance(decisions, NotAvailable) else figures.choice_difficulty(decisions)),
        "terms": [t for t in TERMS if any(t[0] in d.terms for d in decisions)] if isinstance(decisions, list) else [],
        "top_ranked": TOP_RANKED,
        "max_teams": MAX_TEAMS,
        "generated": utc_minute(datetime.now(UTC)),
    }


def write_campaign_report(campaign_dir: Path) -> Path:
    """Write (or refresh) CAMPAIGN_DIR/report.html and return its path."""
    campaign_dir = Path(campaign_dir)
    html = render(TEMPLATE, **campaign_context(campaign_dir))
    return write_page(campaign_dir / REPORT_FILE, html)
