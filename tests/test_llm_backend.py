"""The OpenAI-compatible backend against a real local HTTP server: retries, timeouts, error mapping."""

from __future__ import annotations

import email.utils
import socket
import time

import pytest
from llm_server import Reply, ScriptedLLMServer

from agentk.core.errors import AgentKError
from agentk.llm import (
    ContextTooLong,
    LLMAuthError,
    LLMConfig,
    LLMRateLimited,
    LLMServerError,
    LLMTimeout,
    LLMUnreachable,
    ModelNotServed,
    make_client,
    system,
    user,
)
from agentk.llm.backend_openai import OpenAICompatibleBackend

MODEL = "qwen2.5-coder-7b"
PLAN_AND_CODE = """I'll read the training CSV, keep `id` and the feature columns, and drop the target.

Plan:
1. Load `train.csv` from the raw data folder.
2. Select `id` plus every column except `SalePrice`.

```python
import pandas as pd

def build_map(raw_dir):
    df = pd.read_csv(raw_dir / "data" / "train.csv")
    return df.drop(columns=["SalePrice"])
```
"""
PROMPT = [system("You are a careful Kaggle engineer."), user("Write build_map for the train tabular input map.")]


def config(server: ScriptedLLMServer | None = None, **kw: object) -> LLMConfig:
    values: dict[str, object] = {
        "base_url": server.base_url if server else "http://127.0.0.1:9/v1", "model": MODEL, "api_key": "sk-test-abc",
        "timeout_s": 2.0, "connect_timeout_s": 1.0, "max_retries": 3, "backoff_base_s": 0.01, "backoff_max_s": 0.05,
    }
    values.update(kw)
    return LLMConfig(**values)  # type: ignore[arg-type]


def test_completion_and_token_accounting() -> None:
    with ScriptedLLMServer([Reply(PLAN_AND_CODE, completion_tokens=80), Reply('{"ok": true}', completion_tokens=5)]) as srv:
        client = make_client(config(srv))
        first = client.query(PROMPT, stage="train_input_map_tab")
        second = client.query([user("Is it ok?")], stage="plan")
    assert "def build_map" in first.text and first.model == MODEL and not first.cached
    assert first.completion_tokens == 80 and first.prompt_tokens > 0 and first.finish_reason == "stop"
    sent = srv.chat_requests[0]
    assert sent.body["model"] == MODEL and sent.body["messages"][0] == {"role": "system", "content": PROMPT[0].content}
    assert sent.body["temperature"] == 0.0 and sent.body["max_tokens"] == 4096
    assert sent.headers["Authorization"] == "Bearer sk-test-abc"
    usage = client.ledger.to_dict()
    assert usage["stages"]["train_input_map_tab"]["completion_tokens"] == 80
    assert usage["stages"]["plan"]["calls"] == 1
    assert usage["total_tokens"] == first.total_tokens + second.total_tokens


def test_429_then_success_honours_retry_after() -> None:
    limited = Reply(status=429, retry_after="1", body={"error": {"message": "Rate limit reached", "type": "rate_limit"}})
    with ScriptedLLMServer([limited, Reply(PLAN_AND_CODE)]) as srv:
        backend = OpenAICompatibleBackend(config(srv))
        started = time.monotonic()
        completion = backend.complete(PROMPT, stage="plan")
        elapsed = time.monotonic() - started
    assert "build_map" in completion.text
    assert backend.attempts == 2
    gap = srv.chat_requests[1].t - srv.chat_requests[0].t
    assert 0.95 <= gap < 3.0 and elapsed < 3.0  # waited what the server asked, not the 0.01 s backoff


def test_retry_after_is_capped() -> None:
    limited = Reply(status=429, retry_after="3600", body={"error": "slow down"})
    with ScriptedLLMServer([limited, Reply("fine")]) as srv:
        started = time.monotonic()
        OpenAICompatibleBackend(config(srv, retry_after_max_s=0.2)).complete(PROMPT)
    assert time.monotonic() - started < 2.0


def test_500_then_success() -> None:
    err = Reply(status=500, body={"object": "error", "message": "CUDA out of memory", "type": "InternalServerError"})
    with ScriptedLLMServer([err, Reply(status=503, body="upstream busy"), Reply("recovered")]) as srv:
        backend = OpenAICompatibleBackend(config(srv))
        assert backend.complete(PROMPT).text == "recovered"
    assert backend.attempts == 3


