"""Kaggle as a competition source and submission target, through the official `kaggle` package.

Public API: `parse_competition_reference`, `find_credentials`, `redact`, `scrubbed_environ`,
`KaggleClient` (metadata, pages, files, download, submit, poll, leaderboard, limits), `extract_zip`,
and the one-line errors in `agentk.kaggle.errors`; code competitions' datasets, kernels and kernel
submissions are in `agentk.kaggle.kernels`, the folders they send in `agentk.kaggle.kernel_bundle`.
Importing this package never imports `kaggle`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentk.core.lazy_exports import lazy_exports

if TYPE_CHECKING:
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

# Each name is imported from its module on first use (PEP 562): every run reads a competition
# reference (`agentk.kaggle.reference`), and the client's requests and pandas imports would cost a
# local run for nothing.
_MODULE_OF = {
    "CompetitionInfo": "agentk.kaggle.records",
    "CompetitionNotFound": "agentk.kaggle.errors",
    "DailyLimitReached": "agentk.kaggle.errors",
    "DataFile": "agentk.kaggle.records",
    "DuplicateSubmission": "agentk.kaggle.errors",
    "KaggleClient": "agentk.kaggle.client",
    "KaggleCredentials": "agentk.core.credentials",
    "KaggleCredentialsError": "agentk.kaggle.errors",
    "KaggleError": "agentk.kaggle.errors",
    "KaggleSubmission": "agentk.kaggle.records",
    "KaggleUnavailable": "agentk.kaggle.errors",
    "RetryPolicy": "agentk.kaggle.retry",
    "RulesNotAccepted": "agentk.kaggle.errors",
    "SubmissionFailed": "agentk.kaggle.errors",
    "SubmissionLimits": "agentk.kaggle.records",
    "UnsafeArchive": "agentk.kaggle.errors",
    "competition_url": "agentk.kaggle.reference",
    "extract_zip": "agentk.kaggle.extract",
    "find_credentials": "agentk.core.credentials",
    "parse_competition_reference": "agentk.kaggle.reference",
    "redact": "agentk.core.credentials",
    "scrubbed_environ": "agentk.core.credentials",
}


__getattr__ = lazy_exports(globals(), _MODULE_OF)


__all__ = [
    "CompetitionInfo", "CompetitionNotFound", "DailyLimitReached", "DataFile", "DuplicateSubmission",
    "KaggleClient", "KaggleCredentials", "KaggleCredentialsError", "KaggleError", "KaggleUnavailable",
    "RetryPolicy", "RulesNotAccepted", "SubmissionFailed", "SubmissionLimits", "KaggleSubmission",
    "UnsafeArchive", "competition_url", "extract_zip", "find_credentials", "parse_competition_reference",
    "redact", "scrubbed_environ",
]
