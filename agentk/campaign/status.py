"""`agentk campaign status DIR`: what ran, what is next, and why."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from agentk.campaign.state import CampaignFolder, CampaignState, TaskStatus
from agentk.report.page import REPORT_FILE

STATUS_STYLE = {
    TaskStatus.SOLVED: "green", TaskStatus.FAILED: "yellow", TaskStatus.GAVE_UP: "red",
    TaskStatus.VANISHED: "red", TaskStatus.RUNNING: "cyan", TaskStatus.PENDING: "",
}
RECENT_DECISIONS = 10


def fmt_score(value: object, digits: int = 5) -> str:
    return f"{value:.{digits}f}" if isinstance(value, (int, float)) else "—"


def task_table(state: CampaignState) -> Table:
    table = Table(title=f"campaign {state.name}: {len(state.tasks)} tasks, {state.round} runs, "
                        f"{state.elapsed_s / 60:.1f} min, {state.tokens} LLM tokens")
    for column in ("task", "status", "attempts", "validation", "test", "time s", "tokens", "note"):
        table.add_column(column, overflow="fold")
    for task in state.tasks.values():
        last = task.last
        table.add_row(
            task.key,
            Text(str(task.status), style=STATUS_STYLE.get(task.status, "")),
            str(len(task.attempts)),
            fmt_score(last.validation_score if last else None),
            fmt_score(last.test_score if last else None),
            fmt_score(sum(a.elapsed_s or 0.0 for a in task.attempts), 0) if task.attempts else "—",
            str(sum(a.tokens for a in task.attempts)),
            (task.note or (last.error if last and last.ok is False else "") or "")[:120],
        )
    return table


def decisions_table(folder: CampaignFolder) -> Table | None:
    decisions = folder.decisions()
    if not decisions:
        return None
    table = Table(title=f"choices (last {min(len(decisions), RECENT_DECISIONS)} of {len(decisions)})")
    for column in ("round", "chosen", "order", "score", "why"):
        table.add_column(column, overflow="fold")
    for record in decisions[-RECENT_DECISIONS:]:
        table.add_row(str(record.get("round")), str(record.get("chosen")), str(record.get("order")),
                      fmt_score(record.get("score"), 3), str(record.get("reason") or ""))
    return table


def render_status(folder: CampaignFolder, state: CampaignState, next_choice: object) -> RenderableType:
    parts: list[RenderableType] = [task_table(state)]
    decisions = decisions_table(folder)
    if decisions is not None:
        parts.append(decisions)
    if isinstance(next_choice, str):
        parts.append(Text(f"next: {next_choice}"))
    else:
        chosen = getattr(next_choice, "task_id", "?")
        reason = getattr(next_choice, "reason", "")
        parts.append(Text(f"next: {chosen} — {reason}"))
    report = folder.root / REPORT_FILE
    if report.is_file():
        parts.append(Text(f"report: {report}"))
    return Group(*parts)
