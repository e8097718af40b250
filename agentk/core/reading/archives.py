"""Every archive agentk unpacks (Kaggle downloads, zips and gzips inside a competition's data) goes
through here, and is checked before a byte is written: member paths (no absolute, no `..`), no
links, the member count, each member's compression ratio (a bomb), and the total size against a cap
and the free disk. Members are written to a temporary folder beside the destination and moved in
only when the whole archive extracted cleanly, so a bad archive never leaves half its files behind.
"""

from __future__ import annotations

import os
import shutil
import stat
import gzip
import tempfile
import zipfile
import zlib
from pathlib import Path, PurePosixPath

from pydantic import BaseModel, ConfigDict, Field

from agentk.core.errors import CorruptArchive, UnsafeArchive

_CHUNK = 1 << 20
_MiB = 2**20
_GiB = 2**30


class ArchiveLimits(BaseModel):
    """What an archive may expand to; the defaults admit every real Kaggle competition."""

    model_config = ConfigDict(frozen=True)

    max_total_bytes: int = Field(100 * _GiB, gt=0)  # the largest competitions ship ~100 GB
    max_members: int = Field(2_000_000, gt=0)  # image competitions ship a few hundred thousand files
    # Deflate tops out near 1032:1; real data (even sparse CSVs) stays well under 200:1 at this size.
    max_ratio: float = Field(200.0, gt=1)
    ratio_floor_bytes: int = Field(8 * _MiB, ge=0)  # smaller members may compress as well as they like
    free_disk_margin_bytes: int = Field(1 * _GiB, ge=0)  # left free after extraction, for the run itself


DEFAULT_LIMITS = ArchiveLimits()


def member_path(name: str) -> PurePosixPath:
    """The relative path a member may be written to; UnsafeArchive if it would escape or is absolute."""
    cleaned = name.replace("\\", "/")
    path = PurePosixPath(cleaned)
    if cleaned.startswith("/") or (len(cleaned) > 1 and cleaned[1] == ":"):
        raise UnsafeArchive(f"archive member {name!r} has an absolute path")
    if any(part == ".." for part in path.parts):
        raise UnsafeArchive(f"archive member {name!r} points outside the destination")
    parts = [p for p in path.parts if p not in ("", ".")]
    if not parts:
        raise UnsafeArchive(f"archive member {name!r} has an empty path")
    return PurePosixPath(*parts)


def _is_link(info: zipfile.ZipInfo) -> bool:
    return stat.S_ISLNK(info.external_attr >> 16)


def _size(n: float) -> str:
    for unit, scale in (("GiB", _GiB), ("MiB", _MiB), ("KiB", 1024)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{int(n)} bytes"


def _nearest_existing(path: Path) -> Path:
    path = Path(os.path.abspath(path))
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def free_bytes(folder: Path) -> int:
    """Free space on the disk that holds `folder` (or its nearest existing parent)."""
    return shutil.disk_usage(_nearest_existing(folder)).free


def check_room(total: int, dest: Path | None, limits: ArchiveLimits, what: str) -> None:
    """UnsafeArchive unless `total` bytes fit under the cap and on the disk of `dest` (if any), margin kept."""
    if total > limits.max_total_bytes:
        raise UnsafeArchive(f"{what} would expand to {_size(total)}, more than {limits.max_total_bytes} bytes "
                            f"(limit); refusing")
    if dest is None:
        return
    free = free_bytes(dest)
    if total + limits.free_disk_margin_bytes > free:
        raise UnsafeArchive(f"{what} would expand to {_size(total)} but only {_size(free)} is free on the disk "
                            f"of {dest} ({_size(limits.free_disk_margin_bytes)} kept free); refusing")


def _declared_entries(path: Path) -> int | None:
    """The member count the end record declares, read before the central directory is parsed
    (parsing millions of entries is itself the attack); None when it cannot be read."""
    try:
        with open(path, "rb") as fh:
            end = zipfile._EndRecData(fh)  # type: ignore[attr-defined]  # stable since Python 2
    except (OSError, zipfile.BadZipFile, AttributeError):
        return None
    return int(end[zipfile._ECD_ENTRIES_TOTAL]) if end else None  # type: ignore[attr-defined]


def check_zip(archive: zipfile.ZipFile, dest: Path | None, limits: ArchiveLimits = DEFAULT_LIMITS,
              name: str = "archive") -> list[tuple[zipfile.ZipInfo, PurePosixPath]]:
    """Every file member with its safe path; raises UnsafeArchive (naming `name`) before anything is
    written. `dest` is where it would be extracted (its disk must hold it); None: read in memory."""
    infos = archive.infolist()
    if len(infos) > limits.max_members:
        raise UnsafeArchive(f"{name} holds {len(infos)} members, more than {limits.max_members} (limit); refusing")
    members = []
    total = 0
    for info in infos:
        try:
            path = member_path(info.filename)
        except UnsafeArchive as exc:
            raise UnsafeArchive(f"{name}: {exc}; refusing") from None
        if _is_link(info):
            raise UnsafeArchive(f"{name}: archive member {info.filename!r} is a symbolic link; refusing")
        if info.is_dir():
            continue
        ratio = info.file_size / max(info.compress_size, 1)
        if info.file_size > limits.ratio_floor_bytes and ratio > limits.max_ratio:
            raise UnsafeArchive(
                f"{name}: member {info.filename!r} expands {ratio:.0f}:1 ({_size(info.compress_size)} to "
                f"{_size(info.file_size)}; limit {limits.max_ratio:g}:1), a zip bomb; refusing")
        total += info.file_size
        members.append((info, path))
    check_room(total, dest, limits, name)
    return members


def open_zip(path: Path, limits: ArchiveLimits = DEFAULT_LIMITS) -> zipfile.ZipFile:
    """`path` opened as a zip; CorruptArchive naming it when it is truncated or not a zip at all."""
    declared = _declared_entries(path)
    if declared is not None and declared > limits.max_members:
        raise UnsafeArchive(f"{path.name} holds {declared} members, more than {limits.max_members} (limit); refusing")
    try:
        return zipfile.ZipFile(path)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError, EOFError) as exc:
        raise CorruptArchive(f"{path.name} is not a readable zip archive: it is corrupt or truncated ({exc})") from None


