"""The campaign report's figures (Altair): Agent K's Figures 8, 9, 12, 13 and 14, the medal counts
and the difficulty of each choice. Each function takes the report's records and returns a chart;
the report turns a chart that cannot be drawn into "not available"."""

from __future__ import annotations

from collections.abc import Sequence

import altair as alt
import numpy as np
import pandas as pd

from agentk.core.records.campaign_record import OrderRow
from agentk.report.campaign_data import DecisionRecord, StageRate, TaskRow
from agentk.report.elo import EloRating
from agentk.report.medals import MEDALS, MedalCounts
from agentk.report.page import FIGURE_HEIGHT, FIGURE_WIDTH, MEDAL_COLOURS, NotAvailable

RATING_BINS = 40  # Figure 9's histogram of the other teams' ratings
_MEDAL_ORDER = [*MEDALS, "none"]
# "No medal" is drawn lighter than the shared grey, which is too close to silver in a bar chart.
_MEDAL_SCALE = alt.Scale(domain=_MEDAL_ORDER, range=[*(MEDAL_COLOURS[m] for m in MEDALS), "#dde3ea"])
_SETUP_KIND = {True: "passed", False: "failed"}
_SETUP_SCALE = alt.Scale(domain=["passed", "failed", "unfinished"], range=["#2f855a", "#c53030", "#9aa5b1"])
_STUB_BAR = 1.5  # % drawn for a rate of 0: a bar of zero height is invisible
MAX_BAR_LABELS = 40  # more bars than this and their "passed/runs" labels would overlap
_CHOICE_COLOUR = "#b7791f"
MAX_ROUND_TICKS = 20  # up to this many rounds, one tick per round; beyond, whole-number ticks spaced out


def _task_axis(n: int) -> alt.Axis:
    # Many tasks: labels thin out rather than overlap.
    return alt.Axis(labelAngle=-45, labelLimit=120, labelOverlap=n > 30, title=None)


def _round_axis(rounds: list[int], title: str) -> alt.Axis:
    # Vega picks "nice" ticks, which are halves in a short campaign; a round is a whole number.
    low, high = min(rounds, default=1), max(rounds, default=1)
    if high - low < MAX_ROUND_TICKS:
        return alt.Axis(title=title, values=list(range(low, high + 1)), format="d")
    return alt.Axis(title=title, tickMinStep=1, format="d")


def percentile_bars(rows: list[TaskRow]) -> alt.Chart | NotAvailable:
    """Figure 8: the share of teams each task's score beats, coloured by medal, in campaign order."""
    placed = [r for r in rows if r.percentile is not None]
    if not placed:
        return NotAvailable("no task was placed on a leaderboard (a Kaggle submission or a leaderboard file "
                            "beside the competition gives a place)")
    frame = pd.DataFrame({"task": [r.key for r in placed], "percentile": [100 * float(r.percentile or 0) for r in placed],
                          "medal": [r.medal or "none" for r in placed],
                          "place": [f"{r.rank}/{r.n_teams}" for r in placed]})
    return alt.Chart(frame).mark_bar().encode(
        x=alt.X("task:N", sort=None, axis=_task_axis(len(placed))),
        y=alt.Y("percentile:Q", title="teams beaten (%)", scale=alt.Scale(domain=[0, 100])),
        color=alt.Color("medal:N", scale=_MEDAL_SCALE, title="medal"),
        tooltip=["task", "percentile", "medal", "place"],
    ).properties(width=FIGURE_WIDTH, height=FIGURE_HEIGHT)


