"""OpenAI-compatible chat backend over HTTP: vLLM's `vllm serve`, Ollama, llama.cpp server, hosted APIs.

Every request has a (connect, read) timeout, so nothing hangs. 429, 5xx, timeouts and refused
connections are retried (tenacity) with capped exponential backoff and full jitter, honouring Retry-After.
Everything else maps to one LLMError subclass with a one-line message naming the server.
"""

from __future__ import annotations

import json
import random
import re
import time
from collections.abc import Callable, Sequence
from typing import Any

import requests
from tenacity import Retrying, retry_if_exception_type, stop_after_attempt

from agentk.core.retry import Transient, last_transient, retry_after_s
from agentk.llm.config import ENV_API_KEY, ENV_BASE_URL, ENV_MODEL, LLMConfig
from agentk.llm.errors import (
    ContextTooLong,
    LLMAuthError,
    LLMRateLimited,
    LLMRequestError,
    LLMServerError,
    LLMTimeout,
    LLMUnreachable,
    ModelNotServed,
)
from agentk.llm.types import Completion, Message
from agentk.core.secrets import redact

# How vLLM, OpenAI, llama.cpp and others phrase "prompt too long"
_CONTEXT_RE = re.compile(
    r"context[ _-]?length|maximum context|context window|exceeds? the available context|"
    r"too many tokens|prompt is too long|input is too long",
    re.IGNORECASE,
)
_MODEL_MISSING_RE = re.compile(r"model.*(not found|does not exist|not exist|unknown)|model_not_found", re.IGNORECASE)
_MAX_DETAIL = 300


def server_message(response: requests.Response) -> str:
    """The server's own error text from the usual JSON shapes, on one line and bounded."""
    try:
        body = response.json()
    except ValueError:
        body = None
    text = ""
    if isinstance(body, dict):
        err = body.get("error", body.get("detail", body.get("message")))
        if isinstance(err, dict):
            text = str(err.get("message") or err.get("code") or err)
        elif err is not None:
            text = str(err)
        elif body:
            text = json.dumps(body)
    if not text:
        text = response.text or response.reason or ""
    text = " ".join(text.split())
    return text[:_MAX_DETAIL] + ("…" if len(text) > _MAX_DETAIL else "")


