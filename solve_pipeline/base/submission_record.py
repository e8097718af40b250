"""The adopted submission's score travels with the file, so "only improves" holds across resumes.

Beside `submission.csv` lies `submission.csv.record.json`: the model, its cross-validated score,
the metric and its direction, a fingerprint of the setup it was made under, and the file's
SHA-256. `adopt_submission` is the one way the adopted submission is written: it replaces the
file only when the new score is strictly better than the recorded one. A file without a record,
whose record does not match its bytes, or made under another metric or setup, is unknown and may
be replaced.

The record is written before the file and keeps the entry of the file it replaces, so a kill
between the two renames still leaves a record whose `previous` entry matches the file on disk.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from pydantic import BaseModel, ValidationError

from agentk.core.artifacts import SetupLayout
from agentk.core.metrics.direction import Direction
from agentk.core.records.workspace import atomic_write_bytes, replacing


class SubmissionRecord(BaseModel):
    model: str
    validation_score: float | None
    metric: str  # the setup's metric name, or "surrogate" when the solver ranked by a surrogate loss
    higher_is_better: bool
    setup_fingerprint: str
    models_per_target: dict[str, str] = {}
    sha256: str = ""
    written_at: float = 0.0

    def comparable(self, other: "SubmissionRecord") -> bool:
        """Scores mean the same thing only under the same metric, direction and setup."""
        return (self.metric, self.higher_is_better, self.setup_fingerprint) == \
            (other.metric, other.higher_is_better, other.setup_fingerprint)


class _RecordFile(BaseModel):
    current: SubmissionRecord
    previous: SubmissionRecord | None = None


@dataclass(frozen=True)
class Adoption:
    """What `adopt_submission` did: `record` describes the file now on disk (None when unknown)."""

    written: bool
    reason: str
    record: SubmissionRecord | None


def record_path(path: Path) -> Path:
    return path.with_name(f"{path.name}.record.json")


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def read_record(path: Path) -> SubmissionRecord | None:
    """The record of the file at `path` as it is on disk now; None when either is missing, the
    record is unreadable, or no entry matches the file's bytes."""
    path = Path(path)
    try:
        stored = _RecordFile.model_validate_json(record_path(path).read_bytes())
        actual = file_sha256(path)
    except (OSError, ValueError, ValidationError):
        return None
    for entry in (stored.current, stored.previous):
        if entry is not None and entry.sha256 == actual:
            return entry
    return None


def _finite(score: float | None) -> bool:
    return score is not None and math.isfinite(score)


def is_improvement(candidate: SubmissionRecord, existing: SubmissionRecord | None) -> tuple[bool, str]:
    """Whether `candidate` may replace the file `existing` describes, and why."""
    if existing is None:
        return True, "no recorded submission"
    if not existing.comparable(candidate):
        return True, "the recorded submission was scored under another metric or setup"
    if not _finite(candidate.validation_score):
        return False, "the candidate has no validation score"
    if not _finite(existing.validation_score):
        return True, "the recorded submission has no validation score"
    new, old = float(candidate.validation_score), float(existing.validation_score)  # type: ignore[arg-type]
    if Direction(candidate.higher_is_better).better(new, old):
        return True, f"validation {new:.6g} beats the recorded {old:.6g}"
    return False, f"validation {new:.6g} does not beat the recorded {old:.6g} ({existing.model})"


class KnownSubmission:
    """What a solve itself knows of the file: its record as found before any untrusted code ran, then
    each record the solve wrote. Code that ran since may have rewritten the file and its record; a
    file whose bytes match neither is unknown and may be replaced, whatever its record claims."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.record = read_record(self.path) if self.path.exists() else None

    def on_disk(self) -> SubmissionRecord | None:
        if self.record is None:
            return None
        try:
            return self.record if file_sha256(self.path) == self.record.sha256 else None
        except OSError:
            return None


def adopt_submission(path: Path, write_file: Callable[[Path], None], candidate: SubmissionRecord,
                     force: bool = False, known: KnownSubmission | None = None) -> Adoption:
    """Replace the submission at `path` with what `write_file(temp_path)` writes, only when
    `candidate` strictly improves on the recorded file (or `force`); the record is written with it.
    With `known`, the recorded file is what `known` says, never what the record on disk says.

    The temp file lives in the same folder (so the rename is atomic) and is named like every
    atomic writer's leftovers (`.<name>.<random>.tmp`), which a resumed run clears.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if known is not None:
        existing = known.on_disk()
    else:
        existing = read_record(path) if path.exists() else None
    allowed, reason = is_improvement(candidate, existing)
    if not (allowed or force):
        return Adoption(False, reason, existing)
    # The record goes first, inside the replacement: a kill before the rename leaves a record whose
    # current entry does not match the file, and read_record then falls back to the previous one.
    with replacing(path) as tmp:
        write_file(tmp)
        record = candidate.model_copy(update={"sha256": file_sha256(tmp), "written_at": time.time()})
        atomic_write_bytes(record_path(path),
                            _RecordFile(current=record, previous=existing).model_dump_json(indent=2).encode())
    if known is not None:
        known.record = record
    return Adoption(True, reason if allowed else "forced", record)


# What a submission's score depends on besides the model: the generated code (target transform,
# formatter, metric), the targets, the grading-relevant plan facts and the test rows.
_PLAN_FACTS = ("metric", "higher_is_better", "id_column", "target_columns", "submission_columns")


def setup_fingerprint(setup_dir: Path, test_ids: list[str]) -> str:
    """A hash that changes whenever a redone setup would make old scores incomparable."""
    layout = SetupLayout(setup_dir)
    digest = hashlib.sha256()
    for file in layout.fingerprint_files():
        digest.update(file.name.encode())
        digest.update(file.read_bytes() if file.is_file() else b"<missing>")
    try:
        plan = json.loads(layout.plan.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        plan = {}
    facts = {k: plan.get(k) for k in _PLAN_FACTS} if isinstance(plan, dict) else {}
    digest.update(json.dumps(facts, sort_keys=True, default=str).encode())
    digest.update("\n".join(test_ids).encode())
    return digest.hexdigest()[:16]
