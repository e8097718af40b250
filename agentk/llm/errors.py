"""LLM errors: each is an AgentKError so the CLI shows one actionable line, never a traceback.

They live here rather than in `agentk/core/errors.py` so the LLM layer can grow without touching the
shared module; all derive from `LLMError` so callers can catch the family at once.
"""

from __future__ import annotations

from agentk.core.errors import AgentKError


class LLMError(AgentKError):
    """Anything that went wrong talking to, or understanding, a language model."""


class LLMConfigError(LLMError):
    """The LLM settings are missing or invalid (no base URL, no model, ...)."""


class BackendNotInstalled(LLMError):
    """The chosen backend needs an optional package that is not installed."""


class LLMUnreachable(LLMError):
    """No connection could be made to the server (refused, DNS, TLS)."""


class LLMTimeout(LLMError):
    """The server accepted the connection but did not answer in time, on every attempt."""


class LLMAuthError(LLMError):
    """The server rejected the API key (401/403)."""


class ModelNotServed(LLMError):
    """The server does not serve the configured model."""


class ContextTooLong(LLMError):
    """The prompt (plus max_tokens) does not fit the model's context window."""


class LLMRateLimited(LLMError):
    """Still rate-limited (429) after every retry."""


class LLMServerError(LLMError):
    """The server kept failing (5xx) or answered something that is not a chat completion."""


class LLMRequestError(LLMError):
    """The server refused the request (4xx) for a reason not covered above."""


class TokenBudgetExceeded(LLMError):
    """The run has spent its token budget; no further paid calls are made."""


class NoCodeInReply(LLMError):
    """The model's reply holds no Python code."""


class MalformedJSON(LLMError):
    """The model's reply holds no usable JSON (or JSON that fails validation)."""
