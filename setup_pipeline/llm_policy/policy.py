"""The LLM setup policy (Agent K, sections 3.1.2-3.1.3) and the hybrid expert+LLM policy.

`LLMPolicy(client).act(stage, ctx)` renders the stage's prompt from working memory, queries the
model (`variant=ctx.attempt`, so a retry of an identical prompt is a fresh sample, not a cache
replay), parses the reply and returns `Fill(content, plan)`; a reply it cannot use, or a spent
token budget, becomes `Decline(reason)`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import Protocol

from agentk.core.artifacts import SetupLayout
from agentk.core.records.config import PolicyName
from agentk.llm import (
    BackendNotInstalled,
    Completion,
    LLMAuthError,
    LLMConfigError,
    LLMError,
    LLMUnreachable,
    MalformedJSON,
    Message,
    ModelNotServed,
    NoCodeInReply,
    TokenBudgetExceeded,
    ask_code,
    ask_json,
)
from curriculum.experience import ExperienceStore, render_tips, similar_fixes
from setup_pipeline.llm_policy.data_view import build_data_view
from setup_pipeline.llm_policy.memory import stage_memory
from setup_pipeline.llm_policy.prompts import (
    HOLE_MARK,
    MODALITIES_PROMPT,
    PLAN_PROMPT,
    CodePrompt,
    JsonStagePrompt,
    SummarisePrompt,
    contracts_for,
)
from setup_pipeline.policy import Action, Decline, Fill, Policy, StageContext
from setup_pipeline.stages import StageSpec

_JSON_PROMPTS: dict[str, JsonStagePrompt] = {"modalities": MODALITIES_PROMPT, "plan": PLAN_PROMPT}


class QueryClient(Protocol):
    def query(self, messages: Iterable[Message | dict[str, str]], *, stage: str, variant: int = 0) -> Completion: ...


class _Session:
    """One act(): pins the sample `variant` for every query (repairs included) and keeps the
    last reply, so the plan can be read from the same reply the code came from."""

    def __init__(self, client: QueryClient, variant: int) -> None:
        self.client = client
        self.variant = variant
        self.last_text = ""

    def query(self, messages: Iterable[Message | dict[str, str]], *, stage: str, variant: int | None = None) -> Completion:
        completion = self.client.query(messages, stage=stage, variant=self.variant if variant is None else variant)
        self.last_text = completion.text
        return completion


class LLMPolicy:
    name = PolicyName.LLM

    def __init__(
        self,
        client: QueryClient,
        *,
        data_view_chars: int = 6000,
        entry_chars: int = 4000,
        experience: ExperienceStore | None = None,
        competition_id: str | None = None,
        tips_k: int = 3,
        tips_chars: int = 2500,
        tips_max_distance: float | None = 0.5,
    ) -> None:
        self.client = client
        self.data_view_chars = data_view_chars
        self.entry_chars = entry_chars
        # Experience memory (Agent K D.2): on a retry, fixes of similar errors in other competitions.
        self.experience = experience
        self.competition_id = competition_id
        self.tips_k = tips_k
        self.tips_chars = tips_chars
        # Cosine distance; beyond it a "similar" error is a different error and its fix misleads.
        self.tips_max_distance = tips_max_distance
        self._views: dict[Path, str] = {}

    def act(self, stage: StageSpec, ctx: StageContext) -> Action:
        session = _Session(self.client, variant=ctx.attempt)
        try:
            return self._act(stage, ctx, session)
        except NoCodeInReply as exc:
            return Decline(f"the model wrote no code for stage {stage.name}: {exc}", retryable=True)
        except MalformedJSON as exc:
            return Decline(f"the model gave no valid JSON for stage {stage.name}: {exc}", retryable=True)
        except TokenBudgetExceeded as exc:
            return Decline(f"the LLM token budget is spent: {exc}")
        except _FATAL as exc:
            # Asking again cannot help: wrong key or model, nothing listening, no backend installed.
            return Decline(f"{UNUSABLE_LLM}: {exc}")
        except LLMError as exc:
            return Decline(f"the LLM call failed at stage {stage.name}: {type(exc).__name__}: {exc}", retryable=True)

    def data_view(self, raw: Path) -> str:
        if raw not in self._views:
            self._views[raw] = build_data_view(raw, max_chars=self.data_view_chars)
        return self._views[raw]

    def messages(self, stage: StageSpec, ctx: StageContext) -> list[Message]:
        """The prompt for this stage and attempt (exposed for logging and tests)."""
        memory = stage_memory(stage, ctx, self.data_view(ctx.workspace.raw), tips=self.tips(stage, ctx))
        if stage.kind == "text":
            description = (ctx.workspace.raw / "description.md").read_text(encoding="utf-8", errors="replace")
            return SummarisePrompt.build(memory, description)
        if stage.kind == "json":
            return self._json_prompt(stage).build(memory, stage.goal)
        template = stage.render(HOLE_MARK)
        return CodePrompt.build(memory, stage.goal, template, stage.required_names, contracts_for(stage.template))

    def tips(self, stage: StageSpec, ctx: StageContext) -> str | None:
        """The TIPS entry for a failed stage, or None without a store, an error or a close match."""
        if self.experience is None or not ctx.last_error:
            return None
        fixes = similar_fixes(
            self.experience, stage.name, ctx.last_error, k=self.tips_k,
            exclude_competition=self.competition_id, max_distance=self.tips_max_distance,
        )
        return render_tips(fixes, max_chars=self.tips_chars) or None

    def _json_prompt(self, stage: StageSpec) -> JsonStagePrompt:
        if stage.name not in _JSON_PROMPTS:
            raise MalformedJSON(f"no JSON schema is known for stage {stage.name!r}")
        return _JSON_PROMPTS[stage.name]

    def _act(self, stage: StageSpec, ctx: StageContext, session: _Session) -> Action:
        messages = self.messages(stage, ctx)
        if stage.kind == "text":
            text = SummarisePrompt.parse(session.query(messages, stage=stage.name).text)
            if not text:
                return Decline(f"the model's summary for stage {stage.name} is empty")
            return Fill(text, plan="summarise the description")
        if stage.kind == "json":
            prompt = self._json_prompt(stage)
            value = ask_json(session, messages, prompt.parse, stage=stage.name)
            content = value.model_dump_json(indent=2, exclude_none=False)
            steps = getattr(value, "steps", None)
            return Fill(content, plan=" ".join(steps)[:600] if steps else f"{stage.name} as JSON")
        code = ask_code(session, messages, stage=stage.name)
        return Fill(code, plan=CodePrompt.plan_of(session.last_text) or f"fill {', '.join(stage.required_names)}")


class HybridPolicy:
    """The expert where it is confident, the LLM elsewhere (Agent K's expert-in-the-loop).

    The expert acts on a stage's first attempt; the LLM acts when the expert declines, and on
    every retry (the expert is deterministic, so its second answer would repeat its first).
    `Fill.plan` starts with "[expert]" or "[llm]" so attempts.jsonl records who acted."""

    name = PolicyName.HYBRID

    def __init__(self, expert: Policy, llm: Policy) -> None:
        self.expert = expert
        self.llm = llm

    def act(self, stage: StageSpec, ctx: StageContext) -> Action:
        declined = ""
        if ctx.attempt <= 1 and not ctx.last_error:
            action = self.expert.act(stage, ctx)
            if isinstance(action, Fill):
                doubt = expert_doubts(stage.name, ctx.workspace.setup)
                if not doubt:
                    return Fill(action.content, plan=_tagged("expert", action.plan))
                return self._second_opinion(stage, ctx, action, doubt)
            declined = action.reason
        action = self.llm.act(stage, ctx)
        if isinstance(action, Decline):
            prefix = f"expert declined ({declined}); " if declined else ""
            return Decline(f"{prefix}llm declined: {action.reason}", retryable=action.retryable)
        why = f"(expert declined: {declined}) " if declined else ""
        return Fill(action.content, plan=_tagged("llm", why + action.plan))


    def _second_opinion(self, stage: StageSpec, ctx: StageContext, draft: Fill, doubt: str) -> Action:
        """A stage the expert filled on an assumption goes to the LLM, with the draft to check."""
        question = (f"The expert policy filled this stage on an assumption it could not verify: {doubt}. "
                    f"Read the description and the data again and write the stage yourself. The expert's draft:\n"
                    f"{draft.content[:4000]}")
        action = self.llm.act(stage, replace(ctx, last_error=question))
        if isinstance(action, Fill):
            return Fill(action.content, plan=_tagged("llm", f"(expert unsure: {doubt}) {action.plan}"))
        if action.reason.startswith(UNUSABLE_LLM):
            return action  # a configured LLM that cannot answer is the user's to fix: say so
        return Fill(draft.content, plan=_tagged("expert", f"{draft.plan} (the LLM gave no second opinion: {action.reason})"))


# Which of the expert's assumptions bear on a stage (plan.json "assumptions" start with the fact).
_DOUBTS = {"metric": ("metric:",), "submission_format": ("ids:",)}


def expert_doubts(stage: str, setup_dir: Path) -> str:
    """The expert's recorded assumptions that this stage depends on ("" when it was sure)."""
    prefixes = _DOUBTS.get(stage)
    plan_path = SetupLayout(setup_dir).plan
    if not prefixes or not plan_path.is_file():
        return ""
    try:
        assumptions = json.loads(plan_path.read_text(encoding="utf-8")).get("assumptions") or []
    except (json.JSONDecodeError, AttributeError):
        return ""
    return "; ".join(a for a in assumptions if isinstance(a, str) and a.startswith(prefixes))


UNUSABLE_LLM = "the LLM cannot be used"
_FATAL = (LLMAuthError, ModelNotServed, LLMConfigError, BackendNotInstalled, LLMUnreachable)


def _tagged(who: str, plan: str) -> str:
    return f"[{who}] {plan}".rstrip()

