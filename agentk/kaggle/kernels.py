"""Datasets, kernels and code submissions: the calls a code competition needs, through the
official `kaggle` package and the same `KaggleClient` plumbing (bounded retries, a deadline per
call, one-line errors) as file submissions.

A code competition's leaderboard is made by a notebook Kaggle reruns on its hidden test set, so
the predictor travels as a private dataset, a private script kernel (internet off) runs it, and
the kernel's version is what gets submitted (agentk/publish_code.py drives the whole way).
"""

from __future__ import annotations

import json
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from collections.abc import Callable
from typing import Any, TypeVar

from agentk.core.credentials import redact
from agentk.kaggle.client import KaggleClient
from agentk.kaggle.errors import (
    CompetitionNotFound,
    DailyLimitReached,
    KaggleCredentialsError,
    KaggleError,
    RulesNotAccepted,
    SubmissionFailed,
)
from agentk.kaggle.records import KaggleSubmission

# Kaggle's kernel states (kagglesdk's KernelWorkerStatus names) that end a run.
_FINISHED = {"complete", "error", "cancel_acknowledged"}
_LIMIT_WORDS = ("limit", "allowance", "maximum number")
T = TypeVar("T")


class NotOnKaggle(KaggleError):
    """HTTP 404 for a dataset or a kernel."""


class KernelFailed(KaggleError):
    """The kernel ended in error: the message carries Kaggle's reason and the log's last line."""


class KernelTimedOut(KaggleError):
    """The kernel did not finish within the wait: it may still finish on Kaggle."""


@dataclass(frozen=True)
class PushedKernel:
    ref: str  # owner/slug
    version: int
    url: str


@dataclass(frozen=True)
class KernelOutput:
    files: list[Path]
    log: str


def owner(client: KaggleClient) -> str:
    """The account datasets and kernels belong to: an access token alone does not name it."""
    name = client.credentials.username
    if not name:
        raise KaggleCredentialsError(
            f"a code competition needs the Kaggle username beside the credentials from {client.credentials.source}: "
            "set KAGGLE_USERNAME")
    return name


def upload_dataset(client: KaggleClient, folder: Path, notes: str, timeout_s: float = 1800.0) -> str:
    """`folder` (with its dataset-metadata.json) as a new private dataset, or a new version of it;
    its folders travel as zip archives, which Kaggle unpacks. Returns the dataset's owner/slug."""
    meta = json.loads((Path(folder) / "dataset-metadata.json").read_text(encoding="utf-8"))
    ref = str(meta["id"])
    exists = dataset_status(client, ref) is not None
    what = f"{'updating' if exists else 'creating'} the dataset {ref}"
    attempts = 0

    def send() -> Any:
        nonlocal attempts
        attempts += 1
        # A retry after a server error must not create the dataset twice (Kaggle would refuse the
        # second as a title in use): a first try that got through makes this one a new version.
        if exists or (attempts > 1 and dataset_status(client, ref) is not None):
            return client.api.dataset_create_version(str(folder), notes, quiet=True, dir_mode="zip")
        return client.api.dataset_create_new(str(folder), public=False, quiet=True, dir_mode="zip")

    answer = _call(client, what, "", send, timeout_s=timeout_s)
    error = getattr(answer, "error", None)
    if error:
        raise KaggleError(f"{what}: Kaggle answered: {redact(str(error).splitlines()[0])}")
    return ref


def dataset_status(client: KaggleClient, ref: str) -> str | None:
    """The dataset's status in lower case ("ready" once usable); None when there is no such dataset."""
    from kagglesdk.datasets.types.dataset_api_service import ApiGetDatasetStatusRequest

    owner_slug, slug = ref.split("/", 1)
    request = ApiGetDatasetStatusRequest()
    request.owner_slug, request.dataset_slug = owner_slug, slug

    def ask() -> Any:
        with client.api.build_kaggle_client() as kaggle:
            return kaggle.datasets.dataset_api_client.get_dataset_status(request)

    try:
        found = _call(client, f"reading the status of dataset {ref}", "", ask)
    except NotOnKaggle:
        return None
    return getattr(found.status, "name", str(found.status)).lower()


def wait_dataset(client: KaggleClient, ref: str, timeout_s: float, interval_s: float) -> None:
    """Until Kaggle has unpacked the dataset's files (a kernel started before sees an empty folder)."""
    deadline = time.monotonic() + timeout_s
    while True:
        status = dataset_status(client, ref)
        if status == "ready":
            return
        if status in ("failed", "deleted"):
            raise KaggleError(f"Kaggle could not process the dataset {ref} (status {status})")
        if time.monotonic() + interval_s > deadline:
            raise KaggleError(f"the dataset {ref} was not ready within {timeout_s:g} s (status {status})")
        client._sleep(interval_s)


def push_kernel(client: KaggleClient, folder: Path) -> PushedKernel:
    """Push the script kernel in `folder` (its kernel-metadata.json says private, no internet, and
    which competition and dataset it reads); Kaggle starts running the new version at once."""
    meta = json.loads((Path(folder) / "kernel-metadata.json").read_text(encoding="utf-8"))
    ref = str(meta["id"])
    answer = _call(client, f"pushing the kernel {ref}", "", lambda: client.api.kernels_push(str(folder)))
    if getattr(answer, "error", None):
        raise KaggleError(f"pushing the kernel {ref}: Kaggle answered: {redact(str(answer.error).splitlines()[0])}")
    invalid = [*(answer.invalid_dataset_sources or []), *(answer.invalid_competition_sources or [])]
    if invalid:
        raise KaggleError(f"pushing the kernel {ref}: Kaggle does not know the sources {', '.join(invalid)}")
    return PushedKernel(ref, int(answer.version_number or 0), answer.url or f"https://www.kaggle.com/code/{ref}")


