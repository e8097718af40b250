"""The directory tree in words (Agent K's difficulty surrogate): real shared competitions prepared
into a raw/ view as a run does, and tmp trees with images, audio, parquet, zips and 30k files."""

from __future__ import annotations

import builtins
import gzip
import zipfile
from pathlib import Path

import pandas as pd
import pytest

from agentk.sources import load_competition
from curriculum.tree_description import complexity_of, describe_tree

SHARED = Path(__file__).resolve().parents[2] / "shared" / "competitions"


def raw_view(competition: str, tmp_path: Path) -> Path:
    raw = tmp_path / competition / "raw"
    load_competition(SHARED / competition).prepare(raw)
    return raw


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_shared_tabular_competition_lists_tables_with_their_shapes(tmp_path: Path) -> None:
    raw = raw_view("titanic", tmp_path)
    train = raw / "data" / "train.csv"
    rows = sum(1 for _ in train.open(encoding="utf-8")) - 1
    columns = len(train.open(encoding="utf-8").readline().split(","))
    described = describe_tree(raw)
    assert described.text.startswith("Modalities: tabular.")
    assert f"train.csv ({rows:,} rows × {columns} columns)" in described.text
    assert "File types: .csv ×3." in described.text
    assert ".prepared" not in described.text and "description.md" not in described.text
    assert described.stats["tables"] == 3 and described.stats["depth"] == 1 and described.stats["max_columns"] == columns


def test_a_text_column_makes_a_text_task_and_a_data_dictionary_does_not(tmp_path: Path) -> None:
    tweets = describe_tree(raw_view("nlp-getting-started", tmp_path))
    houses = describe_tree(raw_view("house-prices-advanced-regression-techniques", tmp_path))
    assert tweets.text.startswith("Modalities: tabular, text.") and "free text" in tweets.text
    assert houses.text.startswith("Modalities: tabular.")  # data_description.txt is documentation
    assert "data_description.txt" in houses.text


def test_the_same_tree_describes_the_same_way(tmp_path: Path) -> None:
    raw = raw_view("spaceship-titanic", tmp_path)
    assert describe_tree(raw) == describe_tree(raw)


def test_images_audio_parquet_and_zips_are_summarised(tmp_path: Path) -> None:
    root = tmp_path / "raw"
    write(root / "description.md", "# Birds\nClassify bird calls and photos.")
    (root / "data").mkdir(parents=True)
    pd.DataFrame({"id": range(50), "label": ["a", "b"] * 25, "x": range(50)}).to_parquet(root / "data" / "train.parquet")
    for i in range(40):
        (root / "data" / "images" / "train").mkdir(parents=True, exist_ok=True)
        (root / "data" / "images" / "train" / f"{i:03}.png").write_bytes(b"\x89PNG" + bytes(100))
    for i in range(3):
        (root / "data" / "audio").mkdir(exist_ok=True)
        (root / "data" / "audio" / f"{i}.wav").write_bytes(b"RIFF" + bytes(1000))
    with zipfile.ZipFile(root / "data" / "extra.zip", "w") as archive:
        for i in range(20):
            archive.writestr(f"extra/{i}.jpg", bytes(10))
    described = describe_tree(root)
    assert described.text.startswith("Modalities: tabular, image, audio.")
    assert "train.parquet (50 rows × 3 columns)" in described.text
    assert "folder data/images/train/: 40 files, mostly image (.png ×40)" in described.text
    assert "0.png" not in described.text  # a big folder is counted, not listed
    assert "folder data/audio/: 0.wav (1004 B); 1.wav (1004 B); 2.wav (1004 B)." in described.text
    assert "Inside 1 zip archive(s): 20 files (20 image)" in described.text
    assert described.stats["depth"] == 3 and described.stats["image_files"] == 60 and described.stats["audio_files"] == 3


def test_complexity_grows_with_files_types_depth_bytes_and_modalities(tmp_path: Path) -> None:
    base = {"files": 3, "file_types": 1, "depth": 1, "bytes": 10_000, "modalities": 1, "max_columns": 5}
    for key, more in [("files", 30), ("file_types", 2), ("depth", 2), ("bytes", 10**9), ("modalities", 2), ("max_columns", 50)]:
        assert complexity_of({**base, key: more}) > complexity_of(base), key

    simple = tmp_path / "simple"
    write(simple / "data" / "train.csv", "id,y\n1,0\n2,1\n")
    write(simple / "data" / "test.csv", "id\n3\n")
    harder = tmp_path / "harder"
    write(harder / "data" / "train.csv", "id,y\n1,0\n2,1\n")
    write(harder / "data" / "test.csv", "id\n3\n")
    for i in range(30):
        (harder / "data" / "img" / "a").mkdir(parents=True, exist_ok=True)
        (harder / "data" / "img" / "a" / f"{i}.jpg").write_bytes(bytes(2000))
    easy, hard = describe_tree(simple), describe_tree(harder)
    assert easy.complexity < hard.complexity
    titanic = describe_tree(raw_view("titanic", tmp_path)).complexity
    leaf = describe_tree(raw_view("leaf-classification", tmp_path)).complexity  # 194 columns
    assert titanic < leaf


def test_a_big_table_is_counted_within_the_byte_budget(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import curriculum.tree_description as tree

    table = write(tmp_path / "raw" / "data" / "big.csv", "id,a,b\n" + "".join(f"{i},{i * 2},x{i}\n" for i in range(20_000)))
    exact = describe_tree(tmp_path / "raw")
    assert "big.csv (20,000 rows × 3 columns)" in exact.text
    monkeypatch.setattr(tree, "COUNT_BYTES", table.stat().st_size // 4)
    estimated = describe_tree(tmp_path / "raw")
    rows = int(estimated.stats["max_rows"])
    assert "big.csv (~" in estimated.text and 15_000 < rows < 25_000


def test_thirty_thousand_files_describe_without_opening_them(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "raw" / "data" / "train"
    folder.mkdir(parents=True)
    for i in range(30_000):
        (folder / f"{i:05}.jpg").touch()
    write(tmp_path / "raw" / "data" / "labels.csv", "id,label\n" + "".join(f"{i:05},{i % 7}\n" for i in range(30_000)))
    opened: list[str] = []
    real_open = builtins.open

    def counting_open(file, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
        opened.append(str(file))
        return real_open(file, *args, **kwargs)

    # Speed is the benchmark's to measure; what keeps it fast is that the pictures stay shut.
    monkeypatch.setattr(builtins, "open", counting_open)
    monkeypatch.setattr(gzip, "open", lambda file, *a, **k: (opened.append(str(file)), gzip.GzipFile(file, *a, **k))[1])
    described = describe_tree(tmp_path / "raw")
    assert opened and not [name for name in opened if name.endswith(".jpg")], opened[:5]
    assert "folder data/train/: 30,000 files, mostly image (.jpg ×30000)" in described.text
    assert described.stats["files"] == 30_001 and len(described.text) < 1000


def test_a_missing_or_empty_folder_describes_as_empty(tmp_path: Path) -> None:
    described = describe_tree(tmp_path / "nowhere")
    assert described.text.startswith("Modalities: none.") and described.stats["files"] == 0
