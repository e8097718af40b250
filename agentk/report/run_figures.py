"""The run report's charts, drawn with Altair from the records `run_data` reads.

Each function returns a chart, or NotAvailable with the reason when its data is missing; the page
turns either into a figure (`page.figure`). Scores on a score axis never start at zero: the
differences a reader looks for (0.81 against 0.82) would vanish in a bar from zero.
"""

from __future__ import annotations

from collections.abc import Callable

import altair as alt
import pandas as pd

from agentk.report.page import FIGURE_HEIGHT, Figure, NotAvailable, figure
from agentk.report.run_data import RunData
from agentk.report.run_dataset import FeatureColumn, TargetDistribution
from agentk.report.run_section import section
from agentk.report.run_setup import SetupData, StageRow
from agentk.report.run_solver import Blend, RaceRow, Timeline, Tuning

# Race statuses: a finished family in the good colour, the stopped ones in muted ones.
STATUS_COLOURS = {"finished": "#2f855a", "pruned": "#b7791f", "out_of_time": "#9aa5b1", "failed": "#c53030", "skipped": "#cbd2d9"}
TRIAL_COLOURS = {"defaults": "#616e7c", "warm": "#d69e2e", "portfolio": "#2f855a", "hebo": "#2b6cb0"}
PASS_COLOURS = {"passed": "#2f855a", "failed": "#c53030"}
BLEND_KINDS = {"single model": ("#2b6cb0", "circle"), "blend (nested CV)": ("#d69e2e", "diamond")}
# The page's content is ~1040 px wide at a laptop's 1280 (base.html.j2): a wide figure fills it, and
# two small ones share a row (the data section's `.pair`).
WIDE = 1000
HALF = 480


def _scale(colours: dict[str, str], present: object = None) -> alt.Scale:
    """Colours by name; with `present`, only the names drawn (a legend lists nothing that is not there)."""
    names = [n for n in colours if present is None or n in set(present)] or list(colours)
    return alt.Scale(domain=names, range=[colours[n] for n in names])


def _sized(chart: alt.TopLevelMixin, width: int, height: int) -> alt.TopLevelMixin:
    """`chart` drawn `width` px wide in all (axes and legend included, so the figure fills its place
    on the page), with text a reader can read at that size."""
    return (chart.properties(width=width, height=height, autosize=alt.AutoSizeParams(type="fit-x", contains="padding"))
            .configure_axis(labelFontSize=12, titleFontSize=12).configure_legend(labelFontSize=12, titleFontSize=12))


def _count_axis(title: str) -> alt.Axis:
    """Counts are whole numbers: no 0.5 tick."""
    return alt.Axis(title=title, tickMinStep=1, format="d")


def _score_title(higher_is_better: bool | None) -> str:
    if higher_is_better is None:
        return "score"
    return "score (higher is better)" if higher_is_better else "score (lower is better)"


def setup_chart(stages: list[StageRow] | NotAvailable) -> alt.Chart | NotAvailable:
    """Seconds spent per setup stage, coloured by its outcome, with its attempt count."""
    if isinstance(stages, NotAvailable):
        return stages
    frame = pd.DataFrame([{"stage": f"{'meta: ' if s.kind == 'meta' else ''}{s.name}", "seconds": s.seconds,
                           "outcome": "passed" if s.passed else "failed", "attempts": f"{s.attempts}×"} for s in stages])
    order = list(frame["stage"])
    base = alt.Chart(frame).encode(y=alt.Y("stage:N", sort=order, title=None))
    bars = base.mark_bar().encode(x=alt.X("seconds:Q", title="seconds (all attempts)"),
                                  color=alt.Color("outcome:N", scale=_scale(PASS_COLOURS, frame["outcome"]), title="outcome"))
    labels = base.mark_text(align="left", dx=3, fontSize=11).encode(x="seconds:Q", text="attempts:N")
    return _sized(bars + labels, WIDE, max(120, 20 * len(frame)))


