"""`KaggleClient`: the competition calls agentk needs, through the official `kaggle` package.

Every call goes through `call_kaggle` (bounded retries, one-line errors) and returns our own records.
"""

from __future__ import annotations

import io
import math
import re
import tempfile
import time
import zipfile
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import pandas as pd

from agentk.kaggle import records
from agentk.core.credentials import KaggleCredentials, find_credentials
from agentk.kaggle.errors import DailyLimitReached, KaggleError, SubmissionFailed
from agentk.core.reading.archives import DEFAULT_LIMITS, ArchiveLimits, check_zip, extract_zip
from agentk.core.errors import ArchiveError
from agentk.kaggle.download import (
    DownloadSettings,
    competition_archive,
    leaderboard_archive,
    remove_leftovers,
)
from agentk.kaggle.official import build_api, call_with_deadline
from agentk.kaggle.records import (
    CompetitionInfo,
    DataFile,
    KaggleSubmission,
    SubmissionLimits,
)
from agentk.kaggle.reference import parse_competition_reference
from agentk.kaggle.retry import RetryPolicy, call_kaggle

T = TypeVar("T")
_MAX_PAGES = 100  # listing pages; a competition with more than 20,000 files is not one we can solve
_LIMIT_WORDS = ("limit", "allowance", "maximum number")
# The slowest upload still called alive: below it, an upload is a stall.
UPLOAD_MIN_BYTES_PER_S = 256 * 1024


