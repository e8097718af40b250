"""LLMClient over a real local server: the workspace cache, the token budget, resume, secrets, config."""

from __future__ import annotations

from pathlib import Path

import pytest
from llm_server import Reply, ScriptedLLMServer

from agentk.llm import (
    LLMAuthError,
    LLMConfig,
    LLMConfigError,
    TokenBudgetExceeded,
    make_client,
    system,
    user,
)
from agentk.llm.client import CACHE_DIR, CALL_LOG, USAGE_FILE

MODEL = "qwen2.5-coder-7b"
SECRET = "sk-live-9f8e7d6c5b4a-DO-NOT-LEAK"
SUMMARY = """## Task
Predict `Survived` (0/1) for each passenger in `test.csv`.

## Data
`train.csv` (891 rows, 12 columns), `test.csv` (418 rows), `gender_submission.csv`.

## Evaluation
Accuracy on the test set; submit `PassengerId,Survived`."""
PROMPT = [system("You summarise Kaggle competitions."), user("Summarise description.md:\n# Titanic ...")]


def config(server: ScriptedLLMServer, **kw: object) -> LLMConfig:
    values: dict[str, object] = {"base_url": server.base_url, "model": MODEL, "api_key": SECRET, "timeout_s": 2.0,
                                     "max_retries": 1, "backoff_base_s": 0.01}
    values.update(kw)
    return LLMConfig(**values)  # type: ignore[arg-type]


def test_cache_replays_identical_query_without_calling_server(tmp_path: Path) -> None:
    with ScriptedLLMServer([Reply(SUMMARY, completion_tokens=60)]) as srv:
        first = make_client(config(srv), tmp_path).query(PROMPT, stage="summarise")
        resumed = make_client(config(srv), tmp_path)  # a new process after a crash, same workspace
        again = resumed.query(PROMPT, stage="summarise")
    assert len(srv.chat_requests) == 1
    assert again.text == first.text == SUMMARY and again.cached and not first.cached
    assert again.total_tokens == 0 and resumed.cache_hits == 1 and resumed.cache_misses == 0
    stage = resumed.ledger.stages["summarise"]
    assert stage.calls == 2 and stage.cached_calls == 1 and stage.completion_tokens == 60  # reloaded, not re-paid
    assert list((tmp_path / CACHE_DIR).rglob("*.json"))


def test_variant_and_params_change_the_key(tmp_path: Path) -> None:
    with ScriptedLLMServer([Reply("a"), Reply("b"), Reply("c")]) as srv:
        client = make_client(config(srv), tmp_path)
        assert client.query(PROMPT, stage="plan").text == "a"
        assert client.query(PROMPT, stage="plan", variant=1).text == "b"
        hot = make_client(config(srv, temperature=0.7), tmp_path)
        assert hot.query(PROMPT, stage="plan").text == "c"
        assert client.query(PROMPT, stage="plan", variant=1).text == "b"
    assert len(srv.chat_requests) == 3


def test_token_budget_stops_paid_calls_but_not_replays(tmp_path: Path) -> None:
    with ScriptedLLMServer([Reply(SUMMARY, completion_tokens=400)]) as srv:
        client = make_client(config(srv, token_budget=300), tmp_path)
        client.query(PROMPT, stage="summarise")  # the call that crosses the line is allowed to finish
        with pytest.raises(TokenBudgetExceeded, match=r"of 300 tokens used.*'plan'"):
            client.query([user("Now plan the setup.")], stage="plan")
        assert client.query(PROMPT, stage="summarise").cached  # free, so still allowed
        resumed = make_client(config(srv, token_budget=300), tmp_path)
        with pytest.raises(TokenBudgetExceeded):
            resumed.query([user("Now plan the setup.")], stage="plan")
    assert len(srv.chat_requests) == 1


def test_no_cache_when_disabled_and_no_workspace() -> None:
    with ScriptedLLMServer([Reply("x"), Reply("y")]) as srv:
        client = make_client(config(srv, cache=False))
        assert [client.query(PROMPT, stage="s").text for _ in range(2)] == ["x", "y"]


def test_api_key_never_written_anywhere(tmp_path: Path) -> None:
    echoed = Reply(status=401, body={"error": {"message": f"Incorrect API key provided: {SECRET}.", "code": "invalid_api_key"}})
    with ScriptedLLMServer([Reply(SUMMARY), echoed]) as srv:
        cfg = config(srv)
        client = make_client(cfg, tmp_path)
        client.query(PROMPT, stage="summarise")
        with pytest.raises(LLMAuthError) as info:
            client.query([user("again")], stage="plan")
    assert srv.chat_requests[0].headers["Authorization"] == f"Bearer {SECRET}"  # it was used...
    assert SECRET not in str(info.value) and SECRET not in repr(cfg) and SECRET not in cfg.model_dump_json()
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert {tmp_path / CALL_LOG, tmp_path / USAGE_FILE} <= set(files)
    for path in files:  # ...and nowhere on disk
        assert SECRET not in path.read_text(encoding="utf-8"), path
    assert "LLMAuthError" in (tmp_path / CALL_LOG).read_text(encoding="utf-8")


def test_damaged_cache_entry_is_a_miss(tmp_path: Path) -> None:
    with ScriptedLLMServer([Reply("first"), Reply("second")]) as srv:
        make_client(config(srv), tmp_path).query(PROMPT, stage="s")
        for entry in (tmp_path / CACHE_DIR).rglob("*.json"):
            entry.write_text("{ truncated", encoding="utf-8")
        assert make_client(config(srv), tmp_path).query(PROMPT, stage="s").text == "second"



def test_config_from_env_precedence() -> None:
    env = {"AGENTK_LLM_BASE_URL": "http://gpu-box:8000/v1/", "AGENTK_LLM_MODEL": "m1", "OPENAI_API_KEY": "sk-fallback"}
    cfg = LLMConfig.from_env(env)
    assert cfg.base_url == "http://gpu-box:8000/v1" and cfg.model == "m1"
    assert cfg.api_key is not None and cfg.api_key.get_secret_value() == "sk-fallback"
    cfg = LLMConfig.from_env({**env, "AGENTK_LLM_API_KEY": "sk-own"}, model="m2", timeout_s=5)
    assert cfg.api_key.get_secret_value() == "sk-own" and cfg.model == "m2" and cfg.timeout_s == 5  # type: ignore[union-attr]
    with pytest.raises(LLMConfigError, match="AGENTK_LLM_MODEL"):
        make_client(LLMConfig.from_env({}))
    with pytest.raises(LLMConfigError, match="AGENTK_LLM_TOKEN_BUDGET"):
        LLMConfig.from_env({"AGENTK_LLM_TOKEN_BUDGET": "lots"})
    with pytest.raises(LLMConfigError, match="invalid LLM settings"):
        LLMConfig.from_env({}, timeout_s=-1)
