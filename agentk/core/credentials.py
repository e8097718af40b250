"""Find Kaggle credentials where the official `kaggle` package looks, and keep them out of text.

Order (as kaggle 2.2.4 `KaggleApi.authenticate`): an access token (KAGGLE_API_TOKEN, as a value
or a path to a file, then ~/.kaggle/access_token[.txt]), then a legacy username/key (kaggle.json in
the config dir, overridden by KAGGLE_USERNAME/KAGGLE_KEY). OAuth logins (`kaggle auth login`,
~/.kaggle/credentials.json) need a network refresh and are not read here.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from agentk.core.errors import KaggleCredentialsError

TOKEN_PAGE = "https://www.kaggle.com/settings → API → Create New Token"
# Environment variables whose values are secrets; never copied into a sandbox or a log.
SECRET_ENV_VARS = ("KAGGLE_KEY", "KAGGLE_API_TOKEN", "KAGGLE_IAP_TOKEN")
# Too-short values would turn redaction into mangling ordinary words.
_MIN_SECRET_LEN = 6
REDACTED = "***"


@dataclass(frozen=True)
class KaggleCredentials:
    kind: Literal["token", "key"]
    source: str  # where they came from, for messages: "KAGGLE_API_TOKEN", "/home/me/.kaggle/kaggle.json"
    username: str | None = None
    key: str | None = field(default=None, repr=False)
    token: str | None = field(default=None, repr=False)

    @property
    def secrets(self) -> tuple[str, ...]:
        return tuple(s for s in (self.key, self.token) if s)


def config_dir(environ: Mapping[str, str] | None = None) -> Path:
    """The folder holding kaggle.json, decided as the official package decides it."""
    env = os.environ if environ is None else environ
    if env.get("KAGGLE_CONFIG_DIR"):
        return Path(env["KAGGLE_CONFIG_DIR"]).expanduser()
    home = Path(env.get("HOME") or Path.home())
    legacy = home / ".kaggle"
    if sys.platform.startswith("linux") and not legacy.exists():
        return Path(env.get("XDG_CONFIG_HOME") or home / ".config") / "kaggle"
    return legacy


def find_credentials(environ: Mapping[str, str] | None = None) -> KaggleCredentials:
    """The credentials the official client would use; KaggleCredentialsError says what is missing."""
    env = os.environ if environ is None else environ
    token = _access_token(env)
    if token is not None:
        return token
    kaggle_json = config_dir(env) / "kaggle.json"
    file_values = _read_kaggle_json(kaggle_json)
    username = env.get("KAGGLE_USERNAME") or file_values.get("username")
    key = env.get("KAGGLE_KEY") or file_values.get("key")
    if username and key:
        source = "KAGGLE_USERNAME/KAGGLE_KEY" if env.get("KAGGLE_KEY") else str(kaggle_json)
        return KaggleCredentials("key", source, username=str(username), key=str(key))
    raise KaggleCredentialsError(_missing_message(env, kaggle_json, file_values, username, key))


def _access_token(env: Mapping[str, str]) -> KaggleCredentials | None:
    value = env.get("KAGGLE_API_TOKEN")
    if value:
        path = Path(value).expanduser()
        if path.is_file():
            text = path.read_text().strip()
            return KaggleCredentials("token", str(path), token=text) if text else None
        return KaggleCredentials("token", "KAGGLE_API_TOKEN", token=value.strip())
    home = Path(env.get("HOME") or Path.home())
    for path in (home / ".kaggle" / "access_token", home / ".kaggle" / "access_token.txt"):
        if path.is_file() and path.read_text().strip():
            return KaggleCredentials("token", str(path), token=path.read_text().strip())
    return None


def _read_kaggle_json(path: Path) -> dict[str, str]:
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text() or "{}")
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        raise KaggleCredentialsError(
            f"{path} is not valid JSON: download a fresh kaggle.json ({TOKEN_PAGE})"
        ) from None
    if not isinstance(data, dict):
        raise KaggleCredentialsError(f"{path} should hold {{\"username\": ..., \"key\": ...}} ({TOKEN_PAGE})")
    return {k: str(v) for k, v in data.items() if isinstance(v, (str, int))}


def _missing_message(
    env: Mapping[str, str], kaggle_json: Path, file_values: Mapping[str, str], username: str | None, key: str | None
) -> str:
    if kaggle_json.is_file():
        missing = " and ".join(f'"{name}"' for name, v in (("username", username), ("key", key)) if not v)
        return f"{kaggle_json} has no {missing}: download a fresh kaggle.json ({TOKEN_PAGE})"
    if env.get("KAGGLE_USERNAME") and not key:
        return f"KAGGLE_USERNAME is set but KAGGLE_KEY is not: set KAGGLE_KEY or put kaggle.json in {kaggle_json.parent}/ ({TOKEN_PAGE})"
    if env.get("KAGGLE_KEY") and not username:
        return f"KAGGLE_KEY is set but KAGGLE_USERNAME is not: set KAGGLE_USERNAME or put kaggle.json in {kaggle_json.parent}/ ({TOKEN_PAGE})"
    return (
        f"no Kaggle credentials: set KAGGLE_USERNAME and KAGGLE_KEY (or KAGGLE_API_TOKEN), "
        f"or put kaggle.json in {kaggle_json.parent}/ ({TOKEN_PAGE})"
    )


def known_secrets(environ: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """Every secret value we can find, without failing when there are none."""
    env = os.environ if environ is None else environ
    found = [env[name] for name in SECRET_ENV_VARS if env.get(name)]
    try:
        found.extend(find_credentials(env).secrets)
    except KaggleCredentialsError:
        pass
    return tuple(dict.fromkeys(s for s in found if len(s) >= _MIN_SECRET_LEN))


_ASSIGNMENT = re.compile(
    r"""(?P<name>KAGGLE_KEY|KAGGLE_API_TOKEN|"key"|'key'|"token"|'token')(?P<sep>\s*[=:]\s*["']?)(?P<value>[^\s"',}]+)"""
)
_BEARER = re.compile(r"(Authorization:\s*(?:Bearer|Basic)\s+)\S+", re.IGNORECASE)


def redact(text: str, secrets: Iterable[str] | None = None) -> str:
    """`text` with every known secret value, `KAGGLE_KEY=...`-style assignment and auth header masked."""
    values = known_secrets() if secrets is None else tuple(s for s in secrets if len(s) >= _MIN_SECRET_LEN)
    for value in sorted(values, key=len, reverse=True):
        text = text.replace(value, REDACTED)
    text = _ASSIGNMENT.sub(lambda m: f"{m['name']}{m['sep']}{REDACTED}", text)
    return _BEARER.sub(lambda m: f"{m.group(1)}{REDACTED}", text)


def scrubbed_environ(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """A copy of the environment fit for generated code: no Kaggle secrets, no pointer to them."""
    env = dict(os.environ if environ is None else environ)
    for name in (*SECRET_ENV_VARS, "KAGGLE_USERNAME", "KAGGLE_CONFIG_DIR"):
        env.pop(name, None)
    return env
