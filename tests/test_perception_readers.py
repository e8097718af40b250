"""Tables in every format Kaggle ships read to the same text cells, whatever the extension says."""

from __future__ import annotations

import gzip
import io
import json
import zipfile
from pathlib import Path

import pandas as pd
import pytest

from setup_pipeline.perception.catalogue import build_catalogue
from agentk.core.readers import UnreadableTable, file_kind, read_csv_header, read_csv_text, read_table, table_format

FRAME = pd.DataFrame({"id": ["007", "010", "123"], "price": [3.25, 10.0, -1.5], "city": ["Zürich", "Oslo", ""]})
EXPECTED = {"id": ["007", "010", "123"], "price": ["3.25", "10.0", "-1.5"], "city": ["Zürich", "Oslo", ""]}


def _csv(sep: str = ",", decimal: str = ".", newline: str = "\n") -> str:
    return FRAME.to_csv(index=False, sep=sep, decimal=decimal, lineterminator=newline)


def _check(frame: pd.DataFrame) -> None:
    assert list(frame.columns) == ["id", "price", "city"]
    got = {c: frame[c].tolist() for c in frame.columns}
    got["price"] = [str(float(v)) for v in got["price"]]
    assert got == EXPECTED


@pytest.mark.parametrize("name,content", [
    ("plain.csv", _csv().encode()),
    ("bom_crlf.csv", ("\ufeff" + _csv(newline="\r\n")).encode()),
    ("tabs.txt", _csv(sep="\t").encode()),
    ("european.csv", _csv(sep=";", decimal=",").encode()),
    ("latin1.csv", _csv().encode("latin-1")),
    ("utf16.csv", _csv().encode("utf-16")),
    ("wrong_extension.json", _csv().encode()),
])
def test_delimited_text_is_sniffed(tmp_path: Path, name: str, content: bytes) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    assert table_format(path) == "csv"
    _check(read_table(path))


def test_gzip_json_jsonl_parquet_excel(tmp_path: Path) -> None:
    records = json.dumps([{"id": "007", "price": 3.25, "city": "Zürich"}, {"id": "010", "price": 10.0, "city": "Oslo"},
                          {"id": "123", "price": -1.5, "city": None}])
    (tmp_path / "a.csv.gz").write_bytes(gzip.compress(_csv().encode()))
    (tmp_path / "b.json").write_text(records, encoding="utf-8")
    (tmp_path / "c.jsonl").write_text(FRAME.to_json(orient="records", lines=True), encoding="utf-8")
    (tmp_path / "d.data").write_text(json.dumps({"data": json.loads(records)}), encoding="utf-8")
    FRAME.to_parquet(tmp_path / "e.parquet", index=False)
    FRAME.to_excel(tmp_path / "f.xlsx", index=False)
    formats = {p.name: table_format(p) for p in sorted(tmp_path.iterdir())}
    assert formats == {"a.csv.gz": "csv", "b.json": "json", "c.jsonl": "jsonl", "d.data": "json",
                       "e.parquet": "parquet", "f.xlsx": "excel"}
    for path in sorted(tmp_path.iterdir()):
        frame = read_table(path)
        frame["city"] = frame["city"].replace("None", "")
        _check(frame)


def test_integer_columns_with_gaps_keep_their_spelling(tmp_path: Path) -> None:
    pd.DataFrame({"n": [1, None, 3]}).to_parquet(tmp_path / "n.parquet")
    assert read_table(tmp_path / "n.parquet")["n"].tolist() == ["1", "", "3"]


def test_one_column_csv_and_multiline_quotes(tmp_path: Path) -> None:
    (tmp_path / "y_train.csv").write_text("target\n0\n1\n1\n")
    assert read_table(tmp_path / "y_train.csv")["target"].tolist() == ["0", "1", "1"]
    text = 'id,excerpt\n1,"a long\nexcerpt, with commas"\n2,"short"\n'
    (tmp_path / "texts.csv").write_text(text)
    assert file_kind(tmp_path / "texts.csv") == "table"
    assert read_table(tmp_path / "texts.csv")["excerpt"].tolist() == ["a long\nexcerpt, with commas", "short"]


def test_one_column_file_of_a_semicolon_competition(tmp_path: Path) -> None:
    # Written with sep=";": cells keep their commas unquoted, so no delimiter splits them alike.
    sentences = ["It is like sight, in the end.", "Families, bred in opulence, were reduced.", "No comma here",
                 'Quoted; with "both", marks']
    pd.DataFrame({"text": sentences}).to_csv(tmp_path / "test.csv", sep=";", index=False)
    assert read_table(tmp_path / "test.csv")["text"].tolist() == sentences
    pd.DataFrame({"price": [3.25, 10.5, -1.0]}).to_csv(tmp_path / "y_train.csv", sep=";", decimal=",", index=False)
    assert read_table(tmp_path / "y_train.csv")["price"].tolist() == ["3.25", "10.5", "-1.0"]