def medal_bars(counts: MedalCounts) -> alt.Chart | NotAvailable:
    if not counts.placed:
        return NotAvailable("no task was placed on a leaderboard, so no medal could be counted")
    frame = pd.DataFrame({"medal": _MEDAL_ORDER, "tasks": [getattr(counts, m) for m in _MEDAL_ORDER]})
    bars = alt.Chart(frame).mark_bar().encode(
        x=alt.X("medal:N", sort=_MEDAL_ORDER, title=None, axis=alt.Axis(labelAngle=0)),
        y=alt.Y("tasks:Q", title="tasks", axis=alt.Axis(tickMinStep=1)),
        color=alt.Color("medal:N", scale=_MEDAL_SCALE, legend=None),
    )
    labels = bars.mark_text(dy=-6).encode(text="tasks:Q", color=alt.value("#1f2933"))
    return (bars + labels).properties(width=FIGURE_WIDTH // 2, height=FIGURE_HEIGHT * 2 // 3)


def rating_histogram(elo: EloRating) -> alt.Chart:
    """Figure 9: the other teams' Elo-MMR ratings (binned here, so the page stays small) and agentk's."""
    values = np.asarray(elo.others or [elo.rating], dtype=float)
    low, high = float(min(values.min(), elo.rating)), float(max(values.max(), elo.rating))
    counts, edges = np.histogram(values, bins=RATING_BINS, range=(low, high if high > low else low + 1))
    frame = pd.DataFrame({"start": edges[:-1], "end": edges[1:], "teams": counts})
    bars = alt.Chart(frame).mark_bar(color="#9aa5b1").encode(
        x=alt.X("start:Q", title="Elo-MMR rating", bin="binned", scale=alt.Scale(zero=False)),
        x2="end:Q", y=alt.Y("teams:Q", title="teams"),
    )
    me = pd.DataFrame({"rating": [elo.rating], "label": [f"agentk {elo.rating:.0f} ± {elo.sigma:.0f}"]})
    rule = alt.Chart(me).mark_rule(color="#c53030", strokeWidth=2).encode(x="rating:Q")
    text = alt.Chart(me).mark_text(color="#c53030", align="left", dx=4, dy=-4, baseline="bottom").encode(
        x="rating:Q", y=alt.value(12), text="label:N")
    return (bars + rule + text).properties(width=FIGURE_WIDTH, height=FIGURE_HEIGHT)


def rating_history(elo: EloRating) -> alt.Chart:
    """agentk's rating after each round, with its uncertainty (± one sigma)."""
    frame = pd.DataFrame({"step": range(1, len(elo.history) + 1), "round": [h.round for h in elo.history],
                          "rating": [h.rating for h in elo.history],
                          "low": [h.rating - h.sigma for h in elo.history], "high": [h.rating + h.sigma for h in elo.history]})
    base = alt.Chart(frame).encode(x=alt.X("step:Q", axis=_round_axis(list(frame["step"]), "round (competition rated)")))
    band = base.mark_area(opacity=0.25, color="#2b6cb0").encode(y=alt.Y("low:Q", title="rating", scale=alt.Scale(zero=False)), y2="high:Q")
    line = base.mark_line(point=alt.OverlayMarkDef(color="#2b6cb0"), color="#2b6cb0").encode(y="rating:Q", tooltip=["round", "rating"])
    return (band + line).properties(width=FIGURE_WIDTH, height=FIGURE_HEIGHT * 2 // 3)


def stage_rate_bars(rates: list[StageRate]) -> alt.Chart | NotAvailable:
    """Figure 12: each setup stage's (and meta check's) unit-test success rate over the campaign."""
    if not rates:
        return NotAvailable("no setup stage has run yet")
    frame = pd.DataFrame({"stage": [r.stage for r in rates], "rate": [100 * r.rate for r in rates],
                          "runs": [f"{r.passed}/{r.runs}" for r in rates]})
    bars = alt.Chart(frame).mark_bar(color="#2b6cb0").encode(
        y=alt.Y("stage:N", sort=None, title=None),
        x=alt.X("rate:Q", title="unit tests passed (% of runs)", scale=alt.Scale(domain=[0, 100])),
        tooltip=["stage", "rate", "runs"],
    )
    labels = bars.mark_text(align="left", dx=3).encode(text="runs:N", color=alt.value("#1f2933"))
    return (bars + labels).properties(width=FIGURE_WIDTH - 120, height=max(120, 18 * len(rates)))


def task_setup_frame(rows: list[TaskRow]) -> pd.DataFrame:
    """Figure 13's data: per task that ran its setup, its rate, the bar drawn for it (never shorter
    than a stub, so a task whose every unit test failed still shows its red bar) and "passed/runs"."""
    rated = [r for r in rows if r.setup_rate is not None]
    rates = [100 * float(r.setup_rate or 0) for r in rated]
    return pd.DataFrame({
        "task": [r.key for r in rated], "rate": rates, "bar": [max(rate, _STUB_BAR) for rate in rates],
        "setup": [_SETUP_KIND.get(r.setup_ok, "unfinished") for r in rated], "outcome": [r.setup for r in rated],
        "runs": [f"{sum(s.passed for s in r.stage_runs.values())}/{sum(s.runs for s in r.stage_runs.values())}" for r in rated],
    })


def task_setup_bars(rows: list[TaskRow]) -> alt.Chart | NotAvailable:
    """Figure 13: each task's setup success rate (unit-test runs passed over runs), in campaign order."""
    frame = task_setup_frame(rows)
    if frame.empty:
        return NotAvailable("no task has run its setup yet")
    bars = alt.Chart(frame).mark_bar().encode(
        x=alt.X("task:N", sort=None, axis=_task_axis(len(frame))),
        y=alt.Y("bar:Q", title="setup unit tests passed (%)", scale=alt.Scale(domain=[0, 100])),
        color=alt.Color("setup:N", title="setup", scale=_SETUP_SCALE),
        tooltip=["task", "rate", "runs", "outcome"],
    )
    if len(frame) > MAX_BAR_LABELS:  # the labels would overlap: the tooltips still say it
        return bars.properties(width=FIGURE_WIDTH, height=FIGURE_HEIGHT)
    labels = bars.mark_text(dy=-5, fontSize=10).encode(text="runs:N", color=alt.value("#1f2933"))
    return (bars + labels).properties(width=FIGURE_WIDTH, height=FIGURE_HEIGHT)


def _curve_frame(curves: Sequence[OrderRow], which: str, this: str | None) -> pd.DataFrame:
    parts = []
    for curve in curves:
        points = curve.successes_vs_time if which == "time" else curve.successes_vs_tokens
        label = f"{curve.order} (this campaign)" if curve.order == this else curve.order
        parts.append(pd.DataFrame({"x": [p[0] for p in points], "solved": [p[1] for p in points], "order": label}))
    return pd.concat(parts, ignore_index=True)


def successes_vs(curves: Sequence[OrderRow], which: str, this: str | None = None) -> alt.Chart | NotAvailable:
    """Figure 14: tasks solved against wall time (`which="time"`) or LLM tokens, one step line per
    order; the order named `this` (the campaign a page is about) is labelled so."""
    if not curves:
        return NotAvailable("no campaign to draw")
    if which == "tokens" and not any(c.tokens for c in curves):
        return NotAvailable("no order spent any LLM tokens (no LLM was called: the expert policy)")
    frame = _curve_frame(curves, which, this)
    title = "wall time since the campaign started (s)" if which == "time" else "LLM tokens spent"
    return alt.Chart(frame).mark_line(interpolate="step-after", point=True).encode(
        x=alt.X("x:Q", title=title),
        y=alt.Y("solved:Q", title="tasks solved", axis=alt.Axis(tickMinStep=1)),
        color=alt.Color("order:N", title="order", sort=None),
        tooltip=["order", "x", "solved"],
    ).properties(width=FIGURE_WIDTH, height=FIGURE_HEIGHT)


def choice_difficulty(decisions: list[DecisionRecord]) -> alt.Chart | NotAvailable:
    """The difficulty surrogate (directory-tree complexity) of each chosen task, round by round."""
    points = [(d.round, d.chosen, d.complexity, d.score) for d in decisions if d.complexity is not None]
    if not points:
        return NotAvailable("no choice recorded a task's complexity")
    frame = pd.DataFrame(points, columns=["round", "task", "complexity", "score"])
    # The points take the line's colour explicitly: `point=True` draws them in the default blue.
    return alt.Chart(frame).mark_line(point=alt.OverlayMarkDef(color=_CHOICE_COLOUR), color=_CHOICE_COLOUR).encode(
        x=alt.X("round:Q", axis=_round_axis(list(frame["round"]), "round")),
        y=alt.Y("complexity:Q", title="tree complexity (difficulty)", scale=alt.Scale(zero=False)),
        tooltip=["round", "task", "complexity", "score"],
    ).properties(width=FIGURE_WIDTH, height=FIGURE_HEIGHT * 2 // 3)
