"""Hostile downloads and archives: a stalled Kaggle stream, zip bombs, too many members, `../`
members, truncated archives from Kaggle and in a local competition's data. Each run fails (or skips
the archive) with a message naming the file, leaves no partial or empty file, and writes next to nothing."""

from __future__ import annotations

import gzip
import io
import os
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

from agentk.core.reading.archives import ArchiveLimits
from agentk.core.errors import CorruptArchive, UnsafeArchive
from agentk.kaggle import KaggleClient, KaggleUnavailable, RetryPolicy
from agentk.kaggle.download import DownloadSettings
from agentk.kaggle.errors import DownloadStalled
from agentk.kaggle.fetch import fetch_competition
from setup_pipeline.perception.catalogue import build_catalogue
from agentk.core.readers import UnreadableTable, read_table
from helpers import handed_in_after_failed_setup

pytest_plugins = ["kaggle_server"]  # fixtures: fake_kaggle

SHARED = Path(__file__).resolve().parents[3] / "shared" / "competitions"
BOMB_BYTES = 4 * 2**20  # zeros: deflates about 1000:1, so the archive is a few KB


def _client(**limits: int) -> KaggleClient:
    return KaggleClient(
        retry=RetryPolicy(attempts=3, base_delay_s=0.01, max_delay_s=0.05),
        download=DownloadSettings(connect_timeout_s=2, stall_timeout_s=1, progress=False),
        archive_limits=ArchiveLimits(**limits) if limits else None,
    )