def kernel_status(client: KaggleClient, ref: str) -> tuple[str, str]:
    """(status in lower case, Kaggle's failure message or "") of the kernel's latest version."""
    found = _call(client, f"reading the status of kernel {ref}", "", lambda: client.api.kernels_status(ref))
    status = getattr(found.status, "name", str(found.status or "queued")).lower()
    return status, str(found.failure_message or "")


def wait_kernel(client: KaggleClient, kernel: PushedKernel, timeout_s: float, interval_s: float,
                max_interval_s: float = 60.0) -> None:
    """Until the kernel's run ends; the interval grows (a long kernel is not asked every few seconds).
    KernelFailed with Kaggle's reason and the log's last error line; KernelTimedOut past `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    wait = interval_s
    while True:
        status, failure = kernel_status(client, kernel.ref)
        if status == "complete":
            return
        if status in _FINISHED:
            raise KernelFailed(f"the kernel {kernel.ref} (version {kernel.version}) failed: "
                               f"{_reason(client, kernel.ref, failure)}")
        if time.monotonic() + wait > deadline:
            raise KernelTimedOut(f"the kernel {kernel.ref} (version {kernel.version}) did not finish within "
                                 f"{timeout_s:g} s (status {status}); it may still finish: {kernel.url}")
        client._sleep(wait)
        wait = min(wait * 1.5, max_interval_s)


def kernel_output(client: KaggleClient, ref: str, dest: Path) -> KernelOutput:
    """The files the kernel's latest run wrote, into `dest`, and its log (as text)."""
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    files, _ = _call(client, f"downloading the output of kernel {ref}", "",
                            lambda: client.api.kernels_output(ref, str(dest), force=True, quiet=True))
    paths = [Path(f) for f in files]
    logs = [p for p in paths if p.suffix == ".log" and p.name == ref.split("/")[-1] + ".log"]
    log = logs[0].read_text(encoding="utf-8", errors="replace") if logs else ""
    return KernelOutput([p for p in paths if p not in logs], log)


def _reason(client: KaggleClient, ref: str, failure: str) -> str:
    """One line: Kaggle's failure message, and the last line the kernel wrote to stderr."""
    try:
        with tempfile.TemporaryDirectory(prefix="agentk-kernel-log-") as tmp:
            log = kernel_output(client, ref, Path(tmp)).log
    except KaggleError:
        log = ""
    parts = [p for p in (failure.strip(), last_error_line(log)) if p]
    return redact(" | ".join(dict.fromkeys(parts))) if parts else "Kaggle gave no reason"


def last_error_line(log: str) -> str:
    """The last meaningful stderr line of a kernel log: Kaggle's JSON list of
    {"stream_name", "time", "data"} entries, or plain text."""
    lines: list[str] = []
    try:
        entries = json.loads(log) if log.strip().startswith("[") else None
    except ValueError:
        entries = None
    if isinstance(entries, list):
        for entry in entries:
            if isinstance(entry, dict) and entry.get("stream_name", "stderr") == "stderr":
                lines += str(entry.get("data", "")).splitlines()
    else:
        lines = log.splitlines()
    lines = [line.strip() for line in lines if line.strip() and not line.strip().startswith(("File ", "^", "~"))]
    return lines[-1][:300] if lines else ""


def submit_kernel(client: KaggleClient, slug: str, kernel: PushedKernel, file_name: str,
                  message: str) -> KaggleSubmission:
    """Submit the kernel version's `file_name` to the competition; pending until scored (`client.poll`)."""
    started = datetime.now(UTC).replace(tzinfo=None)
    try:
        answer = _call(client,
            f"submitting kernel {kernel.ref} to {slug}", slug,
            lambda: client.api.competition_submit_code(file_name, message, slug, kernel=kernel.ref,
                                                       kernel_version=kernel.version, quiet=True))
    except KaggleError as exc:
        if any(word in str(exc).lower() for word in _LIMIT_WORDS):
            raise DailyLimitReached(f"no submissions left today for {slug}: {exc}") from None
        raise
    if not answer.ref:
        raise SubmissionFailed(f"Kaggle did not accept kernel {kernel.ref} for {slug}: {answer.message or 'no detail'}")
    return KaggleSubmission(int(answer.ref), file_name, message, "pending", None, None, started)


def _call(client: KaggleClient, what: str, slug: str, fn: Callable[[], T], timeout_s: float | None = None) -> T:
    """`client._call`, with the official client's ValueErrors (a refused kernel, bad metadata) as one line."""

    def checked() -> T:
        try:
            return fn()
        except ValueError as exc:
            raise KaggleError(f"{what}: {redact(' '.join(str(exc).split()))[:300]}") from None

    try:
        return client._call(what, slug, checked, timeout_s=timeout_s)
    except (CompetitionNotFound, RulesNotAccepted) as exc:
        if slug:  # a call about the competition: its own words (accept the rules at ...)
            raise
        # call_kaggle words a 403 and a 404 for a competition; this one is about a dataset or kernel.
        if isinstance(exc, CompetitionNotFound):
            raise NotOnKaggle(f"{what}: Kaggle has no such dataset or kernel (HTTP 404)") from None
        raise KaggleError(f"{what}: Kaggle refused it (HTTP 403): is it {owner(client)}'s, and is the account "
                          "allowed to create datasets and kernels?") from None
