"""Stream a competition's data archive to disk: a connect timeout and a stall timeout on every read,
a progress bar for big files on a terminal, and nothing at the target unless every byte arrived.

The official client's own `download_file` reads its first response with no timeout at all and
writes straight into the final file name, so a stalled stream hangs forever and a cut one leaves a
partial archive that the next run mistakes for the real one. Here the bytes go to `<name>.part`
beside the target and are renamed only when complete; any failure removes the part file.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import urlsplit

import requests
import urllib3
from pydantic import BaseModel, ConfigDict, Field

from agentk.core.reading.archives import free_bytes
from agentk.kaggle.errors import DownloadFailed, DownloadStalled

PART_SUFFIX = ".part"
_CHUNK = 64 * 1024  # small enough that a stall is noticed between chunks, large enough to be cheap


class DownloadSettings(BaseModel):
    """How long to wait, how often to resume, whether to draw a progress bar."""

    model_config = ConfigDict(frozen=True)

    connect_timeout_s: float = Field(30.0, gt=0)
    # No byte for this long and the download is given up (a slow but moving stream is fine).
    stall_timeout_s: float = Field(60.0, gt=0)
    resumes: int = Field(3, ge=0)  # a connection cut mid-body is picked up where it stopped
    progress: bool | None = None  # None: a bar when stderr is a terminal
    progress_min_bytes: int = Field(8 * 2**20, ge=0)  # smaller files finish before a bar helps
    free_disk_margin_bytes: int = Field(2**30, ge=0)

    @property
    def timeout(self) -> tuple[float, float]:
        """requests' (connect, read) timeout: the read timeout bounds each wait for bytes."""
        return (self.connect_timeout_s, self.stall_timeout_s)


def is_stall(exc: BaseException) -> bool:
    """Whether `exc` is a read that waited the whole read timeout (requests wraps it differently
    before and after the headers)."""
    if isinstance(exc, requests.ReadTimeout):
        return True
    seen: set[int] = set()
    stack: list[Any] = [exc]
    while stack:
        item = stack.pop()
        if id(item) in seen or not isinstance(item, BaseException):
            continue
        seen.add(id(item))
        if isinstance(item, (urllib3.exceptions.ReadTimeoutError, TimeoutError)):
            return True
        stack += [*item.args, item.__cause__, item.__context__]
    return False


def competition_archive(api: Any, slug: str, folder: Path, settings: DownloadSettings) -> Path:
    """Download every data file of `slug` (Kaggle's one archive) into `folder`; returns its path."""
    from kagglesdk.competitions.types.competition_api_service import ApiDownloadDataFilesRequest

    return _download(api, "download_data_files", ApiDownloadDataFilesRequest(), slug, folder, settings)


def leaderboard_archive(api: Any, slug: str, folder: Path, settings: DownloadSettings) -> Path:
    """The public leaderboard of `slug` (a zipped CSV) saved into `folder`; returns its path."""
    from kagglesdk.competitions.types.competition_api_service import ApiDownloadLeaderboardRequest

    return _download(api, "download_leaderboard", ApiDownloadLeaderboardRequest(), slug, folder, settings,
                     name=f"{slug}.zip")


def _download(api: Any, method: str, request: Any, slug: str, folder: Path, settings: DownloadSettings,
              name: str | None = None) -> Path:
    request.competition_name = slug
    with api.build_kaggle_client() as kaggle:
        try:
            response = getattr(kaggle.competitions.competition_api_client, method)(request)
        except (requests.ConnectionError, requests.Timeout) as exc:
            if is_stall(exc):
                raise DownloadStalled(f"the download from competition {slug} stalled: no answer for "
                                      f"{settings.stall_timeout_s:g} s; try again later") from None
            raise
        if name is None:
            suffix = PurePosixPath(urlsplit(response.url).path).suffix
            # The name is ours, not the server's: only a plain extension is taken from the URL.
            name = f"{slug}{suffix if suffix[1:].isalnum() else '.zip'}"
        target = Path(folder) / name
        return save_response(response, target, f"{target.name} of competition {slug}", settings)


