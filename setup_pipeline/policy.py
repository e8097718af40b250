"""What a setup policy is: given a stage and its context, fill the stage's hole or decline.

The runtime (`mdp.py`) is policy-agnostic: the expert policy here, an LLM policy later.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Protocol, Union

from agentk.core.records.workspace import Workspace

if TYPE_CHECKING:
    from setup_pipeline.stages import StageSpec


@dataclass(frozen=True)
class Fill:
    """The hole's text: a code block for code stages, JSON or markdown for reasoning stages."""

    content: str
    plan: str = ""


@dataclass(frozen=True)
class Decline:
    """The policy cannot fill this stage; the reason is logged and shown to the user.

    A retryable decline (a model reply with no code, say) counts as a failed attempt; any other
    ends the setup, since asking the same policy again would give the same answer."""

    reason: str
    retryable: bool = False


Action = Union[Fill, Decline]


@dataclass(frozen=True)
class Verdict:
    """Credit assignment's answer after a failed meta check: the stages at fault (empty: all of
    the covered ones) and the META-ERROR-THOUGHT that led there, for the rewrite prompts."""

    stages: list[str]
    thought: str = ""


@dataclass
class StageContext:
    """What a policy may see when it acts: the workspace (raw/ and setup/), never grading facts."""

    workspace: Workspace
    attempt: int
    last_error: str | None = None
    meta_error: str | None = None
    meta_thought: str | None = None
    notes: dict[str, str] = field(default_factory=dict)
    # Called between the long steps of a policy's own work (the expert's perception) with the step
    # about to start; raises once setup's deadline has passed (deadline.py), so the deadline holds
    # inside a stage too. None: no deadline.
    checkpoint: Callable[[str], None] | None = None


class Policy(Protocol):
    name: str

    def act(self, stage: StageSpec, ctx: StageContext) -> Action: ...
