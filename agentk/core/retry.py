"""What the HTTP clients share when they retry (with tenacity): the server's Retry-After, and the
failure that is worth another attempt.

A call raises `Transient` for a failure another attempt may cure (429, 5xx, a refused connection);
the client's tenacity loop retries only those and turns the last one into its own error.
"""

from __future__ import annotations

import email.utils
import time

import requests
from tenacity import RetryCallState


class Transient(Exception):
    """A failure worth another attempt; `hint_s` is the server's Retry-After, `kind` the error to raise
    if every attempt fails like this."""

    def __init__(self, message: str, hint_s: float | None = None, kind: type[Exception] = RuntimeError) -> None:
        super().__init__(message)
        self.message = message
        self.hint_s = hint_s
        self.kind = kind


def retry_after_s(response: requests.Response | None) -> float | None:
    """Retry-After as seconds (integer or HTTP-date form), or None when absent or unreadable."""
    value = response.headers.get("Retry-After") if response is not None else None
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def last_transient(state: RetryCallState) -> Transient:
    """The Transient the attempt that just ended raised (tenacity retries nothing else)."""
    assert state.outcome is not None
    exc = state.outcome.exception()
    assert isinstance(exc, Transient)
    return exc
