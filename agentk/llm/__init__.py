"""LLM backends and the reasoning helpers the LLM policy is built on.

`make_client(LLMConfig.from_env(), workspace_dir).query(messages, stage=...)` is the entry point;
see client.py for what lands in the workspace.
"""

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
