"""What a user has on disk is a competition: the zip `kaggle competitions download` leaves, a
folder of its CSVs (with or without data/), with the metric from --metric or assumed and said;
and the odd files a source may hold (a page in cp1252 with Windows line ends, names that are not
UTF-8, link loops and dangling links, zips inside zips) never end in a traceback."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import io
import tarfile
import zipfile
from pathlib import Path

import pandas as pd
import pytest

from agentk.core.metrics.detection import infer_metric
from agentk.core.metrics.registry import _REGISTERED
from agentk.core.errors import SourceError
from agentk.sources import load_competition
from agentk.sources.bare import evaluation_sentence
from setup_pipeline.perception.catalogue import build_catalogue

SHARED = Path(__file__).resolve().parents[2] / "shared" / "competitions"
TITANIC = SHARED / "titanic" / "data"
AGENTK = [sys.executable, "-m", "agentk.cli"]
SOLVE = ["--time-budget", "5", "--folds", "2"]


def run_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*AGENTK, *args], cwd=cwd, capture_output=True, text=True, timeout=600)


def kaggle_zip(path: Path) -> Path:
    """What `kaggle competitions download -c titanic` writes: the three CSVs, zipped flat."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for csv in sorted(TITANIC.iterdir()):
            archive.write(csv, csv.name)
    return path


def result_of(ws: Path, name: str) -> dict:
    return json.loads((ws / name / "result.json").read_text())