def extract_zip(archive_path: Path, dest: Path, limits: ArchiveLimits = DEFAULT_LIMITS) -> list[Path]:
    """Extract `archive_path` into `dest` (files already there are replaced); returns the files written.

    UnsafeArchive when a check refuses it, CorruptArchive when it cannot be read; either way nothing
    is left in `dest` that was not there before.
    """
    archive_path, dest = Path(archive_path), Path(dest)
    name = archive_path.name
    with open_zip(archive_path, limits) as archive:
        members = check_zip(archive, dest, limits, name)
        dest.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix=".extract-", dir=dest.parent) as tmp:
            _write_members(archive, members, Path(tmp), limits, name)
            return move_in([path for _, path in members], Path(tmp), dest, name)


def extract_archive(archive_path: Path, dest: Path, limits: ArchiveLimits = DEFAULT_LIMITS) -> list[Path]:
    """`extract_zip` for a zip, `agentk.core.reading.tars.extract_tar` for a tar (plain or compressed)."""
    if zipfile.is_zipfile(archive_path):
        return extract_zip(archive_path, dest, limits)
    from agentk.core.reading.tars import extract_tar

    return extract_tar(archive_path, dest, limits)


def _write_members(archive: zipfile.ZipFile, members: list[tuple[zipfile.ZipInfo, PurePosixPath]], tmp: Path,
                   limits: ArchiveLimits, name: str) -> None:
    written = 0
    for info, path in members:
        target = Path(tmp, *path.parts)
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            # Count real bytes: the sizes in the header are what the archive claims, not a promise.
            with archive.open(info) as source, open(target, "wb") as out:
                while chunk := source.read(_CHUNK):
                    written += len(chunk)
                    if written > limits.max_total_bytes:
                        raise UnsafeArchive(f"{name} expands to more than {limits.max_total_bytes} bytes (limit); refusing")
                    out.write(chunk)
        except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, RuntimeError) as exc:
            # NotImplementedError: an unknown compression method; RuntimeError: an encrypted member.
            raise CorruptArchive(f"{name}: member {info.filename!r} cannot be read, the archive is corrupt, "
                                 f"truncated or encrypted ({exc})") from None


def move_in(paths: list[PurePosixPath], tmp: Path, dest: Path, name: str) -> list[Path]:
    """The extracted members (`paths`, under `tmp`) moved into `dest`, each checked first."""
    root = dest.resolve()
    finals = [dest.joinpath(*path.parts) for path in paths]
    for final in finals:
        # A symlinked folder already inside dest could still lead the move elsewhere; check all first.
        if not _nearest_existing(final.parent).resolve().is_relative_to(root):
            raise UnsafeArchive(f"{name}: archive member {final.relative_to(dest)} would be written outside "
                                f"{dest} through a link; refusing")
    results = []
    for path, final in zip(paths, finals):
        final.parent.mkdir(parents=True, exist_ok=True)
        if final.is_dir() and not final.is_symlink():
            shutil.rmtree(final)
        os.replace(Path(tmp, *path.parts), final)
        results.append(final)
    return results


def gunzip_file(source: Path, target: Path, limits: ArchiveLimits = DEFAULT_LIMITS) -> Path:
    """`source` (gzip) decompressed into `target`, under the same caps as a zip member; the gzip
    header holds no trustworthy size, so the bytes are counted as they come. Nothing is left at
    `target` unless it all decompressed."""
    source, target = Path(source), Path(target)
    compressed = source.stat().st_size
    budget = min(limits.max_total_bytes, max(free_bytes(target.parent) - limits.free_disk_margin_bytes, 0))
    bomb_at = max(limits.ratio_floor_bytes, int(limits.max_ratio * compressed))
    partial = target.with_name(f".{target.name}.part")
    written = 0
    try:
        with gzip.open(source, "rb") as src, open(partial, "wb") as out:
            while chunk := src.read(_CHUNK):
                written += len(chunk)
                if written > bomb_at:
                    raise UnsafeArchive(f"{source.name} expands more than {limits.max_ratio:g}:1 "
                                        f"(past {_size(written)} from {_size(compressed)}), a gzip bomb; refusing")
                if written > budget:
                    raise UnsafeArchive(f"{source.name} expands to more than {budget} bytes (the cap or the free "
                                        f"disk); refusing")
                out.write(chunk)
        os.replace(partial, target)
    except (gzip.BadGzipFile, EOFError, zlib.error) as exc:
        raise CorruptArchive(f"{source.name} is not a readable gzip file: it is corrupt or truncated ({exc})") from None
    finally:
        partial.unlink(missing_ok=True)
    return target