class KaggleClient:
    def __init__(
        self,
        credentials: KaggleCredentials | None = None,
        retry: RetryPolicy | None = None,
        sleep: Callable[[float], None] = time.sleep,
        timeout_s: float = 120.0,
        upload_timeout_s: float = 1800.0,
        upload_stall_s: float = 120.0,
        download: DownloadSettings | None = None,
        archive_limits: ArchiveLimits | None = None,
    ) -> None:
        # Resolve credentials up front: a missing key is the first thing the user should hear about.
        self.credentials = credentials or find_credentials()
        self.retry = retry or RetryPolicy()
        # Connect and read timeouts for every request; a download's read timeout is its stall timeout.
        self.download_settings = download or DownloadSettings()
        self.archive_limits = archive_limits or DEFAULT_LIMITS
        # Each API call is bounded so a hung connection cannot stall a whole run; an upload gets longer.
        self.timeout_s = timeout_s
        self.upload_timeout_s = upload_timeout_s
        self.upload_stall_s = upload_stall_s
        self._sleep = sleep
        self._api: Any = None

    @property
    def api(self) -> Any:
        if self._api is None:
            self._api = build_api(self.credentials, self.download_settings.timeout)
        return self._api

    def _call(self, what: str, slug: str, fn: Callable[[], T], timeout_s: float | None = None) -> T:
        """`fn` with retries; each attempt bounded by `timeout_s` (None: the client's; math.inf: unbounded)."""
        limit = self.timeout_s if timeout_s is None else timeout_s
        # A timeout is not retried: a server that hung once is likely to hang again, and the retries
        # would multiply the stall the timeout exists to bound.
        return call_kaggle(what, lambda: call_with_deadline(what, fn, limit), slug, self.credentials.source,
                           self.retry, self._sleep)

    def _service(self, method: str, request: Any) -> Any:
        """A CompetitionApiService call the official API object has no method for."""
        with self.api.build_kaggle_client() as kaggle:
            return getattr(kaggle.competitions.competition_api_client, method)(request)

    # ------------------------------------------------------------ metadata

    def competition(self, slug: str) -> CompetitionInfo:
        from kagglesdk.competitions.types.competition_api_service import (
            ApiGetCompetitionRequest,
        )

        request = ApiGetCompetitionRequest()
        request.competition_name = slug
        found = self._call(f"reading competition {slug}", slug, lambda: self._service("get_competition", request))
        return records.competition_info(slug, found)

    def pages(self, slug: str) -> dict[str, str]:
        """Page name → content (overview, evaluation, data description ...), as Kaggle stores it."""
        pages = self._call(f"reading pages of {slug}", slug, lambda: self.api.competition_list_pages(slug))
        return {page.name: page.content or "" for page in pages or []}

    def list_files(self, slug: str) -> list[DataFile]:
        files: list[DataFile] = []
        token: str | None = None
        for _ in range(_MAX_PAGES):
            page = self._call(
                f"listing files of {slug}", slug,
                lambda token=token: self.api.competition_list_files(slug, page_token=token, page_size=200),
            )
            files += [DataFile(f.name, int(f.total_bytes or 0)) for f in page.files or []]
            token = page.next_page_token
            if not token:
                break
        return files

    def limits(self, slug: str) -> SubmissionLimits:
        got = self._call(f"reading submission limits of {slug}", slug,
                         lambda: self.api.competition_get_submission_limits(slug))
        return SubmissionLimits(
            int(got.num_today or 0), int(got.num_total or 0), int(got.num_allowed_now or 0), bool(got.limited_by_total)
        )

    def search(self, category: str | None, search: str, limit: int, page_size: int = 20) -> list[str]:
        """Slugs of the competitions Kaggle lists for `category` (None: any) and `search` text,
        in Kaggle's order, at most `limit`; pages are read until `limit` or the list ends."""
        segment = self._category(category)
        slugs: list[str] = []
        token: str | None = None
        paged_by_token = False
        for page in range(1, _MAX_PAGES + 1):
            if len(slugs) >= limit:
                break
            found = self._call(
                f"searching Kaggle competitions ({_describe(category, search)})", "",
                lambda page=page, token=token: self.api.competitions_list(
                    category=segment, search=search or None, page=-1 if token else page,
                    page_token=token, page_size=page_size),
            )
            listed = [c for c in (found.competitions if found is not None else None) or [] if c is not None]
            new = [s for s in map(_listed_slug, listed) if s is not None and s not in slugs]
            # A server that ignores paging answers the first page again: stop on a page with nothing new.
            if not new:
                break
            slugs += new
            # Kaggle pages by token when it sends one (then an empty token ends the list), by page
            # number otherwise (then a short page does).
            token = found.next_page_token or None
            paged_by_token = paged_by_token or token is not None
            if token is None and (paged_by_token or len(listed) < page_size):
                break
        return slugs[:limit]

    def _category(self, category: str | None) -> str | None:
        """The official client's spelling of `category`, typed any way (getting-started, GettingStarted)."""
        if not category or category.lower() == "all":
            return None
        valid = list(self.api.valid_competition_categories)
        key = re.sub(r"[-_ ]", "", category).lower()
        match = next((v for v in valid if v.lower() == key), None)
        if match is None:
            raise KaggleError(f"unknown Kaggle competition category {category!r}: one of {', '.join(valid)} or all")
        return match

    # ------------------------------------------------------------ data

    def download(self, slug: str, dest: Path, cache_dir: Path | None = None, force: bool = False) -> list[Path]:
        """All data files of `slug` in `dest`, sizes checked against Kaggle's listing.

        Skips the download when every listed file is already there at its listed size. The archive
        is streamed into `cache_dir` (default: a hidden sibling of `dest`), checked, extracted and
        then deleted; a failed or stalled download leaves no file behind (see `download.py`).
        """
        dest = Path(dest)
        listed = self.list_files(slug)
        if not force and listed and not _missing_or_wrong_size(dest, listed):
            return [dest / f.name for f in listed]
        cache = Path(cache_dir) if cache_dir else dest.parent / f".{dest.name}-download"
        cache.mkdir(parents=True, exist_ok=True)
        remove_leftovers(cache)  # a killed run's part files and empty files
        # No wall-clock bound: a big archive legitimately takes long; the stall timeout bounds each read.
        archive = self._call(f"downloading {slug}", slug,
                             lambda: competition_archive(self.api, slug, cache, self.download_settings),
                             timeout_s=math.inf)
        try:
            if _is_zip(archive):
                written = extract_zip(archive, dest, self.archive_limits)
            else:  # a competition with a single unzipped file
                dest.mkdir(parents=True, exist_ok=True)
                name = listed[0].name if len(listed) == 1 else archive.name
                written = [Path(archive.replace(dest / name))]
        except ArchiveError as exc:
            raise type(exc)(f"the data of competition {slug}: {exc}") from None
        finally:
            archive.unlink(missing_ok=True)  # extracted or refused, it is not needed again
        wrong = _missing_or_wrong_size(dest, listed)
        if wrong:
            raise KaggleError(f"download of {slug} is incomplete: {', '.join(wrong[:3])}; run again to retry")
        return sorted(written)

    # ------------------------------------------------------------ submissions

    def submit(self, slug: str, file: Path, message: str) -> KaggleSubmission:
        """Upload `file` as a submission; the record is pending until `poll` sees it scored."""
        file = Path(file)
        if not file.is_file():
            raise SubmissionFailed(f"submission file {file} does not exist")
        started = datetime.now(UTC).replace(tzinfo=None)
        attempts = 0

        def once() -> Any:
            nonlocal attempts
            attempts += 1
            # A retry after a server error must not send the file twice: look for the first try.
            if attempts > 1:
                sent = self._find_sent(slug, file.name, message, started)
                if sent is not None:
                    return sent
            return self.api.competition_submit(str(file), message, slug, quiet=True)

        try:
            result = self._call(f"submitting to {slug}", slug, once, timeout_s=self.upload_deadline_s(file))
        except KaggleError as exc:
            if any(word in str(exc).lower() for word in _LIMIT_WORDS):
                raise DailyLimitReached(f"no submissions left today for {slug}: {exc}") from None
            raise
        if isinstance(result, KaggleSubmission):
            return result
        if result.message == self.api.COMPETITION_SUBMIT_UPLOAD_FAILED_MESSAGE or not result.ref:
            raise SubmissionFailed(f"Kaggle did not accept the upload of {file.name} to {slug}: {result.message}")
        return KaggleSubmission(int(result.ref), file.name, message, "pending", None, None, started)

    def upload_deadline_s(self, file: Path) -> float:
        """How long one upload attempt may take: a stall allowance plus the file at a slow but
        live rate, within the overall cap, so a stalled upload of a small CSV fails in minutes."""
        return min(self.upload_timeout_s, self.upload_stall_s + file.stat().st_size / UPLOAD_MIN_BYTES_PER_S)

    def submissions(self, slug: str) -> list[KaggleSubmission]:
        """This team's submissions, newest first (the first page Kaggle returns, up to 100)."""
        found = self._call(f"listing submissions to {slug}", slug,
                           lambda: self.api.competition_submissions(slug, page_size=100))
        return [records.kaggle_submission(s) for s in found or [] if s is not None]

    def poll(self, slug: str, ref: int, timeout_s: float = 600.0, interval_s: float = 10.0) -> KaggleSubmission:
        """The submission once scored (status complete); SubmissionFailed if Kaggle could not score it.

        Returns the still-pending record when `timeout_s` runs out, so callers can poll again later.
        """
        deadline = time.monotonic() + timeout_s
        while True:
            mine = next((s for s in self.submissions(slug) if s.ref == ref), None)
            if mine is None:
                raise SubmissionFailed(f"submission {ref} is not among the submissions to {slug}")
            if mine.status == "error":
                raise SubmissionFailed(f"Kaggle could not score submission {ref} to {slug}: {mine.error or 'no detail'}")
            if mine.done or time.monotonic() + interval_s > deadline:
                return mine
            self._sleep(interval_s)

    def _find_sent(self, slug: str, file_name: str, message: str, since: datetime) -> KaggleSubmission | None:
        for sub in self.api.competition_submissions(slug, page_size=20) or []:
            record = records.kaggle_submission(sub)
            if record.file_name == file_name and record.message == message and (record.date or since) >= since:
                return record
        return None

    # ------------------------------------------------------------ leaderboard

    def leaderboard(self, slug: str, keep_dir: Path | None = None) -> pd.DataFrame:
        """The public leaderboard, one row per team (Kaggle's CSV columns, including "Score")."""
        with tempfile.TemporaryDirectory(prefix="agentk-lb-") as tmp:
            folder = Path(keep_dir) if keep_dir else Path(tmp)
            folder.mkdir(parents=True, exist_ok=True)
            saved = self._call(f"downloading the leaderboard of {slug}", slug,
                               lambda: leaderboard_archive(self.api, slug, folder, self.download_settings))
            return _read_leaderboard(saved)


