"""What every report page shares: figures drawn with Altair and inlined as SVG (no script, no
network, printable), "not available" in place of a missing piece, the Jinja2 templates, and the
atomic write of the page.

Figures are SVG rather than an interactive plotting library's HTML: a page with a hundred tasks
stays a few hundred KB, opens at once, prints, and runs no JavaScript at all.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import altair as alt
import jinja2
import vl_convert

from agentk.core.records.workspace import atomic_write_text

REPORT_FILE = "report.html"
# Medal colours as Kaggle draws them, shared by every figure and table that shows a medal.
MEDAL_COLOURS = {"gold": "#d4af37", "silver": "#a8a9ad", "bronze": "#cd7f32", "none": "#9aa5b1"}
FIGURE_WIDTH = 560
FIGURE_HEIGHT = 240


@dataclass(frozen=True)
class NotAvailable:
    """A piece of a report that could not be drawn, and why (shown in its place)."""

    reason: str

    def __bool__(self) -> bool:  # templates write `{% if piece %}` for "there is something to show"
        return False


T = TypeVar("T")


def guarded(what: str, build: Callable[[], T]) -> T | NotAvailable:
    """`build()`, or its error as "not available": each section of a page is built on its own, so
    one section's failure is shown in its place and the rest of the page is still written."""
    try:
        return build()
    except Exception as exc:  # noqa: BLE001 - one section's failure is shown in its place, never raised
        return NotAvailable(f"{what} could not be built: {type(exc).__name__}: {exc}")


@dataclass(frozen=True)
class Figure:
    title: str
    svg: str  # inline <svg> markup, or "" with `missing` set
    missing: NotAvailable | None = None


def figure(title: str, chart: alt.TopLevelMixin | NotAvailable) -> Figure:
    """A chart rendered to inline SVG; a NotAvailable, or a chart that cannot render, becomes the
    figure's "not available" note instead of an error (a report never fails a run)."""
    if isinstance(chart, NotAvailable):
        return Figure(title, "", chart)
    try:
        # Unvalidated: Altair's schema check cost a run's report more CPU than drawing three figures;
        # vl-convert still refuses a spec it cannot draw.
        svg = vl_convert.vegalite_to_svg(chart.to_json(validate=False))
    except Exception as exc:  # noqa: BLE001 - a figure that cannot render is reported, not raised
        return Figure(title, "", NotAvailable(f"the figure could not be drawn: {type(exc).__name__}: {exc}"))
    return Figure(title, svg)


_ENV = jinja2.Environment(
    loader=jinja2.PackageLoader("agentk.report", "templates"),
    autoescape=jinja2.select_autoescape(["html", "j2"]),
    undefined=jinja2.StrictUndefined,  # a template naming a missing field is a bug, not a blank
    trim_blocks=True,
    lstrip_blocks=True,
)


def fmt(value: Any, digits: int = 5) -> str:
    """Numbers as the console shows them; None as a dash."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        text = f"{value:.{digits}g}" if abs(value) >= 1e5 or (value and abs(value) < 1e-3) else f"{value:.{digits}f}".rstrip("0").rstrip(".")
        # -0.0, or a tiny negative rounded away, reads as a sign with no number behind it.
        return text[1:] if text.startswith("-") and float(text) == 0 else text
    return str(value)


_ENV.filters["fmt"] = fmt


def render(template: str, **context: Any) -> str:
    return _ENV.get_template(template).render(medal_colours=MEDAL_COLOURS, **context)


def write_page(path: Path, html: str) -> Path:
    atomic_write_text(path, html)
    return path


def utc_minute(moment: datetime | None) -> str:
    """A time as the header shows it: to the minute, in UTC (a naive time is taken as UTC)."""
    if moment is None:
        return "—"
    moment = moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")
