"""Kaggle as a competition source and submission target, through the official `kaggle` package.

Public API: `parse_competition_reference`, `find_credentials`, `redact`, `scrubbed_environ`,
`KaggleClient` (metadata, pages, files, download, submit, poll, leaderboard, limits), `extract_zip`,
and the one-line errors in `agentk.kaggle.errors`; code competitions' datasets, kernels and kernel
submissions are in `agentk.kaggle.kernels`, the folders they send in `agentk.kaggle.kernel_bundle`.
Importing this package never imports `kaggle`.
"""

from agentk.kaggle.client import KaggleClient
from agentk.core.credentials import (
    KaggleCredentials,
    find_credentials,
    redact,
    scrubbed_environ,
)
from agentk.kaggle.errors import (
    CompetitionNotFound,
    DailyLimitReached,
    DuplicateSubmission,
    KaggleCredentialsError,
    KaggleError,
    KaggleUnavailable,
    RulesNotAccepted,
    SubmissionFailed,
    UnsafeArchive,
)
from agentk.kaggle.extract import extract_zip
from agentk.kaggle.records import (
    CompetitionInfo,
    DataFile,
    KaggleSubmission,
    SubmissionLimits,
)
from agentk.kaggle.reference import competition_url, parse_competition_reference
from agentk.kaggle.retry import RetryPolicy

__all__ = [
    "CompetitionInfo", "CompetitionNotFound", "DailyLimitReached", "DataFile", "DuplicateSubmission",
    "KaggleClient", "KaggleCredentials", "KaggleCredentialsError", "KaggleError", "KaggleUnavailable",
    "RetryPolicy", "RulesNotAccepted", "SubmissionFailed", "SubmissionLimits", "KaggleSubmission",
    "UnsafeArchive", "competition_url", "extract_zip", "find_credentials", "parse_competition_reference",
    "redact", "scrubbed_environ",
]
