"""The shared Retry-After reader and the Kaggle retry loop's waits, with no server."""

from __future__ import annotations

import email.utils
import time

import pytest
import requests

from agentk.core.retry import retry_after_s
from agentk.kaggle import KaggleUnavailable, RetryPolicy
from agentk.kaggle.retry import call_kaggle


def _response(status: int, retry_after: str | None = None) -> requests.Response:
    response = requests.Response()
    response.status_code = status
    if retry_after is not None:
        response.headers["Retry-After"] = retry_after
    return response


def test_retry_after_forms() -> None:
    assert retry_after_s(None) is None
    assert retry_after_s(_response(429)) is None
    assert retry_after_s(_response(429, "7")) == 7.0
    assert retry_after_s(_response(429, "-3")) == 0.0
    assert retry_after_s(_response(429, "soon")) is None
    later = retry_after_s(_response(503, email.utils.formatdate(time.time() + 60, usegmt=True)))
    assert later is not None and 55 < later <= 60


def _failing(responses: list[requests.Response]):
    def fn() -> str:
        if not responses:
            return "ok"
        raise requests.HTTPError("busy", response=responses.pop(0))
    return fn


def test_kaggle_waits_what_the_server_asks_capped() -> None:
    waits: list[float] = []
    fn = _failing([_response(429, "2"), _response(503, "3600")])
    policy = RetryPolicy(attempts=3, max_delay_s=30.0)
    assert call_kaggle("reading", fn, "titanic", "env", policy, sleep=waits.append) == "ok"
    assert waits == [2.0, 30.0]


def test_kaggle_gives_up_after_its_attempts() -> None:
    waits: list[float] = []
    fn = _failing([_response(502) for _ in range(5)])
    with pytest.raises(KaggleUnavailable, match=r"reading: Kaggle kept failing \(HTTP 502\) after 3 attempts"):
        call_kaggle("reading", fn, "titanic", "env", RetryPolicy(attempts=3, base_delay_s=0.01), sleep=waits.append)
    assert len(waits) == 2 and all(0.01 <= w <= 0.05 for w in waits)
