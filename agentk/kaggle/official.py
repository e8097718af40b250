"""Import the official `kaggle` package quietly and build an API object from our credentials.

`import kaggle` authenticates at import time: with no credentials it prints a long help text to
stdout and exits (swallowed); with an access token it calls Kaggle over the network. We import it
once with HOME pointed at an empty folder (no token or OAuth file found, so no network and no
surprise) and stdout captured, then give each API object the credentials we resolved ourselves.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import logging
import math
import os
import re
import tempfile
import threading
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any, TypeVar

from requests.adapters import HTTPAdapter

from agentk.core.credentials import KaggleCredentials, config_dir, redact
from agentk.kaggle.errors import KaggleError, KaggleUnavailable

log = logging.getLogger(__name__)
T = TypeVar("T")
_import_lock = threading.Lock()
_module: ModuleType | None = None


def official_module() -> ModuleType:
    """The `kaggle.api.kaggle_api_extended` module, imported without output or network calls."""
    global _module
    with _import_lock:
        if _module is not None:
            return _module
        with tempfile.TemporaryDirectory(prefix="agentk-kaggle-home-") as empty_home:
            # Keep the real config dir: the package fixes it in a class attribute at import.
            overrides = {"HOME": empty_home, "KAGGLE_CONFIG_DIR": str(config_dir())}
            hidden = ("KAGGLE_API_TOKEN", "KAGGLE_USERNAME", "KAGGLE_KEY")
            with _environ(overrides, hidden), quiet_stdout("import kaggle"):
                # Not `import kaggle.api.kaggle_api_extended as ...`: the package rebinds `kaggle.api`
                # to a KaggleApi instance, which breaks attribute-style submodule access.
                extended = importlib.import_module("kaggle.api.kaggle_api_extended")
        _module = extended
        return extended


class _TimeoutAdapter(HTTPAdapter):
    """Gives every request of a session (redirects included) a (connect, read) timeout when it has none."""

    def __init__(self, timeout: tuple[float, float]) -> None:
        super().__init__()
        self._timeout = timeout

    def send(self, request: Any, timeout: Any = None, **kwargs: Any) -> Any:  # type: ignore[override]
        return super().send(request, timeout=self._timeout if timeout is None else timeout, **kwargs)


def with_timeouts(client: Any, timeout: tuple[float, float]) -> Any:
    """`client` (a kagglesdk KaggleClient) with `timeout` on every request its session sends.

    kagglesdk sends with no timeout at all (a stalled answer hangs forever), and the official
    package builds a fresh client inside each call, so the session is reached here, per client.
    """
    http = client.http_client()
    http._init_session()  # lazy in kagglesdk; idempotent
    adapter = _TimeoutAdapter(timeout)
    for prefix in ("https://", "http://"):
        http._session.mount(prefix, adapter)
    return client


def build_api(credentials: KaggleCredentials, timeout: tuple[float, float]) -> Any:
    """A fresh `KaggleApi` that authenticates with `credentials` (no token introspection call);
    every request it sends through kagglesdk gets `timeout` (connect, read) in seconds."""
    extended = official_module()
    api = extended.KaggleApi()
    build_client = api.build_kaggle_client
    api.build_kaggle_client = lambda: with_timeouts(build_client(), timeout)
    # The class decides local-vs-prod from the environment at import time; decide it now instead,
    # so KAGGLE_API_ENVIRONMENT set after the first import still counts.
    api.args = ["--local"] if os.environ.get("KAGGLE_API_ENVIRONMENT") == "LOCALHOST" else []
    if api.args:
        _point_local_environment()
    values: dict[str, str] = {}
    if credentials.kind == "token" and credentials.token:
        values[api.CONFIG_NAME_TOKEN] = credentials.token
        values[api.CONFIG_NAME_AUTH_METHOD] = str(extended.AuthMethod.ACCESS_TOKEN)
    else:
        values[api.CONFIG_NAME_USER] = credentials.username or ""
        values[api.CONFIG_NAME_KEY] = credentials.key or ""
        values[api.CONFIG_NAME_AUTH_METHOD] = str(extended.AuthMethod.LEGACY_API_KEY)
    if credentials.username:
        values[api.CONFIG_NAME_USER] = credentials.username
    api.config_values = values
    api._authenticated = True
    return api


def call_with_deadline(what: str, fn: Callable[[], T], timeout_s: float | None) -> T:
    """`fn()`, or KaggleUnavailable once `timeout_s` of wall-clock time has passed without an answer.

    The official client sets no timeouts and builds a fresh requests.Session inside each call, so
    there is no session of ours to give a default timeout; a worker thread bounds every call alike
    (connect, slow headers, a body that never ends). A call that overruns is abandoned, not killed:
    its daemon thread ends when the socket does, and its result is dropped.
    """
    if timeout_s is None or math.isinf(timeout_s):
        return fn()
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread below
            outcome["error"] = exc

    worker = threading.Thread(target=run, name=f"kaggle: {what}", daemon=True)
    worker.start()
    worker.join(timeout_s)
    if worker.is_alive():
        raise KaggleUnavailable(
            f"{what}: Kaggle did not answer within {timeout_s:g} s; check the connection or try again later"
        )
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


@contextlib.contextmanager
def quiet_stdout(what: str) -> Iterator[None]:
    """Capture what the package prints (help, warnings, upload errors) and log it, redacted."""
    buffer = io.StringIO()
    try:
        with contextlib.redirect_stdout(buffer):
            yield
    finally:
        text = buffer.getvalue().strip()
        if text:
            log.debug("%s printed: %s", what, redact(text))


@contextlib.contextmanager
def _environ(overrides: dict[str, str], hidden: tuple[str, ...]) -> Iterator[None]:
    saved = {name: os.environ.get(name) for name in (*overrides, *hidden)}
    os.environ.update(overrides)
    for name in hidden:
        os.environ.pop(name, None)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


LOCAL_ENDPOINT_ENV = "AGENTK_KAGGLE_LOCAL_ENDPOINT"
_LOOPBACK = re.compile(r"^http://(127\.0\.0\.1|localhost)(:\d+)?/?$")


def _point_local_environment() -> None:
    """kagglesdk sends KAGGLE_API_ENVIRONMENT=LOCALHOST to http://localhost on port 80. A Kaggle
    stand-in on another port of this machine (a test server a campaign's runs must reach from their
    own processes, a local mirror) is named by AGENTK_KAGGLE_LOCAL_ENDPOINT. Only the local
    environment is redirected, and only to loopback, so credentials never travel anywhere new."""
    endpoint = os.environ.get(LOCAL_ENDPOINT_ENV)
    if not endpoint:
        return
    if not _LOOPBACK.match(endpoint):
        raise KaggleError(f"{LOCAL_ENDPOINT_ENV} must be http://127.0.0.1:PORT or http://localhost:PORT, not {endpoint!r}")
    from kagglesdk.kaggle_env import KaggleEnv, _env_to_endpoint

    _env_to_endpoint[KaggleEnv.LOCAL] = endpoint.rstrip("/")
