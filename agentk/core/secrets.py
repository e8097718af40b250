"""What a secret is, and how to keep one out of text: the one place that knows.

A secret is (1) the value of an environment variable with a secret-looking name, (2) a Kaggle key
or token found where the official client looks (agentk/core/credentials.py), (3) a value
registered at runtime (the LLM API key from the LLM config), or (4) anything shaped like a
well-known credential (OpenAI/Hugging Face/GitHub/AWS/Google keys, private-key blocks, a Kaggle
`"key": "<32 hex>"`, `Authorization: Bearer ...`, `SOME_TOKEN=...`).

`redact(text)` replaces each with `[REDACTED]`; `redact_obj(obj)` does it for every string in a
JSON-like record; `redact_values(text)` replaces only the known values (1-3), for a model's reply,
whose code runs as written. They run on every event line, log record, cache entry and prompt, so the known
values and the shapes are compiled into one regex, rebuilt only when the environment, the
credential files or the registered values change.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from agentk.core import credentials
from agentk.core.credentials import config_dir
from agentk.core.errors import AgentKError

REDACTED = "[REDACTED]"

# Environment variable names whose values are secrets (matched case-insensitively).
_SECRET_PATTERNS = (
    "KAGGLE*", "*API_KEY*", "*APIKEY*", "*TOKEN*", "*SECRET*", "*PASSWORD*", "*PASSWD*",
    "*CREDENTIAL*", "*ACCESS_KEY*", "*PRIVATE_KEY*", "OPENAI*", "AWS_*", "HF_TOKEN",
)
_SECRET_NAME = re.compile("|".join(fnmatch.translate(p) for p in _SECRET_PATTERNS))

# Shorter values would turn redaction into mangling ordinary words and numbers.
MIN_SECRET_LEN = 8
# Values secret-named variables commonly hold that are settings, not secrets.
_NOT_SECRETS = frozenset({"true", "false", "yes", "no", "none", "null", "default", "disabled", "enabled"})

# Credential shapes, secret whatever their source. A match keeps its `keep` group (a label such as
# `"key": "` or `Bearer `) and loses the rest.
_SHAPES = (
    r"-----BEGIN[A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END[A-Z ]*PRIVATE KEY-----|\Z)",
    r"\bsk-(?:proj-|ant-|svcacct-)?[A-Za-z0-9_\-]{20,}",
    r"\bhf_[A-Za-z0-9]{30,}",
    r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b",
    r"\bgh[pousr]_[A-Za-z0-9]{36,}",
    r"\bgithub_pat_[A-Za-z0-9_]{22,}",
    r"\bAIza[0-9A-Za-z_\-]{35}",
    r"\bxox[abprs]-[A-Za-z0-9\-]{10,}",
    r"\bKGAT_[A-Za-z0-9]{16,}",
    # kaggle.json's key: 32 hex digits (a 64-hex sha256 cache key does not match).
    r"""(?P<keep_json>["']key["']\s*:\s*["'])[0-9a-fA-F]{32}(?=["'])""",
    r"(?P<keep_auth>\b(?:Bearer|Basic)\s+)[A-Za-z0-9_\-.=+/]{16,}",
    # NAME=value or "NAME": "value" for a secret-looking upper-case name (environment dumps).
    r"""(?P<keep_env>\b[A-Z0-9_]*(?:API_?KEY|TOKEN|SECRET|PASSWORD|PASSWD|ACCESS_KEY|PRIVATE_KEY|CREDENTIAL|KAGGLE_KEY)"""
    r"""[A-Z0-9_]*["']?\s*[=:]\s*["']?)(?!\d+(?:[\s"',}]|$))[^\s"',}]{8,}""",
)
_KEEP_GROUPS = ("keep_json", "keep_auth", "keep_env")
# Every shape's match contains one of these. Plain literals let the regex engine skip ahead, so a
# line without any (nearly every line) is passed through at a fraction of the shapes' cost.
_TRIGGERS = (
    "-----BEGIN", "sk-", "hf_", "AKIA", "ASIA", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_",
    "AIza", "xox", "KGAT_", 'key"', "key'", "Bearer", "Basic", "KEY", "TOKEN", "SECRET", "PASSW", "CREDENTIAL",
)


def is_secret_name(key: str) -> bool:
    """True for an environment variable name that may hold a credential (never given to a sandbox)."""
    return _SECRET_NAME.match(key.upper()) is not None


# Looking at the environment and the credential files costs about as much as redacting a line;
# they are looked at again at most this often (and at once after `register` or `refresh`).
_RECHECK_S = 1.0

_lock = threading.Lock()
_registered: set[str] = set()
_compiled: _Scrubber | None = None
_checked_at = float("-inf")


def register(value: str | None) -> None:
    """Treat `value` as a secret from now on (a key given by flag or config, not the environment)."""
    if value and _is_candidate(value):
        with _lock:
            _registered.add(value)
        refresh()


def refresh() -> None:
    """Look at the environment and the credential files again on the next redaction."""
    global _checked_at
    _checked_at = float("-inf")


def _is_candidate(value: str) -> bool:
    value = value.strip()
    if len(value) < MIN_SECRET_LEN or value.lower() in _NOT_SECRETS:
        return False
    if re.fullmatch(r"[\d.,:+\-]+", value):  # numbers, versions, ports
        return False
    # A path in a secret-named variable (KAGGLE_CONFIG_DIR, a token file) is where a secret is,
    # not the secret; the file's content is read below.
    if value.startswith(("/", "~", "./", "../")):
        try:
            return not Path(value).expanduser().exists()
        except (OSError, RuntimeError):
            return True
    return True


def _credential_files(env: Mapping[str, str]) -> tuple[Path, ...]:
    home = Path(env.get("HOME") or Path.home())
    return (config_dir(env) / "kaggle.json", home / ".kaggle" / "access_token", home / ".kaggle" / "access_token.txt")


def _fingerprint(env: Mapping[str, str]) -> object:
    """Everything the known values depend on, cheap to compute on every call."""
    named = tuple(sorted((k, v) for k, v in env.items() if is_secret_name(k)))
    stats = []
    for path in _credential_files(env):
        try:
            st = path.stat()
            stats.append((st.st_mtime_ns, st.st_size))
        except OSError:
            stats.append(None)
    return named, env.get("HOME"), env.get("XDG_CONFIG_HOME"), tuple(stats), frozenset(_registered)


def _kaggle_values(env: Mapping[str, str]) -> list[str]:
    """Kaggle secrets where the official client looks; both the environment's and the files'
    (an environment KAGGLE_KEY hides kaggle.json's key from the client, not from generated code)."""
    found: list[str] = []
    without_env = {k: v for k, v in env.items() if k not in credentials.SECRET_ENV_VARS}
    for environ in (env, without_env):
        try:
            found.extend(credentials.known_secrets(environ))
        except (OSError, ValueError, AgentKError):
            pass
    try:
        data = json.loads(_credential_files(env)[0].read_text(encoding="utf-8"))
        if isinstance(data, dict) and data.get("key"):
            found.append(str(data["key"]))
    except (OSError, ValueError):
        pass
    return found


@dataclass(frozen=True)
class _Scrubber:
    fingerprint: object
    known: frozenset[str]
    trigger: re.Pattern[str]  # cheap: does the text hold anything `full` could match?
    full: re.Pattern[str]
    values: re.Pattern[str] | None  # the known values alone, without the shapes

    def sub(self, text: str) -> str:
        if not text or self.trigger.search(text) is None:
            return text
        return self.full.sub(_replace, text)


def _scrubber(env: Mapping[str, str]) -> _Scrubber:
    global _compiled, _checked_at
    current = _compiled
    now = time.monotonic()
    if current is not None and env is os.environ and now - _checked_at < _RECHECK_S:
        return current
    fingerprint = _fingerprint(env)
    if env is os.environ:
        _checked_at = now
    if current is not None and current.fingerprint == fingerprint:
        return current
    values = [v for k, v in env.items() if is_secret_name(k) and v]
    values += _kaggle_values(env)
    with _lock:
        values += _registered
    # The stripped value too: a token file or a pasted key often carries a newline.
    known = frozenset(s for v in values for s in {v, v.strip()} if _is_candidate(s))
    literals = [re.escape(v) for v in sorted(known, key=len, reverse=True)]
    trigger = re.compile("|".join([*literals, *(re.escape(t) for t in _TRIGGERS)]))
    _compiled = _Scrubber(fingerprint, known, trigger, re.compile("|".join([*literals, *_SHAPES])),
                          re.compile("|".join(literals)) if literals else None)
    return _compiled


def _replace(match: re.Match[str]) -> str:
    for name in _KEEP_GROUPS:
        kept = match.group(name)
        if kept is not None:
            return kept + REDACTED
    return REDACTED


def redact(text: str) -> str:
    """`text` with every known secret value and credential-shaped string replaced by [REDACTED]."""
    return _scrubber(os.environ).sub(text) if text else text


def redact_values(text: str) -> str:
    """`text` with only the known secret values replaced: for code that will run, which must stay
    exactly as written except for a real secret (credential *shapes* match ordinary code, such as
    `TOKEN_COLUMN = "access_token_hash"`, and are redacted only where text is stored or shown)."""
    if not text:
        return text
    values = _scrubber(os.environ).values
    return values.sub(REDACTED, text) if values is not None else text


T = TypeVar("T")


def redact_obj(obj: T) -> T:
    """A copy of a JSON-like record (dicts, lists, tuples, strings) with every string redacted;
    other values are returned as they are."""
    scrubber = _scrubber(os.environ)

    def walk(value: Any) -> Any:
        if isinstance(value, str):
            return scrubber.sub(value)
        if isinstance(value, dict):
            return {walk(k): walk(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return type(value)(walk(v) for v in value)
        return value

    return walk(obj)
