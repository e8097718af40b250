"""Submitting with care: never the same file twice (unless forced), never past the daily limit.

The ledger is a JSON-lines file (one line per submission event) in the workspace, keyed by the
file's SHA-256, because Kaggle's submission list carries names and sizes but no content hash.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from agentk.kaggle.client import KaggleClient
from agentk.kaggle.errors import DailyLimitReached, DuplicateSubmission
from agentk.kaggle.records import KaggleSubmission


def submission_message(model: str, metric: str, score: float | None) -> str:
    """The note shown on Kaggle: which model, and what it scored in validation."""
    validation = f"validation {metric} {score:.5g}" if score is not None else "no validation score"
    return f"agentk: {model}, {validation}"


def file_digest(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


@dataclass(frozen=True)
class LedgerEntry:
    slug: str
    sha256: str
    record: KaggleSubmission


class SubmissionLedger:
    def __init__(self, path: Path) -> None:
        self.path = Path(path)

    def entries(self) -> list[LedgerEntry]:
        """Latest entry per submission ref (later lines update earlier ones, e.g. pending → scored)."""
        if not self.path.is_file():
            return []
        latest: dict[tuple[str, int], LedgerEntry] = {}
        for line in self.path.read_text().splitlines():
            if not line.strip():
                continue
            raw = json.loads(line)
            rec = raw["record"]
            rec["date"] = datetime.fromisoformat(rec["date"]) if rec.get("date") else None
            entry = LedgerEntry(raw["slug"], raw["sha256"], KaggleSubmission(**rec))
            latest[(entry.slug, entry.record.ref)] = entry
        return list(latest.values())

    def find(self, slug: str, sha256: str) -> LedgerEntry | None:
        return next((e for e in self.entries() if e.slug == slug and e.sha256 == sha256), None)

    def add(self, slug: str, sha256: str, record: KaggleSubmission) -> None:
        rec = dataclasses.asdict(record)
        rec["date"] = record.date.isoformat() if record.date else None
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a") as f:
            f.write(json.dumps({"slug": slug, "sha256": sha256, "record": rec}) + "\n")


def submit_and_score(
    client: KaggleClient, slug: str, file: Path, message: str, ledger: SubmissionLedger,
    force: bool = False, timeout_s: float = 600.0, interval_s: float = 10.0,
) -> KaggleSubmission:
    """Submit `file` once, wait for its score (up to `timeout_s`), and record both in the ledger."""
    digest = file_digest(Path(file))
    sent = ledger.find(slug, digest)
    if sent is not None and not force:
        score = f", public score {sent.record.public_score}" if sent.record.public_score is not None else ""
        raise DuplicateSubmission(
            f"{Path(file).name} was already submitted to {slug} as submission {sent.record.ref}{score}; "
            "use --force to send it again"
        )
    limits = client.limits(slug)
    if limits.allowed_now <= 0:
        when = "the competition's total limit is used up" if limits.limited_by_total else "try again after 00:00 UTC"
        raise DailyLimitReached(f"no submissions left for {slug} ({limits.today} used today): {when}")
    record = client.submit(slug, file, message)
    ledger.add(slug, digest, record)
    scored = client.poll(slug, record.ref, timeout_s=timeout_s, interval_s=interval_s)
    ledger.add(slug, digest, scored)
    return scored