def save_response(response: requests.Response, target: Path, label: str, settings: DownloadSettings) -> Path:
    """The body of `response` (and of resumed requests after a cut) written to `target`; `label`
    names the file in errors and on the bar."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    part = target.with_name(target.name + PART_SUFFIX)
    total = _content_length(response)
    free = free_bytes(target.parent)
    if total is not None and total + settings.free_disk_margin_bytes > free:
        response.close()
        raise DownloadFailed(f"no room for {label}: it needs {total} bytes and the disk of {target.parent} "
                             f"has {free} free ({settings.free_disk_margin_bytes} kept free)")
    written = 0
    try:
        with open(part, "wb") as out, _progress_bar(label, total, settings) as advance:
            for attempt in range(settings.resumes + 1):
                try:
                    for chunk in response.iter_content(_CHUNK):
                        out.write(chunk)
                        written += len(chunk)
                        advance(written)
                except (requests.RequestException, urllib3.exceptions.HTTPError) as exc:
                    if is_stall(exc):
                        raise DownloadStalled(
                            f"the download of {label} stalled: no bytes for {settings.stall_timeout_s:g} s "
                            f"after {written} of {total if total is not None else 'unknown'} bytes; "
                            "try again later") from None
                finally:
                    response.close()
                if total is None or written >= total:
                    break
                if attempt == settings.resumes:
                    raise DownloadFailed(f"the download of {label} was cut short {attempt + 1} times "
                                         f"({written} of {total} bytes); try again later")
                response = _resume(response, written, settings)
                if response.status_code != 206:  # the server sends the whole file again
                    out.seek(0)
                    out.truncate()
                    written = 0
        if total is not None and written != total:
            raise DownloadFailed(f"the download of {label} has {written} bytes, expected {total}")
        os.replace(part, target)
    except BaseException:
        # A partial file would be taken for the archive by the next run; a resume starts afresh.
        part.unlink(missing_ok=True)
        raise
    return target


def remove_leftovers(folder: Path) -> list[Path]:
    """Part files and empty files a killed download left in `folder` (and the official client's
    `.kaggle-partial` markers); returns what was removed."""
    removed = []
    if not Path(folder).is_dir():
        return removed
    for path in Path(folder).iterdir():
        if path.is_symlink() or not path.is_file():
            continue
        if path.name.endswith((PART_SUFFIX, ".kaggle-partial")) or path.stat().st_size == 0:
            path.unlink(missing_ok=True)
            removed.append(path)
    return removed


def _content_length(response: requests.Response) -> int | None:
    try:
        return int(response.headers["Content-Length"])
    except (KeyError, ValueError):
        return None


def _resume(previous: requests.Response, start: int, settings: DownloadSettings) -> requests.Response:
    """The rest of the body from byte `start`; the whole body again if the file cannot be proven unchanged."""
    headers = dict(previous.request.headers) if previous.request is not None else {}
    validator = previous.headers.get("ETag") or previous.headers.get("Last-Modified")
    ranged = previous.headers.get("Accept-Ranges") == "bytes" and validator is not None
    if ranged:
        # If-Range: a changed file comes back whole (200) instead of being spliced onto the old bytes.
        headers |= {"Range": f"bytes={start}-", "If-Range": validator}
    try:
        response = requests.get(previous.url, headers=headers, stream=True, timeout=settings.timeout)
    except (requests.ConnectionError, requests.Timeout) as exc:
        if is_stall(exc):
            raise DownloadStalled(f"resuming the download from {previous.url.split('?')[0]} stalled: no answer "
                                  f"for {settings.stall_timeout_s:g} s; try again later") from None
        raise
    response.raise_for_status()
    if response.status_code == 206 and not response.headers.get("Content-Range", "").startswith(f"bytes {start}-"):
        response.close()
        raise DownloadFailed(f"the server resumed {previous.url.split('?')[0]} at the wrong offset; try again")
    return response


@contextlib.contextmanager
def _progress_bar(label: str, total: int | None, settings: DownloadSettings) -> Iterator[Any]:
    """A callable taking the bytes written so far; draws a bar on stderr when it helps."""
    show = settings.progress if settings.progress is not None else sys.stderr.isatty()
    if not show or (total is not None and total < settings.progress_min_bytes):
        yield lambda done: None
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        DownloadColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
        TransferSpeedColumn,
    )

    columns = (TextColumn("{task.description}"), BarColumn(), DownloadColumn(), TransferSpeedColumn(),
               TimeRemainingColumn())
    with Progress(*columns, console=Console(stderr=True), transient=False) as bar:
        task = bar.add_task(f"downloading {label}", total=total)
        yield lambda done: bar.update(task, completed=done)
