"""Credit assignment for failed meta checks (Agent K, section 3.1.3).

A meta check covers several stages; when it fails, rewriting all of them wastes attempts and can
break stages that were right. The model first thinks about the error (META-ERROR-THOUGHT), then
judges each covered stage's code on its own (CA-THOUGHT, JSON {"at_fault": bool, "reason": str}).
Only the stages judged at fault are rewritten; if none is, all are (the conservative choice).
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field

from agentk.llm import (
    LLMError,
    MalformedJSON,
    Message,
    WorkingMemory,
    ask_json,
    system,
    user,
)
from agentk.core.records.workspace import Workspace
from setup_pipeline.llm_policy.memory import stage_content
from setup_pipeline.llm_policy.policy import QueryClient
from setup_pipeline.policy import Verdict
from setup_pipeline.stages import StageSpec

SYSTEM = (
    "You are a Kaggle grandmaster debugging a competition setup. A check that spans several "
    "pipeline stages failed; you find which stage's code caused it."
)
CA_STAGE = "credit_assignment"


class CAVerdict(BaseModel):
    model_config = ConfigDict(extra="ignore")
    at_fault: bool
    reason: str = Field(default="", max_length=2000)


class MetaErrorThoughtPrompt:
    """Step 1: what does the error mean, and what could cause it?"""

    TEMPLATE = (
        "{memory}\nThe stages above ran in this order: {names}. Think about the ERROR: what does it "
        "say went wrong, and which kinds of mistake in which stages could produce it? Answer in at "
        "most 5 sentences, no code."
    )

    @classmethod
    def build(cls, meta_error: str, stages: list[tuple[str, str]]) -> list[Message]:
        memory = WorkingMemory()
        memory.set("ERROR", meta_error)
        for name, code in stages:
            memory.set(f"CODE-{_entry(name)}", f"```python\n{code.strip()}\n```")
        return [system(SYSTEM), user(cls.TEMPLATE.format(memory=memory.render(), names=", ".join(n for n, _ in stages)))]

    @staticmethod
    def parse(reply: str) -> str:
        return reply.strip()


class CAThoughtPrompt:
    """Step 2, per stage: did this stage's code cause the error?"""

    TEMPLATE = (
        "{memory}\nConsider only stage `{name}` and its CODE. Did this code cause the ERROR (so it must be "
        "rewritten), or is it correct and the fault lies elsewhere? Answer with one JSON object in a "
        '```json block: {{"at_fault": true or false, "reason": "one sentence"}}'
    )

    @classmethod
    def build(cls, meta_error: str, thought: str, name: str, code: str) -> list[Message]:
        memory = WorkingMemory()
        memory.set("ERROR", meta_error)
        memory.set("META-ERROR-THOUGHT", thought)
        memory.set("CODE", code)
        return [system(SYSTEM), user(cls.TEMPLATE.format(memory=memory.render(), name=name))]

    @staticmethod
    def parse(value: object) -> CAVerdict:
        return CAVerdict.model_validate(value)


@dataclass(frozen=True)
class Blame:
    stage: str
    at_fault: bool
    reason: str


def judge_stages(client: QueryClient, meta_error: str, stages: list[tuple[str, str]]) -> tuple[str, list[Blame]]:
    """The META-ERROR-THOUGHT and one verdict per stage. A stage the model cannot judge (unusable
    JSON) counts as at fault. LLM errors other than unusable replies propagate."""
    thought = MetaErrorThoughtPrompt.parse(client.query(MetaErrorThoughtPrompt.build(meta_error, stages), stage=CA_STAGE).text)
    verdicts: list[Blame] = []
    for name, code in stages:
        try:
            verdict = ask_json(client, CAThoughtPrompt.build(meta_error, thought, name, code), CAThoughtPrompt.parse, stage=CA_STAGE)
        except MalformedJSON as exc:
            verdicts.append(Blame(name, True, f"could not judge: {exc}"))
            continue
        verdicts.append(Blame(name, verdict.at_fault, verdict.reason))
    return thought, verdicts


def assign_blame(client: QueryClient, meta_error: str, stages: list[tuple[str, str]]) -> Verdict:
    """The stages (from `stages`, earliest first) judged to have caused `meta_error`, with the
    model's META-ERROR-THOUGHT. All of them when none is judged at fault or the model cannot be asked."""
    names = [name for name, _ in stages]
    if len(stages) <= 1:
        return Verdict(names)
    try:
        thought, verdicts = judge_stages(client, meta_error, stages)
    except LLMError:
        return Verdict(names)
    at_fault = [v.stage for v in verdicts if v.at_fault]
    return Verdict(at_fault or names, thought)


def covered_code(workspace: Workspace, specs: list[StageSpec]) -> list[tuple[str, str]]:
    """[(stage name, its last output)] for the stages a meta check covers, in the given order:
    the policy's hole for code stages, the file for reasoning stages; stages not yet run are skipped."""
    out = []
    for spec in specs:
        content = stage_content(workspace, spec)
        if content is not None:
            out.append((spec.name, content))
    return out


def _entry(name: str) -> str:
    return "-".join(part.upper() for part in name.replace("_", "-").split("-") if part)
