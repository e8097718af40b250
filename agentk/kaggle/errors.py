"""Kaggle errors: each one reaches the user as a single actionable line (see agentk/core/errors.py)."""

from __future__ import annotations

# Credentials are read on the ground floor too (the sandbox must hide them): their error lives there.
from agentk.core.errors import KaggleCredentialsError as KaggleCredentialsError
from agentk.core.errors import KaggleError as KaggleError
from agentk.core.errors import UnsafeArchive as UnsafeArchive  # archive checks serve local data too: agentk.core.reading.archives


class RulesNotAccepted(KaggleError):
    """HTTP 403: the account has not accepted this competition's rules (or may not enter it)."""

    def __init__(self, slug: str) -> None:
        self.slug = slug
        self.rules_url = rules_url(slug)
        super().__init__(
            f"Kaggle refused access to {slug!r} (HTTP 403): accept the competition rules at {self.rules_url}"
        )


class CompetitionNotFound(KaggleError):
    """HTTP 404 for the competition itself."""

    def __init__(self, slug: str) -> None:
        self.slug = slug
        super().__init__(
            f"Kaggle competition {slug!r} not found (HTTP 404): check the slug in "
            f"https://www.kaggle.com/competitions/{slug}"
        )


class KaggleUnavailable(KaggleError):
    """Rate limiting (429) or server errors (5xx) persisted through every retry."""


class DailyLimitReached(KaggleError):
    """No submissions left today."""


class DuplicateSubmission(KaggleError):
    """The same file was already sent to this competition (pass force to send it again)."""


class SubmissionFailed(KaggleError):
    """Kaggle did not accept, or could not score, a submission."""


class DownloadFailed(KaggleError):
    """A data download could not finish (no room on the disk, a body cut short every time)."""


class DownloadStalled(DownloadFailed):
    """No bytes arrived for the stall timeout; not retried, since a stalled server tends to stay stalled."""


def rules_url(slug: str) -> str:
    return f"https://www.kaggle.com/competitions/{slug}/rules"
