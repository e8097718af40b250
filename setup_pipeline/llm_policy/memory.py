"""Gathering the working-memory entries for one stage from the workspace (the only reads the
LLM policy does besides the data view). Entries follow Agent K's names (agentk.llm.ENTRY_NAMES).
"""

from __future__ import annotations

import json
from pathlib import Path

from agentk.core.artifacts import SetupLayout
from agentk.llm import WorkingMemory
from agentk.core.records.workspace import Workspace
from setup_pipeline.policy import StageContext
from setup_pipeline.stages import StageSpec

OUTPUT_TAIL_CHARS = 1500


def stage_content(workspace: Workspace, stage: StageSpec) -> str | None:
    return stage.last_content(workspace.setup)


def sandbox_output(workspace: Workspace, stage_name: str) -> str | None:
    """The tail of the stage's last sandbox run (stdout then stderr), if any."""
    parts = []
    for stream in ("stdout", "stderr"):
        path = workspace.logs / f"stage_{stage_name}.{stream}.txt"
        if path.is_file():
            text = path.read_text(encoding="utf-8", errors="replace").strip()
            if text:
                parts.append(text)
    joined = "\n".join(parts)
    return joined[-OUTPUT_TAIL_CHARS:] if joined else None


def _read(path: Path) -> str | None:
    return path.read_text(encoding="utf-8", errors="replace") if path.is_file() else None


def _plan_text(path: Path) -> str | None:
    text = _read(path)
    if text is None:
        return None
    try:
        return json.dumps(json.loads(text), indent=1)
    except ValueError:
        return text


def stage_memory(stage: StageSpec, ctx: StageContext, data_view: str, tips: str | None = None) -> WorkingMemory:
    """The entries a prompt for `stage` is rendered from. The stage's own earlier output, its
    sandbox output, the errors and `tips` (past fixes of similar errors) appear only when the
    stage is being retried."""
    setup = SetupLayout(ctx.workspace.setup)
    memory = WorkingMemory()
    entries = {
        "TASK-SUMMARY": _read(setup.summary) if stage.name != "summarise" else None,
        "DATA-VIEW": data_view,
        "MODALITIES": _read(setup.modalities) if stage.name not in {"summarise", "modalities"} else None,
        "PLAN": _plan_text(setup.plan) if stage.kind == "code" else None,
    }
    retry = bool(ctx.last_error or ctx.meta_error)
    if retry:
        entries["PREVIOUS-CODE"] = stage_content(ctx.workspace, stage)
        entries["ERROR"] = ctx.last_error
        if ctx.meta_thought:
            entries["META-ERROR-THOUGHT"] = ctx.meta_thought
        elif ctx.meta_error and ctx.meta_error != ctx.last_error:
            entries["META-ERROR-THOUGHT"] = ctx.meta_error
        entries["CODE-OUTPUT"] = sandbox_output(ctx.workspace, stage.name) if stage.kind == "code" else None
        entries["TIPS"] = tips
    for name, text in entries.items():
        if text and text.strip():
            memory.set(name, text)
    return memory
