"""The parent's end of the LLM solve policy: answers the sandboxed solver's `decision_request` lines.

The solver has no network and no keys; the model is reached from here, through the run's LLM client,
so every reply's tokens count against `llm_token_budget` (and the solver's wait against its own time
budget). For request n the advisor reads `solve/llm/request_<n>.json`, asks the model once, parses
its reply (prose with a fenced JSON action, and for `feature` a fenced Python function) into a
`SolveAction`, and writes `solve/llm/reply_<n>.json` atomically. Whatever goes wrong (the server, a
spent token budget, a reply that holds no usable action) still writes a reply: one that hands the
decision to the expert, with the reason. Requests are answered on a worker thread, so the solver's
output keeps flowing while the model thinks.
"""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from agentk.core.records.config import RunConfig
from agentk.core.records.events import EventLog
from agentk.core.records.results import SolveResult
from agentk.core.records.solve_decisions import (
    ACTIONS,
    DecisionReply,
    DecisionRequest,
    LLMSolveRecord,
    SolveAction,
    reply_path,
    request_path,
)
from agentk.core.records.workspace import atomic_write_json
from agentk.llm import LLMClient, LLMConfig, LLMError, MalformedJSON, NoCodeInReply, make_client, system, user
from agentk.llm.parsing import extract_code, extract_json
from curriculum.feature_memory import remember_features, similar_features, task_text

STAGE = "solve"  # the token ledger's line for these calls

SYSTEM = """You steer the solve phase of an automated Kaggle competitor. A solver has raced model
families under K-fold cross-validation; you choose its next action from its own tools:

- tune <family>: one HEBO round on a finished family (only those listed as tunable)
- race <family>: finish or start a family the race did not finish (only those listed as unfinished)
- feature: write feature-engineering code (below); it is kept only if the best tabular family's CV improves
- finetune <network>: fine-tune a pretrained network once more (only those listed as finetunable, which fit the time left)
- bag: repeat the best models on fresh partitions (lower variance)
- blend: blend every finished model now, then decode and stop
- stop: stop improving; blend and decode next

Choose only among the actions allowed now. Every action costs time from the budget left; a candidate
is adopted only when it beats the best cross-validated score, so a failed action costs time, not quality.

After the first decision the state holds an `ablation` of the best pipeline's parts (tuning, features,
bagging, blend): each part's CV without it and with it, and its effect (positive: better), with the
score change of every past action. As MLE-STAR does, work on the part with the largest measured effect
(`ablation.focus`, through its action) while it keeps paying; when it stops paying, try a part not
measured yet.

Reply with a short explanation, then one ```json block: {"action": ..., "family": ... or null, "reason": ...}.
For "feature", also give one ```python block defining
    def add_features(train: pd.DataFrame, test: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]
that returns both frames with new numeric or categorical columns added, rows in the same order. The
train frame includes the target column(s): never derive a feature from them. It must be
deterministic and finish within the stated time cap; pandas is `pd` and numpy is `np`."""


def llm_client(config: RunConfig, workspace_root: Path) -> LLMClient:
    """The run's LLM client (the same settings, cache and token ledger as the setup's)."""
    overrides = {"base_url": config.llm_base_url, "model": config.llm_model,
                 "token_budget": config.llm_token_budget, "seed": config.solve.seed}
    llm_config = LLMConfig.from_env(**{k: v for k, v in overrides.items() if v is not None})
    llm_config.require_model()
    return make_client(llm_config, workspace_root)


def prompt(request: DecisionRequest, tips: list[str] | None = None) -> list[Any]:
    """The system rules and the solve's state as compact JSON (the history carries the score feedback)."""
    state = request.model_dump(mode="json", exclude={"token", "n"})
    text = [f"Decision {request.n}. The solve so far:", "```json", json.dumps(state, separators=(",", ":")), "```",
            f"Allowed now: {', '.join(request.allowed)}. Feature code time cap: {request.feature_cap_s:.0f} s."]
    if request.ablation is not None:
        text.append(f"Ablation: {request.ablation.why}.")
    if tips:
        text += ["Feature code that helped on similar tasks:", *tips]
    return [system(SYSTEM), user("\n".join(text))]


def parse_action(text: str, request: DecisionRequest) -> SolveAction:
    """The reply's action; raises ValueError with the reason when it holds none usable."""
    value = extract_json(text)
    if not isinstance(value, dict):
        raise MalformedJSON(f"the JSON is a {type(value).__name__}, not an object")
    name = value.get("action")
    if name not in ACTIONS:
        raise ValueError(f"unknown action {name!r} (known: {', '.join(ACTIONS)})")
    if name == "feature" and not value.get("code"):
        value = {**value, "code": extract_code(text)}
    action = SolveAction.model_validate(value)
    if action.action not in request.allowed:
        raise ValueError(f"{action.action!r} is not allowed now (allowed: {', '.join(request.allowed)})")
    return action