def race_chart(race: list[RaceRow] | NotAvailable, higher_is_better: bool | None) -> alt.Chart | NotAvailable:
    """Each family's fold scores (small dots) and its cross-validated score (a large mark),
    coloured by how the family left the race."""
    if isinstance(race, NotAvailable):
        return race
    folds = pd.DataFrame([{"family": r.family, "score": s, "status": r.status, "fold": i + 1}
                          for r in race for i, s in enumerate(r.fold_scores or ([r.first_fold_score] if r.first_fold_score is not None else []))])
    cv = pd.DataFrame([{"family": r.family, "score": r.cv_score, "status": r.status} for r in race if r.cv_score is not None])
    if folds.empty and cv.empty:
        return NotAvailable("no family of the race scored a fold")
    order = [r.family for r in race]
    colour = alt.Color("status:N", scale=_scale(STATUS_COLOURS, [r.status for r in race]), title="status")
    y = alt.Y("family:N", sort=order, title=None)
    x = alt.X("score:Q", scale=alt.Scale(zero=False), title=_score_title(higher_is_better))
    layers = []
    if not folds.empty:
        layers.append(alt.Chart(folds).mark_circle(size=40, opacity=0.55).encode(x=x, y=y, color=colour))
    if not cv.empty:
        layers.append(alt.Chart(cv).mark_point(shape="diamond", size=160, filled=True).encode(x=x, y=y, color=colour))
    return _sized(alt.layer(*layers), WIDE, max(100, 28 * len(order)))


def tuning_chart(tuning: Tuning | NotAvailable, higher_is_better: bool | None) -> alt.Chart | NotAvailable:
    """HEBO's trials: each trial's score, and the best so far as a step line."""
    if isinstance(tuning, NotAvailable):
        return tuning
    scored = pd.DataFrame([{"trial": t.number, "score": t.score, "kind": t.kind} for t in tuning.trials
                           if t.score is not None and t.error is None])
    if scored.empty:
        return NotAvailable("every trial failed: no score to draw")
    best = pd.DataFrame([{"trial": t.number, "best so far": t.best_so_far} for t in tuning.trials if t.best_so_far is not None])
    x = alt.X("trial:Q", title="trial", axis=alt.Axis(tickMinStep=1))
    title = _score_title(higher_is_better)
    points = alt.Chart(scored).mark_circle(size=70).encode(
        x=x, y=alt.Y("score:Q", scale=alt.Scale(zero=False), title=title),
        color=alt.Color("kind:N", scale=_scale(TRIAL_COLOURS, scored["kind"]), title="trial"))
    line = alt.Chart(best).mark_line(interpolate="step-after", color="#1f2933").encode(x=x, y=alt.Y("best so far:Q", title=title))
    return _sized(line + points, WIDE, FIGURE_HEIGHT)


def blend_chart(blend: list[Blend] | NotAvailable, higher_is_better: bool | None) -> alt.Chart | NotAvailable:
    """Per target: every single model's CV score and each blender's nested-CV score."""
    if isinstance(blend, NotAvailable):
        return blend
    rows = [{"target": b.target, "solution": name, "score": score, "kind": "single model"}
            for b in blend for name, score in b.single_scores.items() if score is not None]
    rows += [{"target": b.target, "solution": f"blend: {name}", "score": score, "kind": "blend (nested CV)"}
             for b in blend for name, score in b.blend_scores.items() if score is not None]
    if not rows:
        return NotAvailable("the blend record holds no score")
    frame = pd.DataFrame(rows)
    kinds = list(BLEND_KINDS)
    # Colour and shape share their field, scale domain and title, so Vega-Lite draws one legend whose
    # symbols are the marks' own (a circle legend beside square marks misleads).
    chart = alt.Chart(frame).mark_point(filled=True, size=120, opacity=0.9).encode(
        x=alt.X("score:Q", scale=alt.Scale(zero=False), title=_score_title(higher_is_better)),
        y=alt.Y("solution:N", sort=alt.EncodingSortField("score", order="descending" if higher_is_better is not False else "ascending"), title=None),
        color=alt.Color("kind:N", scale=alt.Scale(domain=kinds, range=[c for c, _ in BLEND_KINDS.values()]), title=None),
        shape=alt.Shape("kind:N", scale=alt.Scale(domain=kinds, range=[s for _, s in BLEND_KINDS.values()]), title=None))
    if frame["target"].nunique() > 1:
        # A faceted chart cannot be fitted to a width: its panel is sized to leave room for labels and legend.
        return (chart.properties(width=WIDE - 320, height=24 * int(frame.groupby("target").size().max()))
                .facet(row=alt.Row("target:N", title=None))
                .configure_axis(labelFontSize=12, titleFontSize=12).configure_legend(labelFontSize=12))
    return _sized(chart, WIDE, max(90, 26 * len(frame)))


