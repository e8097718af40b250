"""Credentials found where the official package finds them; missing ones named in one line; keys redacted."""

from __future__ import annotations

import json
import os
import select
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from agentk.kaggle import (
    KaggleClient,
    KaggleCredentialsError,
    find_credentials,
    redact,
    scrubbed_environ,
)

REPO = Path(__file__).resolve().parents[1]


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    return {"HOME": str(home), **extra}


def test_no_credentials_message_says_what_and_where(tmp_path: Path) -> None:
    with pytest.raises(KaggleCredentialsError) as err:
        find_credentials(_env(tmp_path))
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith("no Kaggle credentials: set KAGGLE_USERNAME and KAGGLE_KEY")
    assert "kaggle.json" in message and "https://www.kaggle.com/settings" in message


def test_client_without_credentials_fails_before_any_network(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("KAGGLE_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    with pytest.raises(KaggleCredentialsError, match="no Kaggle credentials"):
        KaggleClient()


def test_half_set_environment(tmp_path: Path) -> None:
    with pytest.raises(KaggleCredentialsError, match="KAGGLE_USERNAME is set but KAGGLE_KEY is not"):
        find_credentials(_env(tmp_path, KAGGLE_USERNAME="me"))


def test_kaggle_json_in_config_dir(tmp_path: Path) -> None:
    config = tmp_path / "cfg"
    config.mkdir()
    (config / "kaggle.json").write_text(json.dumps({"username": "me", "key": "abcdef123456"}))
    found = find_credentials(_env(tmp_path, KAGGLE_CONFIG_DIR=str(config)))
    assert (found.kind, found.username, found.key, found.source) == ("key", "me", "abcdef123456", str(config / "kaggle.json"))
    assert "abcdef123456" not in repr(found)


def test_kaggle_json_without_key(tmp_path: Path) -> None:
    legacy = tmp_path / "home" / ".kaggle"
    legacy.mkdir(parents=True)
    (legacy / "kaggle.json").write_text(json.dumps({"username": "me"}))
    with pytest.raises(KaggleCredentialsError, match=r'kaggle\.json has no "key"'):
        find_credentials(_env(tmp_path))


def test_environment_overrides_file_and_token_wins(tmp_path: Path) -> None:
    env = _env(tmp_path, KAGGLE_USERNAME="envuser", KAGGLE_KEY="envkey123456")
    assert find_credentials(env).source == "KAGGLE_USERNAME/KAGGLE_KEY"
    token_file = tmp_path / "home" / ".kaggle" / "access_token"
    token_file.parent.mkdir(parents=True)
    token_file.write_text("KGAT_tokenvalue\n")
    found = find_credentials(env)
    assert (found.kind, found.token, found.source) == ("token", "KGAT_tokenvalue", str(token_file))
    assert find_credentials({**env, "KAGGLE_API_TOKEN": "KGAT_fromenv"}).token == "KGAT_fromenv"


def test_redact_masks_values_assignments_and_headers() -> None:
    text = (
        'KAGGLE_KEY=s3cretvalue99 {"username": "me", "key": "otherkey777"} '
        "Authorization: Basic bWU6czNjcmV0 and s3cretvalue99 again"
    )
    out = redact(text, secrets=["s3cretvalue99"])
    assert "s3cretvalue99" not in out and "otherkey777" not in out and "bWU6czNjcmV0" not in out
    assert "me" in out


def test_scrubbed_environ_drops_secrets() -> None:
    env = scrubbed_environ({"KAGGLE_KEY": "k", "KAGGLE_USERNAME": "u", "KAGGLE_API_TOKEN": "t", "PATH": "/bin"})
    assert env == {"PATH": "/bin"}


def test_importing_the_official_package_is_silent_and_offline(tmp_path: Path) -> None:
    """With no credentials `import kaggle` prints a long help text, and with a token it calls
    Kaggle at import time. Ours must print nothing and connect nowhere: the token here points the
    package at a loopback socket that records any connection attempt."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(4)
        port = listener.getsockname()[1]
        env = {k: v for k, v in os.environ.items() if not k.startswith("KAGGLE_")}
        env |= {"HOME": str(tmp_path), "KAGGLE_API_TOKEN": "KGAT_should_not_be_sent", "KAGGLE_API_ENVIRONMENT": "LOCALHOST"}
        code = (
            "from kagglesdk.kaggle_env import KaggleEnv, _env_to_endpoint; "
            f"_env_to_endpoint[KaggleEnv.LOCAL] = 'http://127.0.0.1:{port}'; "
            "from agentk.kaggle.official import official_module; m = official_module(); "
            "import sys; assert 'kaggle' in sys.modules; print('imported', m.__name__, file=sys.stderr)"
        )
        done = subprocess.run([sys.executable, "-c", code], env=env, cwd=REPO, capture_output=True, text=True, timeout=60, check=False)
        readable, _, _ = select.select([listener], [], [], 0)
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    assert "imported kaggle.api.kaggle_api_extended" in done.stderr
    assert not readable, "importing the official package opened a connection"