class SolveAdvisor:
    """`memory` (an ExperienceStore, or None) offers kept feature code of similar earlier tasks in the
    prompt, and stores this solve's kept blocks (`remember_kept`)."""

    def __init__(self, client: LLMClient, solve_dir: Path, events: EventLog, memory: Any = None,
                 competition_id: str = "") -> None:
        self.client, self.solve_dir, self.events = client, Path(solve_dir), events
        self.memory, self.competition_id = memory, competition_id
        self._task: str | None = None  # the task's shape in words, from the first request
        self._tips: list[str] | None = None
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="solve-advisor")

    def on_request(self, event: dict[str, Any]) -> None:
        """From the solver's line reader: answer request `n` on the worker thread."""
        n = event.get("n")
        if isinstance(n, int):
            self._pool.submit(self._answer, n)

    def close(self) -> None:
        # A reply the solver no longer waits for is worth nothing: do not wait for it.
        self._pool.shutdown(wait=False, cancel_futures=True)

    def _answer(self, n: int) -> None:
        try:
            request = DecisionRequest.model_validate_json(request_path(self.solve_dir, n).read_text(encoding="utf-8"))
        except (OSError, ValueError, ValidationError) as exc:
            # Without the request's token no reply can be matched: the solver's wait runs out instead.
            self.events.emit("llm_solve_error", n=n, reason=f"unreadable request: {type(exc).__name__}: {exc}")
            return
        reply = self.reply_to(request)
        atomic_write_json(reply_path(self.solve_dir, n), reply.model_dump(mode="json"))
        action = reply.action
        self.events.emit("llm_solve_decision", n=n, action=action.action if action else "expert",
                         family=action.family if action else None,
                         reason=action.reason if action else reply.expert_reason, tokens=reply.tokens)
        shown = f"{action.action} {action.family or ''}".rstrip() if action else f"expert ({reply.expert_reason})"
        self.events.say(f"    LLM decision {n}: {shown}")

    def reply_to(self, request: DecisionRequest) -> DecisionReply:
        started = time.monotonic()
        before = self.client.ledger.total_tokens
        reply = DecisionReply(n=request.n, token=request.token)
        try:
            completion = self.client.query(prompt(request, self.tips(request)), stage=STAGE)
            reply.action = parse_action(completion.text, request)
        except LLMError as exc:
            reply.expert_reason = f"{type(exc).__name__}: {_one_line(exc)}"
        except (ValueError, ValidationError, NoCodeInReply) as exc:
            reply.expert_reason = f"unusable reply: {_one_line(exc)}"
        reply.tokens = self.client.ledger.total_tokens - before
        reply.seconds = round(time.monotonic() - started, 3)
        return reply


    def tips(self, request: DecisionRequest) -> list[str]:
        """Kept feature code of the most similar other tasks (looked up once per solve)."""
        task = request.task
        self._task = task_text(task.metric, [t.column for t in task.targets], task.columns)
        if self._tips is None:
            self._tips = []
            if self.memory is not None and "feature" in request.allowed:
                try:
                    self._tips = similar_features(self.memory, self._task, exclude_competition=self.competition_id or None)
                except Exception as exc:  # noqa: BLE001 - memory is a help, never a reason to fail a decision
                    self.events.emit("memory_unavailable", reason=f"{type(exc).__name__}: {exc}")
        return self._tips

    def remember_kept(self) -> int:
        """Store the feature blocks this solve kept, with their gains; how many were new."""
        if self.memory is None or self._task is None:
            return 0
        try:
            record = (SolveResult.read(self.solve_dir).model_extra or {}).get("llm_solve")
            decisions = LLMSolveRecord.model_validate(record).decisions if record is not None else []
            kept = [(d.feature.code, f"{d.feature.family} CV {d.feature.cv_before:.5g} -> {d.feature.cv_after:.5g}")
                    for d in decisions if d.feature is not None and d.feature.kept
                    and d.feature.cv_before is not None and d.feature.cv_after is not None]
            added = remember_features(self.memory, self.competition_id, self._task, kept) if kept else 0
        except Exception as exc:  # noqa: BLE001 - called on the way out of a solve, failed or not
            self.events.emit("memory_unavailable", reason=f"{type(exc).__name__}: {exc}")
            return 0
        self.events.emit("memory_ingested", features=added)
        return added


def _one_line(exc: BaseException) -> str:
    if isinstance(exc, ValidationError):
        return "; ".join(f"{'.'.join(map(str, e['loc'])) or 'value'}: {e['msg']}" for e in exc.errors())[:300]
    return " ".join(str(exc).split())[:300]