def test_persistent_429_gives_rate_limited_error() -> None:
    replies = [Reply(status=429, body={"error": {"message": "quota exceeded"}}) for _ in range(3)]
    with ScriptedLLMServer(replies) as srv, pytest.raises(LLMRateLimited, match="quota exceeded.*after 3 attempts"):
        OpenAICompatibleBackend(config(srv, max_retries=2)).complete(PROMPT)


def test_timeout_after_bounded_retries() -> None:
    slow = [Reply("too late", delay_s=1.5) for _ in range(2)]
    with ScriptedLLMServer(slow) as srv:
        backend = OpenAICompatibleBackend(config(srv, timeout_s=0.3, max_retries=1))
        started = time.monotonic()
        with pytest.raises(LLMTimeout) as info:
            backend.complete(PROMPT)
        elapsed = time.monotonic() - started
    assert backend.attempts == 2 and elapsed < 1.5
    message = str(info.value)
    assert "no reply" in message and "0.3s" in message and "after 2 attempts" in message and "\n" not in message


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_unreachable_server_fails_fast_with_clear_message() -> None:
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    backend = OpenAICompatibleBackend(config(base_url=url, max_retries=2))
    started = time.monotonic()
    with pytest.raises(LLMUnreachable) as info:
        backend.complete(PROMPT)
    assert time.monotonic() - started < 3.0
    message = str(info.value)
    assert url in message and "connection refused" in message and "AGENTK_LLM_BASE_URL" in message
    assert isinstance(info.value, AgentKError) and "\n" not in message


def test_wrong_model_lists_served_models() -> None:
    served = ("Qwen/Qwen2.5-Coder-7B-Instruct", "llama3.1:8b")
    with ScriptedLLMServer(models=served) as srv, pytest.raises(ModelNotServed) as info:
        OpenAICompatibleBackend(config(srv, model="gpt-4o")).complete(PROMPT)
    assert str(info.value).startswith(f"model gpt-4o is not served by {srv.base_url}; served models: ")
    assert "Qwen/Qwen2.5-Coder-7B-Instruct, llama3.1:8b" in str(info.value)
    assert [r.method for r in srv.requests] == ["POST", "GET"]  # no retries on a 404


def test_wrong_base_path_says_so() -> None:
    with ScriptedLLMServer() as srv, pytest.raises(AgentKError, match="not found.*ends in /v1"):
        OpenAICompatibleBackend(config(srv, base_url=srv.base_url.removesuffix("/v1"))).complete(PROMPT)


def test_context_too_long() -> None:
    with ScriptedLLMServer(max_context_tokens=1000) as srv:
        long_prompt = [user("Here is the whole train.csv:\n" + "1,2,3,4\n" * 2000)]
        with pytest.raises(ContextTooLong, match="prompt too long for model .*maximum context length is 1000"):
            OpenAICompatibleBackend(config(srv, max_tokens=256)).complete(long_prompt)
    assert len(srv.chat_requests) == 1


def test_bad_key_message_names_the_variable_not_the_key() -> None:
    denied = Reply(status=401, body={"error": {"message": "Incorrect API key provided: sk-test-abc", "code": "invalid_api_key"}})
    with ScriptedLLMServer([denied]) as srv, pytest.raises(LLMAuthError, match="rejected the API key.*AGENTK_LLM_API_KEY"):
        OpenAICompatibleBackend(config(srv)).complete(PROMPT)


def test_200_that_is_not_a_completion() -> None:
    proxy_page = Reply(body="<html>proxy login</html>")
    with ScriptedLLMServer([proxy_page]) as srv, pytest.raises(LLMServerError, match="not a chat completion"):
        OpenAICompatibleBackend(config(srv)).complete(PROMPT)


def test_retry_after_http_date_form() -> None:
    past = email.utils.formatdate(time.time() - 30, usegmt=True)  # "retry now", as a date
    limited = Reply(status=503, retry_after=past, body={"error": "warming up"})
    with ScriptedLLMServer([limited, Reply("ready")]) as srv:
        started = time.monotonic()
        assert OpenAICompatibleBackend(config(srv, backoff_base_s=5)).complete(PROMPT).text == "ready"
    assert time.monotonic() - started < 1.0  # the date, not the 5 s backoff, decided the wait
