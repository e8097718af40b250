"""Safe zip extraction: nothing outside the destination, no links, a cap on total size.

Members are written to a temporary folder beside `dest` first and moved in only when the whole
archive extracted cleanly, so a bad archive never leaves half its files among good ones.
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
import zipfile
from pathlib import Path, PurePosixPath

from agentk.kaggle.errors import KaggleError, UnsafeArchive

DEFAULT_MAX_BYTES = 100 * 2**30  # the largest Kaggle competitions ship ~100 GB
_CHUNK = 1 << 20


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


def check_archive(archive: zipfile.ZipFile, max_bytes: int) -> list[tuple[zipfile.ZipInfo, PurePosixPath]]:
    """Every file member with its safe path; raises before anything is written."""
    members = []
    total = 0
    for info in archive.infolist():
        path = member_path(info.filename)
        if _is_link(info):
            raise UnsafeArchive(f"archive member {info.filename!r} is a symbolic link")
        if info.is_dir():
            continue
        total += info.file_size
        if total > max_bytes:
            raise UnsafeArchive(f"archive would extract to more than {max_bytes} bytes (limit); refusing")
        members.append((info, path))
    return members


def _nearest_existing(path: Path) -> Path:
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def extract_zip(archive_path: Path, dest: Path, max_bytes: int = DEFAULT_MAX_BYTES) -> list[Path]:
    """Extract `archive_path` into `dest` (files already there are replaced); returns the files written."""
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    try:
        archive = zipfile.ZipFile(archive_path)
    except (zipfile.BadZipFile, OSError) as exc:
        raise KaggleError(f"{archive_path} is not a readable zip archive ({exc}); delete it and download again") from None
    with archive, tempfile.TemporaryDirectory(prefix=".extract-", dir=dest.parent) as tmp:
        members = check_archive(archive, max_bytes)
        written = 0
        for info, path in members:
            target = Path(tmp, *path.parts)
            target.parent.mkdir(parents=True, exist_ok=True)
            # Count real bytes: the sizes in the header are what the archive claims, not a promise.
            with archive.open(info) as source, open(target, "wb") as out:
                while chunk := source.read(_CHUNK):
                    written += len(chunk)
                    if written > max_bytes:
                        raise UnsafeArchive(f"archive extracts to more than {max_bytes} bytes (limit); refusing")
                    out.write(chunk)
        root = dest.resolve()
        finals = [dest.joinpath(*path.parts) for _, path in members]
        for final in finals:
            # A symlinked folder already inside dest could still lead the move elsewhere; check all first.
            if not _nearest_existing(final.parent).resolve().is_relative_to(root):
                raise UnsafeArchive(f"archive member {final.relative_to(dest)} would be written outside {dest} through a link")
        results = []
        for (_, path), final in zip(members, finals):
            final.parent.mkdir(parents=True, exist_ok=True)
            if final.is_dir() and not final.is_symlink():
                shutil.rmtree(final)
            os.replace(Path(tmp, *path.parts), final)
            results.append(final)
    return results
