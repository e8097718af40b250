"""Plain records for what Kaggle tells us; the rest of agentk never sees kagglesdk objects."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from agentk.kaggle.errors import rules_url


@dataclass(frozen=True)
class CompetitionInfo:
    slug: str
    title: str
    url: str
    deadline: datetime | None
    metric: str  # Kaggle's display name, e.g. "Categorization Accuracy"
    team_count: int
    max_daily_submissions: int
    submissions_disabled: bool = False
    kernels_only: bool = False  # code competitions cannot take a CSV upload

    @property
    def rules_url(self) -> str:
        return rules_url(self.slug)


@dataclass(frozen=True)
class DataFile:
    name: str
    size: int  # bytes, uncompressed, as Kaggle lists it


@dataclass(frozen=True)
class KaggleSubmission:
    ref: int
    file_name: str
    message: str
    status: Literal["pending", "complete", "error"]
    public_score: float | None
    private_score: float | None
    date: datetime | None
    error: str | None = None

    @property
    def done(self) -> bool:
        return self.status != "pending"


@dataclass(frozen=True)
class SubmissionLimits:
    today: int
    total: int
    allowed_now: int
    limited_by_total: bool


def competition_info(slug: str, api_competition: Any) -> CompetitionInfo:
    return CompetitionInfo(
        slug=slug,
        title=api_competition.title or slug,
        url=_absolute_url(api_competition.url, slug),
        deadline=api_competition.deadline,
        metric=api_competition.evaluation_metric or "",
        team_count=int(api_competition.team_count or 0),
        max_daily_submissions=int(api_competition.max_daily_submissions or 0),
        submissions_disabled=bool(api_competition.submissions_disabled),
        kernels_only=bool(api_competition.is_kernels_submissions_only),
    )


def kaggle_submission(api_submission: Any) -> KaggleSubmission:
    status = getattr(api_submission.status, "name", str(api_submission.status or "PENDING"))
    return KaggleSubmission(
        ref=int(api_submission.ref or 0),
        file_name=api_submission.file_name or "",
        message=api_submission.description or "",
        status=status.rsplit("_", 1)[-1].lower(),
        public_score=parse_score(api_submission.public_score),
        private_score=parse_score(api_submission.private_score),
        date=api_submission.date,
        error=api_submission.error_description or None,
    )


def parse_score(text: object) -> float | None:
    """Kaggle sends scores as strings, empty while pending or when hidden (private before the end)."""
    if text is None or str(text).strip() == "":
        return None
    try:
        value = float(str(text))
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _absolute_url(url: str | None, slug: str) -> str:
    if url and url.startswith("http"):
        return url
    if url:
        return "https://www.kaggle.com/" + url.lstrip("/")
    return f"https://www.kaggle.com/competitions/{slug}"