def test_not_a_table(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("Just a sentence about the data.\n")
    (tmp_path / "blob.bin").write_bytes(bytes(range(256)) * 4)
    assert file_kind(tmp_path / "notes.txt") == "text"
    assert file_kind(tmp_path / "blob.bin") == "other"
    with pytest.raises(UnreadableTable):
        read_table(tmp_path / "blob.bin")


def test_catalogue_unpacks_archives_once_and_safely(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("inner/train.csv", _csv())
        archive.writestr("inner/img.png", b"\x89PNG\r\n\x1a\n")
    (data / "bundle.zip").write_bytes(buffer.getvalue())
    evil = io.BytesIO()
    with zipfile.ZipFile(evil, "w") as archive:
        archive.writestr("../escape.csv", _csv())
    (data / "evil.zip").write_bytes(evil.getvalue())
    catalogue = build_catalogue(tmp_path)
    assert [t.path.as_posix() for t in catalogue.tables] == ["data/bundle_unpacked/inner/train.csv"]
    assert [p.name for p in catalogue.images] == ["img.png"]
    assert not (tmp_path / "escape.csv").exists() and not (data / "escape.csv").exists()
    assert any("evil.zip" in note for note in catalogue.notes)
    again = build_catalogue(tmp_path)  # the unpacked folder is reused, not unpacked twice
    assert [t.path for t in again.tables] == [t.path for t in catalogue.tables]


_AWKWARD = [
    'id,text,n\n1,"a, b",2\n2,"say ""hi""",3\n3,"two\nlines",4\n4,,5\n',
    'id,text,n\r\n1, padded ,2\r\n2,"x"y,3\r\n3,a"b"c,4\r\n',
    'id;city;price\n1;Zürich;3,25\n2;Oslo;10,5\n',
    'id,x\n1,2\n\n3,4\n',
    'id,x\n',  # a header alone is no table
    'id,x\n1,2\n',
    'id,x\n1,2,3\n4,5,6\n',  # one more field than the header: pandas makes the first an index
    'id,x,y\n1,2\n3,4,5\n',  # a short row
    'id,id,x\n1,2,3\n',
    'id,,x\n1,2,3\n',
    'id,x\r\n1,""\r\n\r\n"2"," 3 "\r\n',
]


@pytest.mark.parametrize("content", _AWKWARD)
def test_large_files_read_by_arrow_give_the_c_parsers_cells(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                            content: str) -> None:
    """Arrow reads big delimited files; where it would read a cell otherwise, pandas' C parser does."""
    import agentk.core.readers as readers

    path = tmp_path / "t.csv"
    path.write_text(content, encoding="utf-8", newline="")
    try:
        expected = read_table(path)
    except UnreadableTable:
        monkeypatch.setattr(readers, "ARROW_MIN_BYTES", 0)
        with pytest.raises(UnreadableTable):
            read_table(path)
        return
    monkeypatch.setattr(readers, "ARROW_MIN_BYTES", 0)
    pd.testing.assert_frame_equal(read_table(path), expected)


def test_large_files_in_any_encoding_read_alike(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import agentk.core.readers as readers

    for encoding in ("latin-1", "utf-8-sig", "utf-16"):
        path = tmp_path / f"{encoding}.csv"
        path.write_bytes(_csv().encode(encoding))
        monkeypatch.setattr(readers, "ARROW_MIN_BYTES", 0)
        _check(read_table(path))


def test_the_csv_readers_refuse_a_record_longer_than_their_bound(tmp_path: Path) -> None:
    """The bounded readers every reader of a user's file shares (the source's split, the grader):
    a record past the bound is refused before a parser holds its fields; the header is read from
    the first record alone, named as the whole file's reader names it."""
    bound = 4096
    one_line = tmp_path / "one_line.csv"
    one_line.write_bytes(b"id,y," + b"7," * bound)  # no line break at all
    after_header = tmp_path / "after_header.csv"
    after_header.write_bytes(b"id,y\n1,0\n" + b"7," * bound + b"\n2,1\n")
    for path in (one_line, after_header):
        with pytest.raises(UnreadableTable, match="without a line break"):
            read_csv_text(path, max_record_bytes=bound)
    with pytest.raises(UnreadableTable, match="without a line break"):
        read_csv_header(one_line, max_record_bytes=bound)
    assert read_csv_header(after_header, max_record_bytes=bound) == ["id", "y"]
    # Within the bound: the same names as the whole file's reading (duplicates, BOM, quotes, gzip).
    fine = tmp_path / "fine.csv.gz"
    fine.write_bytes(gzip.compress(b'\xef\xbb\xbfid,"a, b",a,a\n' + b"1,2,3,4\n" * 3000))
    assert read_csv_header(fine, max_record_bytes=bound) == list(read_csv_text(fine).columns) == ["id", "a, b", "a", "a.1"]
    header_only = tmp_path / "header_only.csv"
    header_only.write_bytes(b"id,label")
    assert read_csv_header(header_only, max_record_bytes=bound) == ["id", "label"]
