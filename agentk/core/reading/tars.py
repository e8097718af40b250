"""Tar archives (plain, gzip, bzip2, xz), unpacked under the same checks as zips
(agentk.core.reading.archives): safe member paths, no links or devices, the member count, the expansion
ratio of the whole archive (a tar compresses as one stream, so its members have no ratio of their
own), the total size against the cap and the free disk; members written to a temporary folder and
moved in only when all of them extracted."""

from __future__ import annotations

import bz2
import gzip
import lzma
import tarfile
import tempfile
import zlib
from pathlib import Path, PurePosixPath

from agentk.core.reading.archives import DEFAULT_LIMITS, ArchiveLimits, check_room, member_path, move_in
from agentk.core.errors import CorruptArchive, UnsafeArchive

_CHUNK = 1 << 20
_TAR_MAGIC = slice(257, 262)  # "ustar" in a POSIX tar header
_READ_ERRORS = (tarfile.TarError, EOFError, OSError, zlib.error, lzma.LZMAError, ValueError)


def is_tar_head(head: bytes) -> bool:
    """Whether the first (decompressed) bytes of a file are a POSIX tar header."""
    return head[_TAR_MAGIC] == b"ustar"


def decompressed_head(path: Path, size: int = 4096) -> bytes | None:
    """The first `size` bytes of a bzip2 or xz file's content; None when it is neither (or broken)."""
    try:
        with open(path, "rb") as fh:
            magic = fh.read(6)
        opener = bz2.open if magic.startswith(b"BZh") else lzma.open if magic == b"\xfd7zXZ\x00" else \
            gzip.open if magic.startswith(b"\x1f\x8b") else None
        if opener is None:
            return None
        with opener(path, "rb") as fh:
            return fh.read(size)
    except (OSError, EOFError, lzma.LZMAError, ValueError):
        return None


def _members(archive: tarfile.TarFile, limits: ArchiveLimits, name: str) -> list[tuple[tarfile.TarInfo, PurePosixPath]]:
    members = []
    for info in archive:
        if len(members) >= limits.max_members:
            raise UnsafeArchive(f"{name} holds more than {limits.max_members} members (limit); refusing")
        try:
            path = member_path(info.name)
        except UnsafeArchive as exc:
            raise UnsafeArchive(f"{name}: {exc}; refusing") from None
        if info.issym() or info.islnk():
            raise UnsafeArchive(f"{name}: archive member {info.name!r} is a link; refusing")
        if info.isdir():
            continue
        if not info.isfile():
            raise UnsafeArchive(f"{name}: archive member {info.name!r} is a device or pipe, not a file; refusing")
        members.append((info, path))
    return members


def extract_tar(archive_path: Path, dest: Path, limits: ArchiveLimits = DEFAULT_LIMITS) -> list[Path]:
    """Extract the tar `archive_path` into `dest` (files already there are replaced); returns the
    files written. UnsafeArchive when a check refuses it, CorruptArchive when it cannot be read;
    either way nothing is left in `dest` that was not there before."""
    archive_path, dest = Path(archive_path), Path(dest)
    name = archive_path.name
    try:
        archive = tarfile.open(archive_path, "r:*")
    except _READ_ERRORS as exc:
        raise CorruptArchive(f"{name} is not a readable tar archive: it is corrupt or truncated ({exc})") from None
    with archive:
        try:
            members = _members(archive, limits, name)
        except _READ_ERRORS as exc:
            raise CorruptArchive(f"{name}: the tar archive is corrupt or truncated ({exc})") from None
        total = sum(info.size for info, _ in members)
        ratio = total / max(archive_path.stat().st_size, 1)
        if total > limits.ratio_floor_bytes and ratio > limits.max_ratio:
            raise UnsafeArchive(f"{name} expands {ratio:.0f}:1 (limit {limits.max_ratio:g}:1), a tar bomb; refusing")
        check_room(total, dest, limits, name)
        dest.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix=".extract-", dir=dest.parent) as tmp:
            written = 0
            for info, path in members:
                target = Path(tmp, *path.parts)
                target.parent.mkdir(parents=True, exist_ok=True)
                try:
                    source = archive.extractfile(info)
                    if source is None:
                        continue
                    with source, open(target, "wb") as out:
                        while chunk := source.read(_CHUNK):
                            written += len(chunk)
                            if written > limits.max_total_bytes:
                                raise UnsafeArchive(f"{name} expands to more than {limits.max_total_bytes} bytes "
                                                    "(limit); refusing")
                            out.write(chunk)
                except _READ_ERRORS as exc:
                    raise CorruptArchive(f"{name}: member {info.name!r} cannot be read, the archive is corrupt "
                                         f"or truncated ({exc})") from None
            return move_in([path for _, path in members], Path(tmp), dest, name)
