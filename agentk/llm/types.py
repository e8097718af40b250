"""Values that cross the LLM layer: messages in, completions out, and the per-stage token ledger."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from pydantic import BaseModel

from agentk.llm.errors import TokenBudgetExceeded

Role = Literal["system", "user", "assistant"]


@dataclass(frozen=True)
class Message:
    role: Role
    content: str

    def to_dict(self) -> dict[str, str]:
        return {"role": self.role, "content": self.content}


def system(content: str) -> Message:
    return Message("system", content)


def user(content: str) -> Message:
    return Message("user", content)


def assistant(content: str) -> Message:
    return Message("assistant", content)


def as_messages(messages: Iterable[Message | dict[str, str]]) -> list[Message]:
    """Accept plain OpenAI-style dicts too, so callers need not import Message."""
    out: list[Message] = []
    for item in messages:
        out.append(item if isinstance(item, Message) else Message(item["role"], item["content"]))  # type: ignore[arg-type]
    return out


class Completion(BaseModel):
    """One model reply; `cached=True` means it was replayed from disk and cost nothing."""

    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    model: str = ""
    finish_reason: str | None = None
    cached: bool = False

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


class Backend(Protocol):
    """One provider: turn messages into a completion, or raise an LLMError."""

    name: str

    def complete(self, messages: Sequence[Message], *, stage: str) -> Completion: ...


class StageUsage(BaseModel):
    calls: int = 0
    cached_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


class TokenLedger:
    """Tokens paid per stage, and the run's budget. Cached replays count as calls but cost 0."""

    def __init__(self, budget: int | None = None) -> None:
        self.budget = budget
        self.stages: dict[str, StageUsage] = {}
        self._lock = threading.Lock()  # a policy may query from worker threads

    def add(self, stage: str, completion: Completion) -> None:
        with self._lock:
            usage = self.stages.setdefault(stage, StageUsage())
            usage.calls += 1
            if completion.cached:
                usage.cached_calls += 1
                return
            usage.prompt_tokens += completion.prompt_tokens
            usage.completion_tokens += completion.completion_tokens
            usage.latency_s += completion.latency_s

    @property
    def prompt_tokens(self) -> int:
        return sum(u.prompt_tokens for u in self.stages.values())

    @property
    def completion_tokens(self) -> int:
        return sum(u.completion_tokens for u in self.stages.values())

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    @property
    def remaining(self) -> int | None:
        return None if self.budget is None else max(0, self.budget - self.total_tokens)

    def check(self, stage: str = "") -> None:
        """Before a paid call: refuse once the budget is spent. The call that crosses the line is
        allowed to finish (its tokens are unknown until it returns), so overshoot is one reply."""
        if self.budget is not None and self.total_tokens >= self.budget:
            where = f" (next call was for stage {stage!r})" if stage else ""
            raise TokenBudgetExceeded(
                f"LLM token budget spent: {self.total_tokens} of {self.budget} tokens used{where}; "
                "raise token_budget or resume to replay cached replies"
            )

    def to_dict(self) -> dict[str, Any]:
        return {
            "budget": self.budget,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.total_tokens,
            "stages": {name: u.model_dump() for name, u in self.stages.items()},
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any], budget: int | None) -> TokenLedger:
        """Reload a saved ledger so a resumed run keeps counting against its budget (this run's
        config decides the budget, not the saved one)."""
        ledger = cls(budget)
        for name, usage in (data.get("stages") or {}).items():
            ledger.stages[name] = StageUsage.model_validate(usage)
        return ledger
