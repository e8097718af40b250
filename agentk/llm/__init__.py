"""LLM backends and the reasoning helpers the LLM policy is built on.

`make_client(LLMConfig.from_env(), workspace_dir).query(messages, stage=...)` is the entry point;
see client.py for what lands in the workspace.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentk.core.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from agentk.llm.cache import CachedBackend, ResponseCache, cache_key
    from agentk.llm.client import LLMClient, make_backend, make_client
    from agentk.llm.config import LLMConfig
    from agentk.llm.errors import (
        BackendNotInstalled,
        ContextTooLong,
        LLMAuthError,
        LLMConfigError,
        LLMError,
        LLMRateLimited,
        LLMRequestError,
        LLMServerError,
        LLMTimeout,
        LLMUnreachable,
        MalformedJSON,
        ModelNotServed,
        NoCodeInReply,
        TokenBudgetExceeded,
    )
    from agentk.llm.memory import ENTRY_NAMES, WorkingMemory
    from agentk.llm.parsing import (
        ask_code,
        ask_json,
        extract_code,
        extract_json,
        repair_messages,
    )
    from agentk.llm.types import (
        Completion,
        Message,
        StageUsage,
        TokenLedger,
        assistant,
        system,
        user,
    )

# Each name is imported from its module on first use (PEP 562): the runner asks `llm_configured`
# on every run, and importing the OpenAI client, requests and the caches with it cost a run with
# no LLM half a second of CPU.
_MODULE_OF = {
    "BackendNotInstalled": "errors",
    "CachedBackend": "cache",
    "Completion": "types",
    "ContextTooLong": "errors",
    "ENTRY_NAMES": "memory",
    "LLMAuthError": "errors",
    "LLMClient": "client",
    "LLMConfig": "config",
    "LLMConfigError": "errors",
    "LLMError": "errors",
    "LLMRateLimited": "errors",
    "LLMRequestError": "errors",
    "LLMServerError": "errors",
    "LLMTimeout": "errors",
    "LLMUnreachable": "errors",
    "MalformedJSON": "errors",
    "Message": "types",
    "ModelNotServed": "errors",
    "NoCodeInReply": "errors",
    "ResponseCache": "cache",
    "StageUsage": "types",
    "TokenBudgetExceeded": "errors",
    "TokenLedger": "types",
    "WorkingMemory": "memory",
    "ask_code": "parsing",
    "ask_json": "parsing",
    "assistant": "types",
    "cache_key": "cache",
    "extract_code": "parsing",
    "extract_json": "parsing",
    "make_backend": "client",
    "make_client": "client",
    "repair_messages": "parsing",
    "system": "types",
    "user": "types",
}


__getattr__ = lazy_exports(globals(), {name: f"{__name__}.{module}" for name, module in _MODULE_OF.items()})


__all__ = [
    "ENTRY_NAMES",
    "BackendNotInstalled",
    "CachedBackend",
    "Completion",
    "ContextTooLong",
    "LLMAuthError",
    "LLMClient",
    "LLMConfig",
    "LLMConfigError",
    "LLMError",
    "LLMRateLimited",
    "LLMRequestError",
    "LLMServerError",
    "LLMTimeout",
    "LLMUnreachable",
    "MalformedJSON",
    "Message",
    "ModelNotServed",
    "NoCodeInReply",
    "ResponseCache",
    "StageUsage",
    "TokenBudgetExceeded",
    "TokenLedger",
    "WorkingMemory",
    "ask_code",
    "ask_json",
    "assistant",
    "cache_key",
    "extract_code",
    "extract_json",
    "make_backend",
    "make_client",
    "repair_messages",
    "system",
    "user",
]
