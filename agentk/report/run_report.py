"""A run's report: WORKSPACE/report.html, one self-contained page (issue #15, "A run's report").

`agentk report WORKSPACE` writes it, and the runner refreshes it at the end of every run. Nothing a
run leaves (or fails to leave) makes it raise: each piece it cannot show says why instead. Only a
folder that is not a run workspace at all is an error.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from agentk.report.page import REPORT_FILE, NotAvailable, render, write_page
from agentk.report.run_data import read_run
from agentk.report.run_figures import run_figures


def render_run_report(workspace_root: Path) -> str:
    """The page's HTML for the run in `workspace_root`."""
    run = read_run(Path(workspace_root))
    title = run.root.name if isinstance(run.header, NotAvailable) else run.header.competition
    return render("run.html.j2", run=run, figures=run_figures(run), title=title,
                  missing=lambda value: isinstance(value, NotAvailable),
                  generated=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"))


def write_run_report(workspace_root: Path) -> Path:
    """Write (atomically) and return WORKSPACE/report.html; AgentKError when the folder holds no run."""
    html = render_run_report(workspace_root)
    return write_page(Path(workspace_root) / REPORT_FILE, html)
