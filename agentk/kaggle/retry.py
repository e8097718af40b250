"""Run one official-client call: retry rate limits and server errors (bounded), map the rest to our errors."""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

import requests

from agentk.core.credentials import TOKEN_PAGE, redact
from agentk.kaggle.errors import (
    CompetitionNotFound,
    KaggleCredentialsError,
    KaggleError,
    KaggleUnavailable,
    RulesNotAccepted,
)
from agentk.kaggle.official import quiet_stdout

log = logging.getLogger(__name__)
T = TypeVar("T")
_RETRIED = {429, 500, 502, 503, 504}


@dataclass(frozen=True)
class RetryPolicy:
    attempts: int = 5
    base_delay_s: float = 1.0
    max_delay_s: float = 30.0  # also caps a server's Retry-After, so a run never stalls for hours

    def delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.max_delay_s)
        # Jitter spreads out parallel runs that were throttled together.
        return min(self.base_delay_s * 2**attempt * (1 + 0.25 * random.random()), self.max_delay_s)


def call_kaggle(
    what: str,
    fn: Callable[[], T],
    slug: str,
    credentials_source: str,
    policy: RetryPolicy | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> T:
    """`fn()` with Kaggle's failures turned into one-line KaggleErrors; `what` names the action."""
    policy = policy or RetryPolicy()
    last = ""
    for attempt in range(policy.attempts):
        try:
            with quiet_stdout(what):
                return fn()
        except requests.HTTPError as exc:
            status = exc.response.status_code if exc.response is not None else 0
            if status not in _RETRIED:
                raise http_error(what, status, str(exc), slug, credentials_source) from None
            last = f"HTTP {status}"
            retry_after = _retry_after(exc.response)
        except (requests.ConnectionError, requests.Timeout) as exc:
            last = f"{type(exc).__name__}"
            retry_after = None
        if attempt + 1 < policy.attempts:
            wait = policy.delay(attempt, retry_after)
            log.info("%s: %s, retrying in %.1fs (%d/%d)", what, last, wait, attempt + 1, policy.attempts - 1)
            sleep(wait)
    raise KaggleUnavailable(
        f"{what}: Kaggle kept failing ({last}) after {policy.attempts} attempts; try again later"
    )


def http_error(what: str, status: int, message: str, slug: str, credentials_source: str) -> KaggleError:
    if status == 401:
        return KaggleCredentialsError(
            f"Kaggle rejected the credentials from {credentials_source} (HTTP 401): "
            f"create a new token ({TOKEN_PAGE})"
        )
    if status == 403:
        return RulesNotAccepted(slug)
    if status == 404:
        return CompetitionNotFound(slug)
    detail = redact(message.strip().splitlines()[0]) if message.strip() else "no detail"
    return KaggleError(f"{what}: Kaggle answered HTTP {status}: {detail}")


def _retry_after(response: requests.Response | None) -> float | None:
    if response is None:
        return None
    try:
        return float(response.headers.get("Retry-After", ""))
    except ValueError:
        return None
