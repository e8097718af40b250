"""LLMConfig as pydantic-settings: the process environment, explicit values over it, empty = unset."""

from __future__ import annotations

import pytest

from agentk.llm import LLMConfig


def test_the_process_environment_fills_what_is_not_given(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTK_LLM_MODEL", "served")
    monkeypatch.setenv("AGENTK_LLM_TIMEOUT_S", "7.5")
    monkeypatch.setenv("AGENTK_LLM_BASE_URL", "")  # empty counts as unset
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fallback")
    monkeypatch.delenv("AGENTK_LLM_API_KEY", raising=False)
    cfg = LLMConfig()
    assert cfg.model == "served" and cfg.timeout_s == 7.5 and cfg.base_url == "http://127.0.0.1:8000/v1"
    assert cfg.api_key is not None and cfg.api_key.get_secret_value() == "sk-fallback"
    explicit = LLMConfig(model="mine", api_key="sk-explicit")
    assert explicit.model == "mine" and explicit.api_key is not None
    assert explicit.api_key.get_secret_value() == "sk-explicit"


def test_a_given_mapping_replaces_the_process_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTK_LLM_MODEL", "from-process")
    assert LLMConfig.from_env({}).model == ""
    assert LLMConfig.from_env({"AGENTK_LLM_MODEL": "given"}).model == "given"
    assert LLMConfig.from_env().model == "from-process"
