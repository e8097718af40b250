"""The in-process vLLM adapter: a clear error without the package, and the engine contract.

vllm needs a GPU and gigabytes of weights, so the contract test stands in a tiny module with the
same surface (`LLM(model=...)`, `LLM.chat(messages, SamplingParams, use_tqdm=...)` returning
RequestOutput-shaped objects); the HTTP path is what the other LLM tests exercise for real.
"""

from __future__ import annotations

import sys
import types
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from agentk.core.errors import AgentKError
from agentk.llm import BackendNotInstalled, ContextTooLong, LLMConfig, make_client, user


def test_missing_vllm_is_one_clear_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "vllm", None)  # as if not installed, even where it is
    with pytest.raises(BackendNotInstalled) as info:
        make_client(LLMConfig(provider="vllm", model="Qwen/Qwen2.5-Coder-7B-Instruct"))
    message = str(info.value)
    assert "pip install 'agentk[vllm]'" in message and "vllm serve" in message and "\n" not in message
    assert isinstance(info.value, AgentKError)


class _Engine:
    max_model_len = 64

    def __init__(self, model: str, **kwargs: Any) -> None:
        self.model, self.kwargs, self.calls = model, kwargs, []

    def chat(self, messages: list[dict[str, str]], params: Any, use_tqdm: bool = True) -> list[Any]:
        self.calls.append((messages, params))
        prompt_ids = list(range(sum(len(m["content"].split()) for m in messages)))
        if len(prompt_ids) > self.max_model_len:
            raise ValueError(f"The decoder prompt (length {len(prompt_ids)}) is longer than the maximum model length of 64.")
        text = "```python\nHIGHER_IS_BETTER = True\n```"
        sample = SimpleNamespace(text=text, token_ids=[1, 2, 3, 4, 5], finish_reason="stop")
        return [SimpleNamespace(prompt_token_ids=prompt_ids, outputs=[sample])]


def _fake_vllm() -> types.ModuleType:
    module = types.ModuleType("vllm")
    module.LLM = _Engine  # type: ignore[attr-defined]
    module.SamplingParams = lambda **kw: SimpleNamespace(**kw)  # type: ignore[attr-defined]
    return module


def test_engine_contract_and_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, "vllm", _fake_vllm())
    client = make_client(LLMConfig(provider="vllm", model="tiny", seed=3, temperature=0.2), tmp_path)
    first = client.query([user("metric direction for accuracy?")], stage="metric")
    assert first.text.startswith("```python") and first.prompt_tokens == 4 and first.completion_tokens == 5
    engine = client.backend.engine  # type: ignore[attr-defined]
    assert engine.kwargs == {"seed": 3} and engine.calls[0][1].temperature == 0.2
    assert client.query([user("metric direction for accuracy?")], stage="metric").cached
    assert len(engine.calls) == 1
    with pytest.raises(ContextTooLong, match="prompt too long for model tiny"):
        client.query([user("word " * 100)], stage="summarise")
