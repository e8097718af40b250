"""Run one official-client call: retry rate limits and server errors (bounded, with tenacity), map the rest to our
errors."""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

import requests
from tenacity import RetryCallState, Retrying, retry_if_exception_type, stop_after_attempt

from agentk.core.credentials import TOKEN_PAGE, redact
from agentk.core.retry import Transient, last_transient, retry_after_s
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

    def attempt() -> T:
        try:
            with quiet_stdout(what):
                return fn()
        except requests.HTTPError as exc:
            status = exc.response.status_code if exc.response is not None else 0
            if status not in _RETRIED:
                raise http_error(what, status, str(exc), slug, credentials_source) from None
            raise Transient(f"HTTP {status}", retry_after_s(exc.response)) from None
        except (requests.ConnectionError, requests.Timeout) as exc:
            raise Transient(type(exc).__name__) from None

    def wait(state: RetryCallState) -> float:
        return policy.delay(state.attempt_number - 1, last_transient(state).hint_s)

    def before_sleep(state: RetryCallState) -> None:
        assert state.next_action is not None
        log.info("%s: %s, retrying in %.1fs (%d/%d)", what, last_transient(state).message,
                 state.next_action.sleep, state.attempt_number, policy.attempts - 1)

    retrying = Retrying(stop=stop_after_attempt(policy.attempts), wait=wait, sleep=sleep,
                        retry=retry_if_exception_type(Transient), before_sleep=before_sleep, reraise=True)
    try:
        return retrying(attempt)
    except Transient as last:
        raise KaggleUnavailable(
            f"{what}: Kaggle kept failing ({last.message}) after {policy.attempts} attempts; try again later"
        ) from None


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
