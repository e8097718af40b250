"""The run page's side tables (issue #24): what the setup joined and what the solver kept.

Each table the setup joined is a row of setup/plan.json `joins` (its keys, one row per key or
several, the share of train and test rows matched, the table a chained join went through, the
columns left out as leaks); a table left out whole, because every column it would bring gives the
answer away, is only an evidence line of the plan ("side table left out: ..."). What the solver
did with each block is solve/solve_result.json `joins` (`solve_pipeline.inputs.join_selection`): kept or
dropped, with the fast CV with and without it. A run whose plan joins no side table has no section.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentk.core.artifacts import SetupLayout
from agentk.core.records.results import SolveResult
from agentk.report.page import NotAvailable
from agentk.report.run_section import Record, as_list, json_or_empty, number_or_none, section

LEFT_OUT = "side table left out: "  # relations.py's evidence line for a table every column of which leaks


class JoinRow(Record):
    table: str
    keys: str  # main column(s) ~ the side table's, e.g. "store ~ Store"
    kind: str  # one-to-one | one-to-many | "" when left out before joining
    via: str | None = None  # a chained join: the side table it goes through
    match_train: float | None = None
    match_test: float | None = None
    decision: str  # kept | dropped | left out | not checked
    score_with: float | None = None
    score_without: float | None = None
    why: str = ""
    left_out: list[str] = []  # columns of a joined table left out as leaks


class JoinsData(Record):
    rows: list[JoinRow]
    check: str  # the solver's check as a whole: how long it took and its baseline, or why it did not run


def read_joins(root: Path, solve: SolveResult | NotAvailable) -> JoinsData | NotAvailable | None:
    """The section's rows; None when the plan names no side table (joined or left out)."""
    plan = json_or_empty(SetupLayout(Path(root) / "setup").plan)
    facts = plan.get("facts") if isinstance(plan.get("facts"), dict) else {}
    joins = [j for j in as_list(plan.get("joins")) if isinstance(j, dict)]
    left_out = [str(n)[len(LEFT_OUT):] for n in as_list(facts.get("notes")) if str(n).startswith(LEFT_OUT)]
    if not joins and not left_out:
        return None
    return section("the joins of setup/plan.json", lambda: _joins(joins, left_out, solve))


def _check(solve: SolveResult | NotAvailable) -> tuple[dict[str, Any], str]:
    """Per table, the solver's decision; and the check in words."""
    if isinstance(solve, NotAvailable):
        return {}, f"not checked: {solve.reason}"
    record = solve.joins
    if not isinstance(record, dict):
        return {}, "not checked: this solve recorded no join check"
    if record.get("skipped"):
        return {}, f"every joined table kept: {record['skipped']}"
    tables = record.get("tables") if isinstance(record.get("tables"), dict) else {}
    base, seconds = number_or_none(record.get("baseline")), number_or_none(record.get("seconds"))
    words = "a fast LightGBM's CV with every joined table, then without each"
    if base is not None:
        words += f": {base:.5g} with all"
    if seconds is not None:
        words += f", in {seconds:.3g} s"
    return tables, words


def _joins(joins: list[dict[str, Any]], left_out: list[str], solve: SolveResult | NotAvailable) -> JoinsData:
    decisions, check = _check(solve)
    rows = []
    for join in joins:
        table = str(join.get("table"))
        ours, theirs = as_list(join.get("on")), as_list(join.get("other_on"))
        match = join.get("match") if isinstance(join.get("match"), dict) else {}
        row = JoinRow(table=table, keys=" + ".join(f"{m} ~ {t}" for m, t in zip(ours, theirs)), kind=str(join.get("kind") or ""),
                      via=join.get("via") or None, match_train=number_or_none(match.get("train")),
                      match_test=number_or_none(match.get("test")), decision="kept",
                      left_out=[str(c) for c in (join.get("left_out") or {})] if isinstance(join.get("left_out"), dict) else [])
        decided = decisions.get(table)
        if isinstance(decided, dict):
            row.decision = "kept" if decided.get("kept") else "dropped"
            row.score_with, row.score_without = number_or_none(decided.get("score_with")), number_or_none(decided.get("score_without"))
            row.why = str(decided.get("why") or "")
        elif check.startswith("not checked"):
            row.decision, row.why = "not checked", check.removeprefix("not checked: ")
        else:
            row.why = check if check.startswith("every") else "not in the solver's check"
        rows.append(row)
    for line in left_out:
        table, _, why = line.partition(": ")
        rows.append(JoinRow(table=table, keys="", kind="", decision="left out", why=why))
    return JoinsData(rows=rows, check=check)