def timeline_chart(timeline: Timeline | NotAvailable, higher_is_better: bool | None) -> alt.Chart | NotAvailable:
    """The best validation score against wall-clock seconds, from the first (constant) submission
    to the final one; each adopted improvement is a point coloured by its model (a legend, not text
    labels: two adoptions close in time would draw their names over each other)."""
    if isinstance(timeline, NotAvailable):
        return timeline
    points = pd.DataFrame([{"seconds": p.seconds, "score": p.score, "model": p.model or "not recorded"} for p in timeline.points])
    steps = points[["seconds", "score"]]
    if timeline.end_s is not None and timeline.end_s > float(points["seconds"].max()):
        steps = pd.concat([steps, pd.DataFrame([{"seconds": timeline.end_s, "score": float(points["score"].iloc[-1])}])])
    x = alt.X("seconds:Q", axis=alt.Axis(title="seconds since the solver started", tickCount=10, labelOverlap=True, labelFlush=True))
    y = alt.Y("score:Q", scale=alt.Scale(zero=False), title=_score_title(higher_is_better))
    line = alt.Chart(steps).mark_line(interpolate="step-after", color="#9aa5b1").encode(x=x, y=y)
    models = list(dict.fromkeys(points["model"]))  # in the order they were adopted
    dots = alt.Chart(points).mark_point(size=110, filled=True, opacity=1).encode(
        x=x, y=y, color=alt.Color("model:N", scale=alt.Scale(domain=models, scheme="tableau10"), title="adopted model"),
        shape=alt.Shape("model:N", scale=alt.Scale(domain=models), title="adopted model"))
    return _sized(line + dots, WIDE, FIGURE_HEIGHT)


def features_chart(features: list[FeatureColumn] | NotAvailable) -> alt.Chart | NotAvailable:
    """How many input columns of each kind the setup's training maps hold."""
    if isinstance(features, NotAvailable):
        return features
    frame = pd.DataFrame([{"kind": f.kind} for f in features]).value_counts("kind").reset_index(name="columns")
    chart = alt.Chart(frame).mark_bar(color="#2b6cb0").encode(
        x=alt.X("columns:Q", axis=_count_axis("columns")), y=alt.Y("kind:N", sort="-x", title=None))
    return _sized(chart, HALF, max(60, 26 * len(frame)))


def target_chart(target: TargetDistribution) -> alt.Chart | NotAvailable:
    """A classification target's class counts, or a regression target's histogram."""
    if target.bins:
        frame = pd.DataFrame(target.bins, columns=["from", "to", "rows"])
        # Ticks at round values, not at every bin edge, and none pushed past the end of the axis.
        x = alt.X("from:Q", bin="binned", axis=alt.Axis(title=target.column, tickCount=6, labelOverlap=True, labelFlush=True))
        chart = alt.Chart(frame).mark_bar(color="#2b6cb0").encode(x=x, x2="to:Q", y=alt.Y("rows:Q", axis=_count_axis("training rows")))
        return _sized(chart, HALF, FIGURE_HEIGHT - 40)
    if target.classes:
        frame = pd.DataFrame(target.classes, columns=["class", "rows"])
        chart = alt.Chart(frame).mark_bar(color="#2b6cb0").encode(
            x=alt.X("rows:Q", axis=_count_axis("training rows")), y=alt.Y("class:N", sort="-x", title=target.column))
        return _sized(chart, HALF, max(50, 22 * len(frame)))
    return NotAvailable(f"{target.column} has no value in the training rows")


def _drawn(title: str, build: Callable[[], alt.Chart | NotAvailable]) -> Figure:
    chart = section(f"the figure '{title}'", build)
    return figure(title, chart)


def run_figures(run: RunData) -> dict[str, Figure | list[Figure]]:
    """Every figure of the run report by its place on the page."""
    solver = run.solver
    higher = None if isinstance(solver, NotAvailable) else solver.higher_is_better

    def of_solver(piece: str, draw: Callable[..., alt.Chart | NotAvailable]) -> Callable[[], alt.Chart | NotAvailable]:
        if isinstance(solver, NotAvailable):
            return lambda: solver
        return lambda: draw(getattr(solver, piece), higher)

    setup: SetupData = run.setup
    targets = run.data.targets
    return {
        "setup": _drawn("seconds per setup stage (all attempts), by outcome", lambda: setup_chart(setup.stages)),
        "race": _drawn("the race: fold scores (dots) and cross-validated score (diamond) per family", of_solver("race", race_chart)),
        "tuning": _drawn("HEBO's trials: score per trial and the best so far", of_solver("tuning", tuning_chart)),
        "blend": _drawn("the blend: single models' CV scores and the blenders' nested-CV scores", of_solver("blend", blend_chart)),
        "timeline": _drawn("best validation score against wall-clock time, first to final submission", of_solver("timeline", timeline_chart)),
        "features": _drawn("input columns by kind", lambda: features_chart(run.data.features)),
        "targets": [] if isinstance(targets, NotAvailable) else
                   [_drawn(f"distribution of {t.column} ({t.task}) over the training rows", lambda t=t: target_chart(t)) for t in targets],
    }


