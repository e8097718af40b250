"""Safe extraction of a downloaded archive: the checks live in `agentk.core.reading.archives`, shared with the
archives found inside a competition's data; this keeps the Kaggle package's `max_bytes` spelling."""

from __future__ import annotations

from pathlib import Path

from agentk.core.reading.archives import DEFAULT_LIMITS, ArchiveLimits, check_zip, member_path
from agentk.core.reading.archives import extract_zip as _extract

DEFAULT_MAX_BYTES = DEFAULT_LIMITS.max_total_bytes

__all__ = ["DEFAULT_MAX_BYTES", "ArchiveLimits", "check_zip", "extract_zip", "member_path"]


def extract_zip(archive_path: Path, dest: Path, max_bytes: int | None = None,
                limits: ArchiveLimits = DEFAULT_LIMITS) -> list[Path]:
    """`agentk.core.reading.archives.extract_zip`, with `max_bytes` (when given) as the total cap."""
    if max_bytes is not None:
        limits = limits.model_copy(update={"max_total_bytes": max_bytes})
    return _extract(archive_path, dest, limits)