def _zip(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return buffer.getvalue()


def _files(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file()]


def _disk_use(root: Path) -> int:
    return sum(p.stat().st_size for p in _files(root))


def test_stalled_download_fails_within_the_stall_timeout_and_leaves_nothing(fake_kaggle, tmp_path: Path) -> None:
    fake_kaggle.stall_downloads_after = 1024
    root = tmp_path / "titanic"
    started = time.monotonic()
    with pytest.raises(DownloadStalled) as err:
        fetch_competition(_client(), "titanic", root)
    elapsed = time.monotonic() - started
    assert elapsed < 10, f"gave up after {elapsed:.1f} s with a 1 s stall timeout"
    message = str(err.value)
    assert "titanic.zip" in message and "competition titanic" in message and "\n" not in message
    assert sum(c.startswith("GET /files/") for c in fake_kaggle.calls) == 1, "a stall is not retried"
    left = _files(root / "data") + _files(root / ".kaggle" / "download")
    assert left == [], f"partial files left behind: {left}"
    assert not any(p.stat().st_size == 0 for p in _files(root))


def test_first_request_that_never_answers_fails_within_the_read_timeout(fake_kaggle, tmp_path: Path) -> None:
    fake_kaggle.delay["DownloadDataFiles"] = 30  # the API call that leads to the archive
    started = time.monotonic()
    with pytest.raises(DownloadStalled, match="competition titanic"):
        _client().download("titanic", tmp_path / "data", cache_dir=tmp_path / "cache")
    assert time.monotonic() - started < 10
    assert _files(tmp_path) == []


def test_api_call_that_never_answers_is_bounded_by_the_read_timeout(fake_kaggle) -> None:
    fake_kaggle.delay["GetCompetition"] = 30
    started = time.monotonic()
    with pytest.raises(KaggleUnavailable, match="reading competition titanic.*ReadTimeout.*after 3 attempts"):
        _client().competition("titanic")  # 3 attempts of a 1 s read timeout, not 3 x 120 s
    assert time.monotonic() - started < 10


def test_leftovers_of_a_killed_download_are_removed_and_the_next_download_completes(fake_kaggle, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "titanic.zip.part").write_bytes(b"PK\x03\x04 half an archive")
    (cache / "titanic.zip").write_bytes(b"")
    dest = tmp_path / "data"
    paths = _client().download("titanic", dest, cache_dir=cache)
    assert sorted(p.name for p in paths) == sorted(fake_kaggle.competition.files)
    assert _files(cache) == [], "the archive and the leftovers are gone once the data is extracted"


def test_progress_bar_is_drawn_only_when_asked_or_on_a_terminal(fake_kaggle, tmp_path: Path, capsys) -> None:
    shown = DownloadSettings(progress=True, progress_min_bytes=0)
    KaggleClient(download=shown).download("titanic", tmp_path / "a", cache_dir=tmp_path / "cache-a")
    assert "downloading titanic.zip of competition titanic" in capsys.readouterr().err
    auto = DownloadSettings(progress_min_bytes=0)  # stderr is not a terminal under pytest
    KaggleClient(download=auto).download("titanic", tmp_path / "b", cache_dir=tmp_path / "cache-b")
    assert capsys.readouterr().err == ""
    assert (tmp_path / "b" / "train.csv").is_file()


def test_zip_bomb_from_kaggle_is_refused_before_extraction(fake_kaggle, tmp_path: Path) -> None:
    bomb = _zip({"train.csv": b"a,b\n1,2\n", "zeros.bin": b"\0" * BOMB_BYTES})
    assert len(bomb) < 20_000
    fake_kaggle.serve_archive(bomb, {"train.csv": 8, "zeros.bin": BOMB_BYTES})
    with pytest.raises(UnsafeArchive) as err:
        _client(ratio_floor_bytes=2**20).download("titanic", tmp_path / "data", cache_dir=tmp_path / "cache")
    message = str(err.value)
    assert "titanic.zip" in message and "zeros.bin" in message and "bomb" in message
    assert _files(tmp_path) == [], "nothing extracted, the archive deleted"
    assert _disk_use(tmp_path) < 100_000


def test_archive_with_too_many_members_is_refused(fake_kaggle, tmp_path: Path) -> None:
    members = {f"img/{i}.txt": b"x" for i in range(50)}
    fake_kaggle.serve_archive(_zip(members), {name: 1 for name in members})
    with pytest.raises(UnsafeArchive, match=r"titanic\.zip holds 50 members, more than 20"):
        _client(max_members=20).download("titanic", tmp_path / "data", cache_dir=tmp_path / "cache")
    assert _files(tmp_path) == []


def test_member_escaping_the_destination_is_refused(fake_kaggle, tmp_path: Path) -> None:
    fake_kaggle.serve_archive(_zip({"train.csv": b"a\n1\n", "../escape.csv": b"pwned"}),
                              {"train.csv": 4, "../escape.csv": 5})
    work = tmp_path / "work"
    with pytest.raises(UnsafeArchive, match=r"titanic\.zip.*'\.\./escape\.csv'.*outside"):
        _client().download("titanic", work / "data", cache_dir=work / "cache")
    assert not list(tmp_path.rglob("escape.csv")) and not list(tmp_path.rglob("train.csv"))


def test_archive_larger_than_the_free_disk_is_refused(fake_kaggle, tmp_path: Path) -> None:
    # A margin bigger than any disk: the archive cannot fit, whatever its size.
    with pytest.raises(UnsafeArchive, match=r"titanic\.zip would expand to .* free on the disk"):
        _client(free_disk_margin_bytes=2**62).download("titanic", tmp_path / "data", cache_dir=tmp_path / "cache")
    assert _files(tmp_path) == []


def test_corrupt_archive_from_kaggle_names_the_file(fake_kaggle, tmp_path: Path) -> None:
    archive = fake_kaggle.competition.archive
    fake_kaggle.serve_archive(archive[: len(archive) // 2], dict(fake_kaggle.competition.files))
    with pytest.raises(CorruptArchive, match=r"titanic\.zip is not a readable zip archive: it is corrupt or truncated"):
        _client().download("titanic", tmp_path / "data", cache_dir=tmp_path / "cache")
    assert _files(tmp_path) == [], "the broken archive is deleted so the next run downloads afresh"


# ------------------------------------------------------------------ archives inside local data


def _data_folder(tmp_path: Path) -> Path:
    data = tmp_path / "raw" / "data"
    data.mkdir(parents=True)
    (data / "train.csv").write_text("id,x,y\n1,0.5,a\n2,0.7,b\n3,0.1,a\n")
    (data / "test.csv").write_text("id,x\n4,0.2\n5,0.9\n")
    return data


@pytest.mark.parametrize("name, content, why", [
    ("bomb.zip", _zip({"zeros.bin": b"\0" * (9 * 2**20)}), "bomb"),  # the default limits, 9 MiB
    ("blob.bin.gz", gzip.compress(b"\0" * (9 * 2**20)), "bomb"),
    ("escape.zip", _zip({"../../escape.csv": b"a,b\n1,2\n"}), "outside"),
    ("train2.csv.zip", _zip({"train2.csv": os.urandom(4096)})[:3000], "corrupt or truncated"),
])
def test_bad_archive_in_data_is_skipped_and_named_while_the_rest_is_read(
        tmp_path: Path, name: str, content: bytes, why: str) -> None:
    data = _data_folder(tmp_path)
    (data / name).write_bytes(content)
    catalogue = build_catalogue(tmp_path / "raw")
    assert sorted(t.name for t in catalogue.tables) == ["test.csv", "train.csv"], "the other files are used"
    assert len(catalogue.skipped) == 1 and name in catalogue.skipped[0] and why in catalogue.skipped[0]
    assert any(name in note and why in note for note in catalogue.notes)
    assert name in catalogue.summary()
    assert not list(tmp_path.rglob("escape.csv"))
    assert _disk_use(tmp_path) < len(content) + 10_000, "nothing was inflated"


def test_workbook_bomb_is_not_inflated(tmp_path: Path) -> None:
    book = tmp_path / "train.xlsx"
    book.write_bytes(_zip({"[Content_Types].xml": b"<Types/>", "xl/worksheets/sheet1.xml": b"\0" * (9 * 2**20)}))
    with pytest.raises(UnreadableTable, match=r"train\.xlsx: member 'xl/worksheets/sheet1\.xml' .*bomb"):
        read_table(book)


def test_local_competition_with_only_a_truncated_train_zip_hands_in_the_sample_naming_it(tmp_path: Path) -> None:
    source = tmp_path / "src"
    (source / "data").mkdir(parents=True)
    titanic = SHARED / "titanic"
    (source / "description.md").write_bytes((titanic / "description.md").read_bytes())
    for name in ("test.csv", "gender_submission.csv"):
        (source / "data" / name).write_bytes((titanic / "data" / name).read_bytes())
    whole = _zip({"train.csv": (titanic / "data" / "train.csv").read_bytes()})
    (source / "data" / "train.csv.zip").write_bytes(whole[: len(whole) // 2])
    proc = subprocess.run([sys.executable, "-m", "agentk.cli", "run", str(source), "-w", str(tmp_path / "ws"),
                           "--time-budget", "10", "--folds", "2"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    # Nothing is inflated or trained on; the valid sample is still the run's answer, in one warning
    # line that names the broken archive.
    assert "internal error" not in proc.stderr
    handed_in_after_failed_setup(proc, tmp_path / "ws" / "src", source / "data" / "gender_submission.csv",
                                 "train.csv.zip", "corrupt or truncated")