class OpenAICompatibleBackend:
    name = "openai"

    def __init__(
        self,
        config: LLMConfig,
        *,
        session: requests.Session | None = None,
        sleep: Callable[[float], None] = time.sleep,
        rng: random.Random | None = None,
    ) -> None:
        config.require_model()
        self.config = config
        self.url = f"{config.base_url}/chat/completions"
        self.session = session or requests.Session()
        self._sleep = sleep
        self._rng = rng or random.Random()
        self.attempts = 0  # total HTTP attempts, for tests and diagnostics

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json"}
        if self.config.api_key is not None:
            headers["Authorization"] = f"Bearer {self.config.api_key.get_secret_value()}"
        return headers

    def _redact(self, text: str) -> str:
        # servers echo the rejected key in 401 bodies; our messages end up in logs
        key = self.config.api_key.get_secret_value() if self.config.api_key is not None else ""
        return redact(text.replace(key, "***") if key else text)

    def _timeout(self) -> tuple[float, float]:
        return (self.config.connect_timeout_s, self.config.timeout_s)

    def _backoff(self, attempt: int, server_hint: float | None) -> float:
        if server_hint is not None:
            # the server knows when it will have capacity; a little jitter avoids a thundering herd
            return min(server_hint, self.config.retry_after_max_s) + self._rng.uniform(0, 0.1)
        cap = min(self.config.backoff_max_s, self.config.backoff_base_s * (2**attempt))
        return self._rng.uniform(0, cap)

    def complete(self, messages: Sequence[Message], *, stage: str = "") -> Completion:
        cfg = self.config
        # what leaves the machine: never a secret, whoever built the messages
        sent = [{"role": m.role, "content": redact(m.content)} for m in messages]
        payload: dict[str, Any] = {"model": cfg.model, "messages": sent}
        payload.update(cfg.sampling_params())
        tries = cfg.max_retries + 1
        retrying = Retrying(
            stop=stop_after_attempt(tries), sleep=self._sleep, retry=retry_if_exception_type(Transient), reraise=True,
            wait=lambda state: self._backoff(state.attempt_number - 1, last_transient(state).hint_s),
        )
        try:
            return retrying(self._attempt, payload)
        except Transient as last:
            hint_text = {
                LLMUnreachable: f"; is the server running? set {ENV_BASE_URL}",
                LLMTimeout: "; raise timeout_s or use a smaller model",
            }.get(last.kind, "")
            raise last.kind(f"{last.message} (after {tries} attempt{'s' if tries > 1 else ''}){hint_text}") from None

    def _attempt(self, payload: dict[str, Any]) -> Completion:
        """One POST: the completion, a Transient worth another attempt, or the error that ends the call."""
        cfg = self.config
        self.attempts += 1
        started = time.monotonic()
        try:
            response = self.session.post(self.url, json=payload, headers=self._headers(), timeout=self._timeout())
        except requests.ConnectTimeout:
            raise Transient(f"cannot connect to {cfg.base_url} (connect timed out)", kind=LLMUnreachable) from None
        except requests.Timeout:
            raise Transient(f"no reply from {self.url} within {cfg.timeout_s:g}s", kind=LLMTimeout) from None
        except requests.ConnectionError as exc:
            raise Transient(f"cannot connect to {cfg.base_url} ({_reason(exc)})", kind=LLMUnreachable) from None
        except requests.RequestException as exc:  # e.g. the connection dropped mid-reply
            raise Transient(f"request to {self.url} failed ({type(exc).__name__})", kind=LLMServerError) from None
        latency = time.monotonic() - started
        status = response.status_code
        if status == 200:
            return self._parse(response, latency)
        if status == 429 or status >= 500:
            raise Transient(
                f"{self.url} answered {status}: {self._redact(server_message(response))}",
                retry_after_s(response),
                LLMRateLimited if status == 429 else LLMServerError,
            )
        raise self._client_error(response)

    def _parse(self, response: requests.Response, latency: float) -> Completion:
        try:
            body = response.json()
            choice = body["choices"][0]
            text = choice["message"].get("content") or ""
        except (ValueError, KeyError, IndexError, TypeError, AttributeError) as exc:
            raise LLMServerError(
                f"{self.url} answered 200 but not a chat completion ({type(exc).__name__}): "
                f"{self._redact(response.text[:200])!r}"
            ) from None
        usage = body.get("usage") if isinstance(body.get("usage"), dict) else {}
        return Completion(
            text=text,
            prompt_tokens=int(usage.get("prompt_tokens") or 0),
            completion_tokens=int(usage.get("completion_tokens") or 0),
            latency_s=round(latency, 4),
            model=str(body.get("model") or self.config.model),
            finish_reason=choice.get("finish_reason"),
        )

    def _client_error(self, response: requests.Response) -> Exception:
        status, detail = response.status_code, self._redact(server_message(response))
        cfg = self.config
        if status in (401, 403):
            return LLMAuthError(
                f"{cfg.base_url} rejected the API key ({status}: {detail}); set {ENV_API_KEY} or OPENAI_API_KEY"
            )
        if status in (400, 413, 422) and _CONTEXT_RE.search(detail):
            return ContextTooLong(
                f"prompt too long for model {cfg.model} (max_tokens={cfg.max_tokens}): {detail}"
            )
        if status == 404 or _MODEL_MISSING_RE.search(detail):
            served = self.served_models()
            if served is not None and cfg.model not in served:
                listed = ", ".join(served) if served else "(none)"
                return ModelNotServed(
                    f"model {cfg.model} is not served by {cfg.base_url}; served models: {listed} (set {ENV_MODEL})"
                )
            if status == 404 and served is None:
                return LLMRequestError(
                    f"{self.url} not found (404: {detail}); the base URL usually ends in /v1"
                )
        return LLMRequestError(f"{self.url} refused the request ({status}: {detail})")

    def served_models(self) -> list[str] | None:
        """Model ids from GET {base_url}/models, or None if the server cannot say."""
        try:
            response = self.session.get(
                f"{self.config.base_url}/models", headers=self._headers(), timeout=self._timeout()
            )
            if response.status_code != 200:
                return None
            data = response.json().get("data", [])
            return [str(item["id"]) for item in data if isinstance(item, dict) and "id" in item]
        except (requests.RequestException, ValueError, AttributeError):
            return None


def _reason(exc: requests.ConnectionError) -> str:
    """A short cause ('connection refused', 'name resolution failed') instead of urllib3's essay."""
    text = str(exc).lower()
    for needle, short in (
        ("refused", "connection refused"),
        ("name or service not known", "unknown host"),
        ("nodename nor servname", "unknown host"),
        ("temporary failure in name resolution", "unknown host"),
        ("certificate", "TLS certificate error"),
        ("reset", "connection reset"),
    ):
        if needle in text:
            return short
    return type(exc).__name__