@pytest.mark.integration
def test_the_downloaded_zip_is_a_competition_with_its_metric_assumed_and_said(tmp_path: Path) -> None:
    archive = kaggle_zip(tmp_path / "titanic.zip")
    proc = run_cli("run", str(archive), "-w", str(tmp_path / "ws"), *SOLVE, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = result_of(tmp_path / "ws", "titanic")
    assert result["valid_submission"] and result["error"] is None
    page = (tmp_path / "ws" / "titanic" / "raw" / "description.md").read_text()
    assert "No competition page came with these files (the archive titanic.zip)" in page
    assert any("metric" in line for line in result["assumptions"]), result["assumptions"]
    assert f"assumed metric: {result['metric']}" in " ".join((proc.stdout + proc.stderr).split())  # and said
    assert "Survived" in (tmp_path / "ws" / "titanic" / "submissions" / "submission.csv").read_text().splitlines()[0]


@pytest.mark.integration
def test_a_folder_of_csvs_with_the_metric_given(tmp_path: Path) -> None:
    """Also a shrug of test_odd_inputs' sharing this run: test ids saved through floats (892.0)
    while the sample writes them as integers are the same ids, written as the sample writes them."""
    folder = tmp_path / "titanic"
    shutil.copytree(TITANIC, folder)
    test = pd.read_csv(folder / "test.csv")
    test["PassengerId"] = test["PassengerId"].astype(float)  # 892.0, as a table saved through floats
    test.to_csv(folder / "test.csv", index=False)
    proc = run_cli("run", str(folder), "--metric", "auc", "-w", str(tmp_path / "ws"), *SOLVE, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = result_of(tmp_path / "ws", "titanic")
    assert result["valid_submission"] and result["metric"] == "auc"
    assert not any(line.startswith("metric") for line in result["assumptions"]), result["assumptions"]
    submission = pd.read_csv(tmp_path / "ws" / "titanic" / "submissions" / "submission.csv", dtype=str)
    sample = pd.read_csv(folder / "gender_submission.csv", dtype=str)
    assert submission["PassengerId"].tolist() == sample["PassengerId"].tolist()  # as the sample writes them


def test_metric_words_that_cannot_apply_are_one_line(tmp_path: Path) -> None:
    folder = tmp_path / "titanic"
    shutil.copytree(TITANIC, folder)
    with pytest.raises(SourceError, match="not a metric agentk computes"):
        load_competition(folder, metric="vibes")
    with pytest.raises(SourceError, match="has one, and its evaluation section decides"):
        load_competition(SHARED / "titanic", metric="auc")
    (tmp_path / "notes.txt").write_text("not a zip")
    with pytest.raises(SourceError, match="not an archive"):
        load_competition(tmp_path / "notes.txt")
    (tmp_path / "empty").mkdir()
    with pytest.raises(SourceError, match="is not a competition folder"):
        load_competition(tmp_path / "empty")


def test_every_registry_metric_can_be_stated_on_the_page() -> None:
    for metric in _REGISTERED:
        assert infer_metric(evaluation_sentence(metric.name)).name == metric.name, metric.name


def test_a_page_in_cp1252_with_windows_line_ends_reaches_the_agent_as_utf8(tmp_path: Path) -> None:
    source = tmp_path / "comp"
    shutil.copytree(TITANIC, source / "data")
    (source / "description.md").write_bytes("# Café survival\r\n\r\nPrédire qui a survécu.\r\n".encode("cp1252"))
    competition = load_competition(source)
    assert competition.title == "Café survival"
    competition.prepare(tmp_path / "raw")
    assert (tmp_path / "raw" / "description.md").read_text(encoding="utf-8") == \
        "# Café survival\n\nPrédire qui a survécu.\n"


def test_odd_names_and_links_are_copied_or_named_never_fatal(tmp_path: Path) -> None:
    source = tmp_path / "comp"
    shutil.copytree(TITANIC, source / "data")
    (source / "description.md").write_text("# Titanic\n")
    data = source / "data"
    os.symlink("loop_b", data / "loop_a")
    os.symlink("loop_a", data / "loop_b")
    os.symlink("gone.csv", data / "dangling.csv")
    (data / os.fsdecode("caf\xe9.txt".encode("latin-1"))).write_text("a note")
    warnings = load_competition(source).prepare(tmp_path / "raw")
    copied = {p.name for p in (tmp_path / "raw" / "data").iterdir()}
    assert {"train.csv", "test.csv", "gender_submission.csv", "café.txt"} <= copied
    assert not copied & {"loop_a", "loop_b", "dangling.csv"}
    assert any("3 broken symbolic link(s)" in w for w in warnings), warnings
    assert any(w.startswith("renamed: 1 file name(s) that were not UTF-8") for w in warnings), warnings


def test_a_zip_inside_a_zip_is_unpacked_level_by_level(tmp_path: Path) -> None:
    inner = kaggle_zip(tmp_path / "inner.zip")
    outer = tmp_path / "raw" / "data" / "download.zip"
    outer.parent.mkdir(parents=True)
    with zipfile.ZipFile(outer, "w") as archive:
        archive.write(inner, "tables/inner.zip")
    catalogue = build_catalogue(tmp_path / "raw")
    names = sorted(t.name for t in catalogue.tables)
    assert names == ["gender_submission.csv", "test.csv", "train.csv"], (names, catalogue.notes)
    assert sum(note.startswith("unpacked") for note in catalogue.notes) == 2


def kaggle_tar(path: Path, mode: str) -> Path:
    """The three CSVs in a tar (`mode` w, w:gz, w:bz2 or w:xz), flat."""
    with tarfile.open(path, mode) as archive:
        for csv in sorted(TITANIC.iterdir()):
            archive.add(csv, csv.name)
    return path


@pytest.mark.parametrize("name, mode", [("titanic.tar", "w"), ("titanic.tar.gz", "w:gz"), ("titanic.tgz", "w:gz"),
                                        ("titanic.tar.bz2", "w:bz2"), ("titanic.tar.xz", "w:xz")])
def test_a_tar_of_the_tables_is_unpacked_like_a_zip(tmp_path: Path, name: str, mode: str) -> None:
    (tmp_path / "raw" / "data").mkdir(parents=True)
    kaggle_tar(tmp_path / "raw" / "data" / name, mode)
    catalogue = build_catalogue(tmp_path / "raw")
    names = sorted(t.name for t in catalogue.tables)
    assert names == ["gender_submission.csv", "test.csv", "train.csv"], (names, catalogue.notes)
    assert any(note.startswith(f"unpacked {name}") for note in catalogue.notes)


@pytest.mark.parametrize("kind", ["link", "escape", "fifo"])
def test_a_tar_with_a_link_an_escaping_path_or_a_pipe_is_refused_whole(tmp_path: Path, kind: str) -> None:
    archive_path = tmp_path / "raw" / "data" / "bad.tar.gz"
    archive_path.parent.mkdir(parents=True)
    with tarfile.open(archive_path, "w:gz") as archive:
        archive.add(TITANIC / "train.csv", "train.csv")
        member = tarfile.TarInfo({"link": "secrets", "escape": "../../outside.csv", "fifo": "pipe"}[kind])
        if kind == "link":
            member.type, member.linkname = tarfile.SYMTYPE, "/etc/passwd"
            archive.addfile(member)
        elif kind == "fifo":
            member.type = tarfile.FIFOTYPE
            archive.addfile(member)
        else:
            data = b"a,b\n1,2\n"
            member.size = len(data)
            archive.addfile(member, io.BytesIO(data))
    catalogue = build_catalogue(tmp_path / "raw")
    assert not catalogue.tables  # nothing of a refused archive is kept, not even its good member
    assert any("bad.tar.gz" in s and "refusing" in s for s in catalogue.skipped), catalogue.skipped
    assert not (tmp_path / "outside.csv").exists()


def test_a_tar_bomb_is_refused_before_a_byte_is_written(tmp_path: Path) -> None:
    from agentk.core.reading.archives import ArchiveLimits
    from agentk.core.errors import UnsafeArchive
    from agentk.core.reading.tars import extract_tar

    archive_path = tmp_path / "bomb.tar.gz"
    with tarfile.open(archive_path, "w:gz") as archive:
        member = tarfile.TarInfo("zeros.csv")
        member.size = 50 * 2**20
        archive.addfile(member, io.BytesIO(bytes(member.size)))
    with pytest.raises(UnsafeArchive, match="tar bomb"):
        extract_tar(archive_path, tmp_path / "out", ArchiveLimits(ratio_floor_bytes=2**20))
    assert not (tmp_path / "out" / "zeros.csv").exists()


def test_a_downloaded_tar_gz_is_the_competition_its_zip_is(tmp_path: Path) -> None:
    """A .tar.gz of the tables gives the agent the very tables the zip gives (the zip's run, above,
    covers the rest of the way: one run fewer in the suite)."""
    seen = {}
    for folder in ("zip", "tar"):
        (tmp_path / folder).mkdir()
    for archive in (kaggle_zip(tmp_path / "zip" / "titanic.zip"), kaggle_tar(tmp_path / "tar" / "titanic.tar.gz", "w:gz")):
        competition = load_competition(archive)
        raw = tmp_path / f"raw-{archive.suffix}"
        competition.prepare(raw)
        tables = {t.name: t.frame.to_csv(index=False) for t in build_catalogue(raw).tables}
        seen[archive.name] = (competition.id, tables)
        assert "No competition page came with these files" in (raw / "description.md").read_text()
    (zip_id, zip_tables), (tar_id, tar_tables) = seen["titanic.zip"], seen["titanic.tar.gz"]
    assert zip_id == tar_id == "titanic"
    assert tar_tables == zip_tables and set(tar_tables) == {"train.csv", "test.csv", "gender_submission.csv"}