def _listed_slug(competition: Any) -> str | None:
    """A listed competition's slug: its `ref` is a slug or a URL depending on the API version."""
    for text in (competition.ref, competition.url):
        slug = parse_competition_reference(text or "")
        if slug is not None:
            return slug
    return None


def _describe(category: str | None, search: str) -> str:
    return ", ".join(part for part in (f"category {category}" if category else "",
                                       f"search {search!r}" if search else "") if part) or "all"


def _missing_or_wrong_size(dest: Path, listed: list[DataFile]) -> list[str]:
    wrong = []
    for f in listed:
        path = dest / f.name
        if not path.is_file():
            wrong.append(f"{f.name} missing")
        elif f.size and path.stat().st_size != f.size:
            wrong.append(f"{f.name} has {path.stat().st_size} bytes, expected {f.size}")
    return wrong


def _is_zip(path: Path) -> bool:
    """Named or shaped like a zip: a damaged one must be reported as such, not kept as a data file."""
    with open(path, "rb") as fh:
        return path.suffix.lower() == ".zip" or fh.read(4) == b"PK\x03\x04"


def _read_leaderboard(archive: Path) -> pd.DataFrame:
    data = archive.read_bytes()
    try:
        if not zipfile.is_zipfile(io.BytesIO(data)):
            return pd.read_csv(io.BytesIO(data))
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            check_zip(zf, None, name=archive.name)  # read in memory: the bomb checks still apply
            names = [n for n in zf.namelist() if n.lower().endswith(".csv")]
            if not names:
                raise KaggleError(f"the leaderboard archive {archive} holds no CSV")
            with zf.open(names[0]) as f:
                return pd.read_csv(f)
    except (ValueError, zipfile.BadZipFile, EOFError) as exc:  # pandas' ParserError is a ValueError
        raise KaggleError(f"the leaderboard file {archive.name} cannot be read as a CSV: "
                          f"{' '.join(str(exc).split())[:200]}") from None
