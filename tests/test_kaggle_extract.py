"""Safe extraction: path escapes, absolute paths, links and oversized archives are refused whole."""

from __future__ import annotations

import stat
import zipfile
from pathlib import Path

import pytest

from agentk.kaggle import UnsafeArchive, extract_zip


def _zip(path: Path, members: dict[str, bytes], link: str | None = None) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
        if link is not None:
            info = zipfile.ZipInfo(link)
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            zf.writestr(info, "/etc/passwd")
    return path


def test_extracts_nested_files(tmp_path: Path) -> None:
    archive = _zip(tmp_path / "ok.zip", {"train.csv": b"a,b\n1,2\n", "images/x.txt": b"x", "./test.csv": b"t"})
    dest = tmp_path / "data"
    written = extract_zip(archive, dest)
    assert sorted(p.relative_to(dest).as_posix() for p in written) == ["images/x.txt", "test.csv", "train.csv"]
    assert (dest / "train.csv").read_bytes() == b"a,b\n1,2\n"


@pytest.mark.parametrize(
    "evil, why",
    [
        ("../evil.csv", "outside"),
        ("data/../../evil.csv", "outside"),
        ("..\\evil.csv", "outside"),
        ("/tmp/evil.csv", "absolute"),
        ("C:/evil.csv", "absolute"),
    ],
)
def test_path_escapes_are_refused_and_nothing_is_written(tmp_path: Path, evil: str, why: str) -> None:
    archive = _zip(tmp_path / "evil.zip", {"train.csv": b"fine", evil: b"pwned"})
    dest = tmp_path / "out" / "data"
    with pytest.raises(UnsafeArchive, match=why):
        extract_zip(archive, dest)
    assert not (dest / "train.csv").exists(), "a bad archive leaves no partial extraction"
    assert not list(tmp_path.rglob("evil.csv"))
    assert not list((tmp_path / "out").glob(".extract-*"))


def test_symlinks_are_refused(tmp_path: Path) -> None:
    archive = _zip(tmp_path / "link.zip", {"train.csv": b"fine"}, link="passwd")
    with pytest.raises(UnsafeArchive, match="symbolic link"):
        extract_zip(archive, tmp_path / "data")
    assert not (tmp_path / "data" / "passwd").exists()


def test_size_cap(tmp_path: Path) -> None:
    archive = _zip(tmp_path / "bomb.zip", {"zeros.bin": b"\0" * 200_000})
    assert archive.stat().st_size < 10_000
    with pytest.raises(UnsafeArchive, match="more than 100000 bytes"):
        extract_zip(archive, tmp_path / "data", max_bytes=100_000)
    assert not (tmp_path / "data" / "zeros.bin").exists()


def test_symlinked_folder_in_destination_is_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    dest = tmp_path / "data"
    dest.mkdir()
    (dest / "images").symlink_to(outside, target_is_directory=True)
    archive = _zip(tmp_path / "a.zip", {"images/x.txt": b"x"})
    with pytest.raises(UnsafeArchive, match="through a link"):
        extract_zip(archive, dest)
    assert not (outside / "x.txt").exists()


def test_not_a_zip(tmp_path: Path) -> None:
    bad = tmp_path / "bad.zip"
    bad.write_bytes(b"not a zip")
    with pytest.raises(Exception, match="not a readable zip archive"):
        extract_zip(bad, tmp_path / "data")
