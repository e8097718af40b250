"""`agentk bench`: run competitions and report, per competition, setup attempts per stage, time to a
valid submission, the validation and test scores, and the best constant prediction's score."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from rich.table import Table

from agentk.baselines import constant_score
from agentk.config import RunConfig
from agentk.errors import AgentKError, SourceError
from agentk.sources import load_competition


def expand_sources(sources: list[str]) -> list[str]:
    """Each argument is a competition folder or a folder whose sub-folders are competitions."""
    if not sources:
        from agentk.demo import make_demo_competition

        return [str(make_demo_competition(Path("workspaces/_sources/demo").resolve()))]
    expanded: list[str] = []
    for source in sources:
        path = Path(source)
        try:
            load_competition(path)
            expanded.append(str(path))
            continue
        except SourceError:
            if not path.is_dir():
                raise
        children = [str(child) for child in sorted(path.iterdir()) if child.is_dir() and _loads(child)]
        if not children:
            raise SourceError(f"{path} is neither a competition folder nor a folder of competitions")
        expanded.extend(children)
    return expanded


def _loads(path: Path) -> bool:
    try:
        load_competition(path)
        return True
    except SourceError:
        return False


def run_bench(sources: list[str], config: RunConfig) -> list[dict[str, Any]]:
    from agentk.runner import run_competition

    rows = []
    for source in sources:
        started = time.monotonic()
        try:
            result = run_competition(source, config).result
            error = None
        except AgentKError as exc:
            result, error = {}, str(exc)
        competition = load_competition(source)
        rows.append(
            {
                "competition": competition.id,
                "valid_submission": bool(result.get("valid_submission")),
                "metric": result.get("test_metric") or result.get("metric"),
                "validation_score": result.get("validation_score"),
                "test_score": result.get("test_score"),
                "constant_score": constant_score(competition),
                "setup_attempts": {k: v["attempts"] for k, v in result.get("setup", {}).items()},
                "time_to_valid_submission_s": round(time.monotonic() - started, 1) if result.get("valid_submission") else None,
                "model": result.get("model"),
                "error": error,
            }
        )
    return rows


def render_table(rows: list[dict[str, Any]]) -> Table:
    table = Table(title="agentk bench")
    for column in ("competition", "metric", "setup attempts (stages)", "valid", "time to valid (s)", "validation", "test", "constant"):
        table.add_column(column)
    for row in rows:
        attempts = row["setup_attempts"]
        extra = sum(attempts.values()) - len(attempts)
        table.add_row(
            row["competition"],
            str(row["metric"]),
            f"{sum(attempts.values())} ({len(attempts)})" + (f", {extra} retries" if extra else ""),
            "yes" if row["valid_submission"] else f"no: {row['error']}",
            _fmt(row["time_to_valid_submission_s"], 1),
            _fmt(row["validation_score"]),
            _fmt(row["test_score"]),
            _fmt(row["constant_score"]),
        )
    return table


def _fmt(value: object, digits: int = 4) -> str:
    return f"{value:.{digits}f}" if isinstance(value, (int, float)) else "—"
