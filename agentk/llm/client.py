"""The one object a policy talks to: a backend, the response cache and the per-stage token ledger.

Workspace files (none holds the API key):
  llm_cache/<xx>/<sha256>.json   replayable replies (see cache.py)
  logs/llm_calls.jsonl           one line per query: stage, cache key, tokens, latency, or the error
  logs/llm_usage.json            the ledger, reloaded on resume so the budget spans the whole run

Prompts are redacted (agentk/core/secrets.py) before they are sent or hashed, replies' known secret
values as they arrive (their code otherwise runs as written), log lines and cache entries in full
before they are written: a secret that reached a stage's output goes no further.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from agentk.llm.backend_openai import OpenAICompatibleBackend
from agentk.llm.backend_vllm import VLLMBackend
from agentk.llm.cache import CachedBackend, ResponseCache, cache_key
from agentk.llm.config import LLMConfig
from agentk.llm.errors import LLMConfigError, LLMError
from agentk.llm.types import Backend, Completion, Message, TokenLedger, as_messages
from agentk.core.secrets import redact, redact_obj, redact_values, register
from agentk.core.records.workspace import atomic_write_text, read_json_object

CACHE_DIR = "llm_cache"
CALL_LOG = "logs/llm_calls.jsonl"
USAGE_FILE = "logs/llm_usage.json"


class LLMClient:
    def __init__(
        self,
        backend: Backend,
        config: LLMConfig,
        *,
        cache: ResponseCache | None = None,
        ledger: TokenLedger | None = None,
        call_log: Path | None = None,
        usage_path: Path | None = None,
    ) -> None:
        self.config = config
        if config.api_key is not None:
            # a key given by flag or config, not only by a secret-named environment variable
            register(config.api_key.get_secret_value())
        self.backend = backend
        self.ledger = ledger or TokenLedger(config.token_budget)
        self.cache = cache
        self.call_log = call_log
        self.usage_path = usage_path
        self._params = config.sampling_params()
        self._cached = (
            CachedBackend(backend, cache, model=config.model, params=self._params, before_miss=self.ledger.check)
            if cache is not None
            else None
        )

    def query(self, messages: Iterable[Message | dict[str, str]], *, stage: str, variant: int = 0) -> Completion:
        """One chat completion. `variant` > 0 asks for a different sample of an identical prompt
        (it is part of the cache key only; the server sees the same request)."""
        msgs = [Message(m.role, redact(m.content)) for m in as_messages(messages)]
        key = cache_key(self.config.model, msgs, self._params, variant)
        try:
            if self._cached is not None:
                completion = self._cached.complete(msgs, stage=stage, variant=variant)
            else:
                self.ledger.check(stage)
                completion = self.backend.complete(msgs, stage=stage)
        except LLMError as exc:
            self._log({"stage": stage, "key": key, "error": type(exc).__name__, "message": str(exc)})
            raise
        # A model can only repeat a secret it was shown, or guess one; either way it stops here. Only
        # known values: a credential-shaped line of code runs as the model wrote it (logs, the cache
        # and every stored record are redacted in full).
        completion = completion.model_copy(update={"text": redact_values(completion.text)})
        self.ledger.add(stage, completion)
        self._log(
            {
                "stage": stage,
                "key": key,
                "model": completion.model,
                "cached": completion.cached,
                "prompt_tokens": completion.prompt_tokens,
                "completion_tokens": completion.completion_tokens,
                "latency_s": completion.latency_s,
                "finish_reason": completion.finish_reason,
            }
        )
        self._save_usage()
        return completion

    @property
    def cache_hits(self) -> int:
        return self.cache.hits if self.cache is not None else 0

    @property
    def cache_misses(self) -> int:
        return self.cache.misses if self.cache is not None else 0

    def usage(self) -> dict[str, Any]:
        return {**self.ledger.to_dict(), "cache_hits": self.cache_hits, "cache_misses": self.cache_misses}

    def _log(self, record: dict[str, Any]) -> None:
        if self.call_log is None:
            return
        self.call_log.parent.mkdir(parents=True, exist_ok=True)
        with self.call_log.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(redact_obj({"t": round(time.time(), 3), **record}), default=str) + "\n")

    def _save_usage(self) -> None:
        if self.usage_path is not None:
            atomic_write_text(self.usage_path, json.dumps(self.usage(), indent=2) + "\n")


def make_backend(config: LLMConfig) -> Backend:
    """The provider's adapter (backend_vllm imports vllm itself only when built)."""
    if config.provider == "openai":
        return OpenAICompatibleBackend(config)
    if config.provider == "vllm":
        return VLLMBackend(config)
    raise LLMConfigError(f"unknown LLM provider {config.provider!r}; use 'openai' or 'vllm'")


def make_client(config: LLMConfig, workspace_dir: Path | None = None, *, backend: Backend | None = None) -> LLMClient:
    """A client whose cache, call log and usage live in the workspace (none of them without one)."""
    backend = backend or make_backend(config)
    if workspace_dir is None:
        return LLMClient(backend, config)
    root = Path(workspace_dir)
    usage_path = root / USAGE_FILE
    saved = read_json_object(usage_path)
    ledger = TokenLedger.from_dict(saved, config.token_budget)
    return LLMClient(
        backend,
        config,
        cache=ResponseCache(root / CACHE_DIR) if config.cache else None,
        ledger=ledger,
        call_log=root / CALL_LOG,
        usage_path=usage_path,
    )
