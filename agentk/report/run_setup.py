"""The run report's setup section: each stage's attempts from logs/attempts.jsonl (written by
`setup_pipeline.mdp`), and what the setup decided and assumed, from setup/plan.json."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agentk.core.artifacts import SetupLayout
from agentk.core.records.workspace import Workspace, json_lines
from agentk.report.page import NotAvailable
from agentk.report.run_section import Missing, Record, as_list, as_text, json_or_empty, number_or_none, section

ATTEMPTS_LINK = Workspace(Path()).attempts_log.as_posix()  # logs/attempts.jsonl, relative to the page


class AttemptRow(Record):
    attempt: int
    passed: bool
    declined: bool = False
    seconds: float | None = None
    problems: list[str] = []
    plan: str = ""


class StageRow(Record):
    name: str
    kind: str  # stage | meta
    attempts: int
    passed: bool
    seconds: float
    failures: list[AttemptRow] = []  # the attempts whose checks failed, with the checks' messages


class Decision(Record):
    what: str
    value: str
    why: list[str] = []  # the evidence lines that mention the value


class SetupData(Record):
    stages: list[StageRow] | NotAvailable
    decisions: list[Decision] | NotAvailable
    assumptions: list[str] | NotAvailable  # what the setup took without proof
    attempts_link: str | None = None


def read_setup(root: Path) -> SetupData:
    attempts = Workspace(root).attempts_log
    return SetupData(
        stages=section(ATTEMPTS_LINK, lambda: _stages(attempts)),
        decisions=section("setup/plan.json", lambda: _decisions(SetupLayout(root / "setup"))),
        assumptions=section("setup/plan.json", lambda: _assumptions(SetupLayout(root / "setup"))),
        attempts_link=ATTEMPTS_LINK if attempts.is_file() else None,
    )


def _stages(path: Path) -> list[StageRow]:
    if not path.is_file():
        raise Missing("logs/attempts.jsonl is missing: no setup attempt was logged")
    rows: dict[tuple[str, str], StageRow] = {}
    for record in json_lines(path):
        name, kind = str(record.get("stage") or "?"), str(record.get("kind") or "stage")
        attempt = AttemptRow(attempt=int(record.get("attempt") or 0), passed=bool(record.get("passed")),
                          declined=bool(record.get("declined")), seconds=number_or_none(record.get("elapsed_s")),
                          problems=[str(p) for p in record.get("problems") or []], plan=str(record.get("plan") or ""))
        row = rows.setdefault((kind, name), StageRow(name=name, kind=kind, attempts=0, passed=False, seconds=0.0))
        # A resumed run numbers its attempts on from the killed one's: the highest number is the count.
        row.attempts = max(row.attempts + 1, attempt.attempt)
        row.passed = attempt.passed  # the latest attempt decides
        row.seconds += attempt.seconds or 0.0
        if not attempt.passed:
            row.failures.append(attempt)
    if not rows:
        raise Missing("logs/attempts.jsonl is empty: no setup attempt was logged")
    return list(rows.values())


def _plan(layout: SetupLayout) -> dict[str, Any]:
    if not layout.plan.is_file():
        raise Missing("setup/plan.json is missing: the plan stage did not pass")
    data = json.loads(layout.plan.read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise Missing("setup/plan.json is not a JSON object")
    return data


def _decisions(layout: SetupLayout) -> list[Decision]:
    """What the setup decided about the data: the plan's facts, each with the evidence lines that
    name it (perception's notes and the metric's evidence)."""
    plan = _plan(layout)
    facts = plan.get("facts") if isinstance(plan.get("facts"), dict) else {}
    evidence = facts.get("evidence") if isinstance(facts.get("evidence"), dict) else {}
    lines = [str(n) for n in facts.get("notes") or []]
    lines += [part.strip() for key, text in evidence.items() if key != "metric" for part in str(text).split(";")]
    lines = list(dict.fromkeys(line for line in lines if line))

    def mentioning(*values: object) -> list[str]:
        names = [str(v) for v in values if v not in (None, "", [])]
        return [line for line in lines if any(name in line for name in names)]

    decisions: list[Decision] = []

    def add(what: str, value: object, why: list[str]) -> None:
        if value not in (None, "", [], {}):
            decisions.append(Decision(what=what, value=as_text(value), why=why))

    train_files = (facts.get("train_table") or {}).get("files") or facts.get("train_file")
    test_files = (facts.get("test_table") or {}).get("files") or facts.get("test_file")
    add("training rows", train_files, mentioning(*as_list(train_files)))
    add("test rows", test_files, mentioning(*as_list(test_files)))
    sample = plan.get("sample_submission") or facts.get("sample_submission")
    add("sample submission", sample, mentioning(sample))
    id_column = plan.get("id_column") or facts.get("id_column")
    ids = [id_column, facts.get("train_id_column"), facts.get("test_id_column")]
    add("id column", " / ".join(dict.fromkeys(str(i) for i in ids if i)), mentioning(*(f"'{i}'" for i in ids if i)))
    targets = plan.get("target_columns") or [t.get("column") for t in facts.get("targets") or [] if isinstance(t, dict)]
    task = plan.get("task_type")
    add("target", f"{as_text(targets)} ({task})" if task else targets, mentioning(*(f"'{t}'" for t in as_list(targets))))
    metric = plan.get("metric")
    higher = plan.get("higher_is_better")
    direction = "" if higher is None else (", higher is better" if higher else ", lower is better")
    add("metric", f"{metric}{direction}" if metric else None, [str(evidence["metric"])] if evidence.get("metric") else [])
    add("submission", _submission_text(plan, facts), [])
    add("input modalities", facts.get("input_modalities") or _modalities(layout), [])
    dropped = facts.get("dropped_columns")
    if isinstance(dropped, dict) and dropped:
        add("dropped columns", ", ".join(dropped), [f"{column}: {why}" for column, why in dropped.items()])
    if not decisions:
        raise Missing("setup/plan.json records no decision about the files, ids, target or metric")
    return decisions


def _submission_text(plan: dict[str, Any], facts: dict[str, Any]) -> str | None:
    columns = plan.get("submission_columns") or facts.get("submission_columns")
    form = facts.get("submission_format")
    if not columns and not form:
        return None
    return f"{form or ''} {as_text(columns) if columns else ''}".strip()


def _modalities(layout: SetupLayout) -> list[str]:
    data = json_or_empty(layout.modalities)
    return [str(m) for m in data.get("input_modalities") or []]


def _assumptions(layout: SetupLayout) -> list[str]:
    return [as_text(line) for line in _plan(layout).get("assumptions") or []]
