"""Secrets never reach what agentk writes or sends (issue #11, item 1, defence in depth).

The attacker's worst case: the LLM-written stage code knows the orchestrator's secret values and
prints them, in its output and in the error that is fed back to the model. None of them may
reach a file of the workspace (logs, attempt log, events, stage logs, LLM cache, state), the
shared experience memory, the console, or the next prompt sent to the LLM server.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from llm_server import Reply, ScriptedLLMServer
from test_llm_policy import MODEL, SHARED, script

from agentk.core.records.config import RunConfig
from agentk.llm import LLMConfig, make_client, user
from agentk.runner import run_competition
from setup_pipeline.deadline import SAMPLE_MODEL
from agentk.core.secrets import REDACTED, is_secret_name, redact, redact_obj, refresh

pytestmark = pytest.mark.integration

# Distinctive fake values. Some have a well-known shape, some are known only by value.
KAGGLE_ENV_KEY = "kgl-env-7fQ2xLw9Rb4Tz"
KAGGLE_FILE_KEY = "c0ffee5e7a1b2c3d4e5f60718293a4b5"  # kaggle.json's 32 hex digits
OPENAI_KEY = "sk-fakeOrchestrator9Qm3ZtLx8Vw2Ab"
LLM_KEY = "llmkey-Pq8Rr2Ss7Tt6Uu"
CUSTOM_SECRET = "vault-Hunter2-Xy7Qz91"
SECRETS = (KAGGLE_ENV_KEY, KAGGLE_FILE_KEY, OPENAI_KEY, LLM_KEY, CUSTOM_SECRET)
MARKER = "LEAK-MARKER"  # printed beside the secrets: proves the output did travel


def _reversed(secret: str) -> str:
    return f'"{secret[::-1]}"[::-1]'


# The code holds each secret literally (scrubbed from the reply as it arrives) and also builds it
# at run time (so the values do appear in its output and its error).
LEAKING_MAP = f'''PLAN:
1. Print the credentials.

```python
import sys

LITERAL = ["{KAGGLE_ENV_KEY}", "{KAGGLE_FILE_KEY}", "{OPENAI_KEY}", "{LLM_KEY}", "{CUSTOM_SECRET}"]
BUILT = [{", ".join(_reversed(s) for s in SECRETS)}]

print("{MARKER} stdout", *LITERAL, *BUILT)
print("{MARKER} stderr", *BUILT, file=sys.stderr)


def build_map():
    return None


raise RuntimeError("{MARKER} in the error: " + " ".join(LITERAL + BUILT))
```
'''


def _plant_secrets(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    config = tmp_path / "kaggle-config"
    config.mkdir()
    (config / "kaggle.json").write_text(json.dumps({"username": "victim", "key": KAGGLE_FILE_KEY}))
    monkeypatch.setenv("KAGGLE_CONFIG_DIR", str(config))
    monkeypatch.setenv("KAGGLE_USERNAME", "victim")
    monkeypatch.setenv("KAGGLE_KEY", KAGGLE_ENV_KEY)
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    monkeypatch.setenv("AGENTK_LLM_API_KEY", LLM_KEY)
    monkeypatch.setenv("DEPLOY_VAULT_SECRET", CUSTOM_SECRET)
    refresh()  # this process looked at its environment before the test changed it


def _leaks(text: str) -> list[str]:
    return [secret for secret in SECRETS if secret in text]


def test_secrets_printed_by_generated_code_reach_no_file_memory_console_or_prompt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _plant_secrets(monkeypatch, tmp_path)
    ws = tmp_path / "ws"
    # The LLM policy reads the task, then writes the first code stage; both attempts print and fail.
    replies = [*script("summarise", "modalities", "plan_repaired"), *(Reply(LEAKING_MAP) for _ in range(2))]
    config = RunConfig(workspace_root=ws, policy="llm", llm_model=MODEL, attempts_per_stage=2, time_budget_s=15, folds=3)
    with ScriptedLLMServer(replies) as server:
        # The stage fails both attempts: the run hands in titanic's sample and keeps the failure.
        outcome = run_competition(SHARED / "titanic", config.model_copy(update={"llm_base_url": server.base_url}))
        requests = server.chat_requests
    failure = outcome.result.setup_failure or ""
    assert "train_input_map_tab" in failure and MARKER in failure and _leaks(failure) == []
    assert outcome.result.valid_submission and outcome.result.model == SAMPLE_MODEL
    assert len(requests) == 5, [r.body for r in requests]

    # The error output was fed back (the marker printed beside the secrets is in the retry's
    # prompt), but not one secret was sent.
    assert MARKER in json.dumps(requests[4].body)
    assert [found for r in requests if (found := _leaks(json.dumps(r.body)))] == []

    # Every file the run wrote, the shared experience memory (under the workspace root) included.
    files = [p for p in ws.rglob("*") if p.is_file()]
    leaked = {str(p.relative_to(ws)): found for p in files if (found := _leaks(p.read_bytes().decode("utf-8", "replace")))}
    assert leaked == {}
    workspace = next(p for p in ws.iterdir() if (p / "logs").is_dir())
    carried = [workspace / "logs" / name for name in ("attempts.jsonl", "events.jsonl", "stage_train_input_map_tab.stdout.txt", "stage_train_input_map_tab.stderr.txt")]
    assert all(MARKER in path.read_text() for path in carried)  # the files checked did hold the output
    assert any(MARKER in p.read_text() for p in (workspace / "llm_cache").rglob("*.json"))
    console = capsys.readouterr()
    assert "train_input_map_tab" in console.err and _leaks(console.out + console.err) == []

    from curriculum.experience import ExperienceStore

    stored = ExperienceStore(ws / "_memory" / "experience.lance").all()
    failures = [e for e in stored if e.stage == "train_input_map_tab"]
    assert failures and any(MARKER in e.failed_code + e.error for e in failures)
    assert [found for e in stored if (found := _leaks(e.model_dump_json()))] == []


def test_a_key_given_only_in_the_llm_config_is_redacted_from_replies_and_cache(tmp_path: Path) -> None:
    key = "cfg-only-Zz9Yy8Xx7Ww6"
    with ScriptedLLMServer([Reply(f"the key is {key}")]) as server:
        config = LLMConfig(base_url=server.base_url, model=MODEL, api_key=key, timeout_s=10, max_retries=0)
        client = make_client(config, tmp_path)
        completion = client.query([user(f"echo {key}")], stage="summarise")
        sent = json.dumps(server.chat_requests[0].body)
    assert key not in completion.text and "the key is" in completion.text
    assert key not in sent and "echo" in sent
    written = "".join(p.read_text() for p in tmp_path.rglob("*") if p.is_file())
    assert "echo" in written and key not in written


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("export OPENAI_API_KEY", None),
        ("key sk-proj-AbCdEfGhIjKlMnOpQrStUvWx12 used", "sk-proj-AbCdEfGhIjKlMnOpQrStUvWx12"),
        ("hf_AbCdEfGhIjKlMnOpQrStUvWxYz01234567", "hf_AbCdEfGhIjKlMnOpQrStUvWxYz01234567"),
        ("aws AKIAIOSFODNN7EXAMPLE here", "AKIAIOSFODNN7EXAMPLE"),
        ("ghp_0123456789abcdefghijABCDEFGHIJ012345", "ghp_0123456789abcdefghijABCDEFGHIJ012345"),
        ('{"username": "bob", "key": "0123456789abcdef0123456789abcdef"}', "0123456789abcdef0123456789abcdef"),
        ("-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA7\n-----END RSA PRIVATE KEY-----", "MIIEpAIBAAKCAQEA7"),
        ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAA cut short", "b3BlbnNzaC1rZXktdjEAAAA"),
        ("Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.payload", "eyJhbGciOiJIUzI1NiJ9.payload"),
        ("MY_SERVICE_TOKEN=zq8W3xLmP0 next", "zq8W3xLmP0"),
        ("{'DB_PASSWORD': 'Hunter2Hunter2'}", "Hunter2Hunter2"),
    ],
)
def test_token_shapes_are_redacted(text: str, secret: str | None) -> None:
    out = redact(text)
    if secret is None:
        assert out == text
    else:
        assert secret not in out and REDACTED in out


@pytest.mark.parametrize(
    "text",
    [
        "sklearn sk-learn import; max_tokens=4096; MAX_TOKENS = 4096",
        '"key": "' + "ab" * 32 + '"',  # a sha256 (the LLM cache key), not a Kaggle key
        "AGENTK_LLM_TOKEN_BUDGET=100000000",
        "the token budget is spent; KeyError: 'Survived'",
    ],
)
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert redact(text) == text


def test_known_values_from_environment_and_kaggle_json_are_redacted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _plant_secrets(monkeypatch, tmp_path)
    monkeypatch.setenv("TOKENIZERS_PARALLELISM", "false")  # a secret-looking name, not a secret value
    text = f"a {KAGGLE_ENV_KEY} b {KAGGLE_FILE_KEY} c {CUSTOM_SECRET} false"
    assert redact(text) == f"a {REDACTED} b {REDACTED} c {REDACTED} false"
    record = {"output": [f"x{LLM_KEY}", ("y", OPENAI_KEY)], "n": 3, KAGGLE_ENV_KEY: None}
    assert redact_obj(record) == {"output": [f"x{REDACTED}", ("y", REDACTED)], "n": 3, REDACTED: None}


def test_secret_names() -> None:
    assert all(map(is_secret_name, ["KAGGLE_KEY", "openai_api_key", "HF_TOKEN", "AWS_SECRET_ACCESS_KEY", "DB_PASSWORD"]))
    assert not any(map(is_secret_name, ["PATH", "HOME", "LANG", "OMP_NUM_THREADS"]))
