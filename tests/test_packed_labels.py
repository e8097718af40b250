"""Labels as ragged lists, ids packing (test row, class), and clips named through an id table, all
found by structure: a `rec_id,[labels]` table of class indices (`?` on the rows to predict) read as
one 0/1 column per class, `rec_id,[histogram ...]` tables read as numbered feature columns, a sample
whose `Id` is rec_id * 100 + class unpacked into the (row, class) pairs it scores, and wavs named by
a `rec_id,filename` table; and `agentk run` on such a competition (tests/packed_label_files.py)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from agentk.core.lookup_rows import packed_pairs, through_lookup
from agentk.core.readers import file_kind, read_table, table_columns
from agentk.core.records.workspace import Workspace
from agentk.sources import load_competition
from packed_label_files import SPECIES, make_packed_label_competition
from setup_pipeline.expert import lookup_codegen
from setup_pipeline.expert.inspect import inspect_competition
from setup_pipeline.perception.packed_ids import find_packed
from setup_pipeline.perception.tables import Logical
from test_end_to_end import assert_solved, run_agentk

# ---- ragged lists -------------------------------------------------------------------------------


def test_ragged_label_lists_are_one_column_per_class(tmp_path: Path) -> None:
    path = tmp_path / "labels.txt"
    path.write_text("rec_id,[labels]\n0,3,1\n1\n2,?\n3,0\n4,2,3\n", encoding="utf-8")
    assert file_kind(path) == "table"  # a .txt whose rows split unevenly is still a table
    frame = read_table(path)
    assert list(frame.columns) == ["rec_id", "labels_0", "labels_1", "labels_2", "labels_3"] == table_columns(path)
    assert frame.to_numpy().tolist() == [["0", "0", "1", "0", "1"],  # species 3 and 1
                                         ["1", "0", "0", "0", "0"],  # none: all negative
                                         ["2", "", "", "", ""],  # hidden: blank, to predict
                                         ["3", "1", "0", "0", "0"],
                                         ["4", "0", "0", "1", "1"]]
    assert "marked '?'" in frame.attrs["bracket_list"]


def test_bracketed_vectors_are_numbered_columns(tmp_path: Path) -> None:
    histogram = tmp_path / "histogram.txt"
    histogram.write_text("rec_id,[histogram of segment features]\n0,0.5,0.25,0.25\n1,0,0,1\n", encoding="utf-8")
    assert read_table(histogram).to_numpy().tolist() == [["0", "0.5", "0.25", "0.25"], ["1", "0", "0", "1"]]
    assert list(read_table(histogram).columns)[1:] == [f"histogram_of_segment_features_{k}" for k in range(3)]
    segments = tmp_path / "segments.txt"  # a bracketed plain field, then the list; several rows per id
    segments.write_text("rec_id,[segment_id],[features]\n0,0,1.5,2\n0,1,3,4\n2,0,5,6\n", encoding="utf-8")
    frame = read_table(segments)
    assert list(frame.columns) == ["rec_id", "segment_id", "features_0", "features_1"] and len(frame) == 3
    # A header that merely ends in a bracketed name, every row as wide: a plain table.
    plain = tmp_path / "plain.csv"
    plain.write_text("id,[unit]\n1,kg\n2,g\n", encoding="utf-8")
    assert list(read_table(plain).columns) == ["id", "[unit]"] and "bracket_list" not in read_table(plain).attrs


# ---- packed ids ---------------------------------------------------------------------------------


def _tables(classes: int = 5, test: tuple[str, ...] = ("14", "3", "27")) -> tuple[Logical, list[Logical]]:
    rows = [str(i) for i in range(30)]
    labels = pd.DataFrame({"rec": rows, **{f"lab_{k}": ["" if r in test else str(int(r) % 2) for r in rows]
                                          for k in range(classes)}})
    other = pd.DataFrame({"rec": rows, "v": [str(i * 0.5) for i in range(30)]})
    ids = [str(int(e) * 100 + k) for e in test for k in range(classes)]
    sample = Logical(["s.csv"], pd.DataFrame({"Id": ids, "Probability": ["0"] * len(ids)}))
    return sample, [Logical(["other.csv"], other), Logical(["labels.txt"], labels)]


def test_packed_ids_are_found_by_structure() -> None:
    sample, tables = _tables()
    found = find_packed(sample, "Id", tables)
    assert found is not None
    spec, table = found
    # 5 classes also make a grid by 10 (entities 140, 30, 270), but only by 100 are they test rows.
    assert spec.packed == 100 and table.files == ["labels.txt"] and spec.test_key == "rec"
    assert spec.classes == {str(k): f"lab_{k}" for k in range(5)} and spec.targets == [f"lab_{k}" for k in range(5)]
    assert "ids packed as entity*100+class" in spec.describe("s.csv", "Probability")
    # A class no training row holds (all 0 there) is no target: the submission predicts 0 for it.
    labels = tables[1].frame.assign(lab_4=lambda f: f["lab_4"].where(f["lab_4"] == "", "0"))
    spec, _ = find_packed(sample, "Id", [tables[0], Logical(["labels.txt"], labels)])
    assert spec.targets == [f"lab_{k}" for k in range(4)] and spec.unseen == ["4"]
    assert "class(es) 4 no training row holds: predicted 0" in spec.describe("s.csv", "Probability")


def test_what_is_no_packed_id() -> None:
    sample, tables = _tables()
    frame = sample.frame
    assert find_packed(Logical(["s.csv"], frame.iloc[1:]), "Id", tables) is None  # a pair missing: no grid
    assert find_packed(Logical(["s.csv"], frame.assign(Id=[f"x{i}" for i in frame["Id"]])), "Id", tables) is None
    moved = frame.assign(Id=[str(int(i) + 5000) for i in frame["Id"]])  # entities 64, 53, 77: no table's blank rows
    assert find_packed(Logical(["s.csv"], moved), "Id", tables) is None


def test_packed_ids_unpack_into_pairs() -> None:
    pairs = packed_pairs(pd.Series(["1403", "1400", " 301", "2712"]), 100)
    assert pairs.to_numpy().tolist() == [["14", "3"], ["14", "0"], ["3", "1"], ["27", "12"]]
    wide = pd.DataFrame({"id": ["3", "14", "27"], "0": [0.1, 0.2, 0.3], "1": [0.4, 0.5, 0.6],
                         "3": [0.7, 0.8, 0.9], "12": [0.0, 0.0, 1.0]})
    assert through_lookup(wide, pairs).tolist() == [0.8, 0.2, 0.4, 1.0]
    with pytest.raises(ValueError, match="not whole numbers"):
        packed_pairs(pd.Series(["14_3"]), 100)


# ---- the whole layout, read -----------------------------------------------------------------------


def test_inspection_reads_lists_packed_ids_and_named_clips(tmp_path: Path) -> None:
    source = make_packed_label_competition(tmp_path / "birds", n_train=24, n_test=6)
    workspace = Workspace(tmp_path / "ws")
    workspace.create()
    load_competition(source).prepare(workspace.raw)
    facts = inspect_competition(workspace.raw)
    labels = "data/essential_data/rec_labels_test_hidden.txt"
    assert facts.lookup is not None and facts.lookup.packed == 100 and facts.lookup.test_file == labels
    assert [t.column for t in facts.targets] == [f"labels_{k}" for k in range(len(SPECIES))]
    assert all(t.task == "binary" for t in facts.targets) and facts.metric == "auc"
    assert facts.submission_columns == ["Id", "Probability"] and facts.test_id_column == "rec_id"
    assert facts.audio is not None and facts.audio.path_column == "filename" and facts.audio.path_stems
    assert facts.audio.path_base == "data/essential_data/src_wavs" and facts.input_modalities == ["tabular", "audio"]
    assert any(c.startswith("histogram_of_segment_features_") for c in facts.tabular_columns)
    notes = "\n".join(facts.notes)
    assert f"{labels}: labels as lists of class indices" in notes and "6 row(s) marked '?'" in notes
    assert "ids packed as entity*100+class" in notes
    assert "audio files named through data/essential_data/rec_id2filename.txt's 'filename'" in notes
    # The spectrogram pictures share the clips' names: the clips are the inputs.
    assert "picture(s) are named as the clips" in notes and facts.image is None
    # The submission code unpacks the sample's ids: each row is its recording's probability of its
    # species; a species without a model (dropped here, as a class no training row holds) gets 0.
    sources = {f"labels_{k}": f"labels_{k}__proba__1" for k in range(len(SPECIES) - 1)}
    scope = {"pd": pd, "np": np, "Path": Path, "RAW": workspace.raw}
    exec(lookup_codegen.submission_format(facts, sources), scope)
    test_ids = sorted({str(int(i) // 100) for i in pd.read_csv(source / "data" / "sample_submission.csv")["Id"]})
    pred = pd.DataFrame({"id": test_ids, **{s: [int(r) + k / 10 for r in test_ids] for k, s in enumerate(sources.values())}})
    written = scope["format_submission"](pred.iloc[::-1])
    sample = pd.read_csv(source / "data" / "sample_submission.csv", dtype=str)
    assert written["Id"].tolist() == sample["Id"].tolist()
    expected = [0.0 if int(i) % 100 == len(SPECIES) - 1 else int(i) // 100 + int(i) % 100 / 10 for i in sample["Id"]]
    assert np.allclose(written["Probability"].astype(float), expected)
    # The segments' table repeats the histogram's header: its columns are the histogram's, not joined twice.
    assert [j.file[0].rsplit("/", 1)[-1] for j in facts.train_table.joins] == [
        "CVfolds_2.txt", "rec_id2filename.txt", "histogram_of_segments.txt"]


@pytest.mark.integration
def test_packed_label_competition_end_to_end(tmp_path: Path) -> None:
    """60 training and 20 test recordings: the submission is valid, one row per (recording, species)
    in the sample's order, graded by ROC AUC clearly above a constant's 0.5 (assert_solved: +0.1)."""
    run = run_agentk(make_packed_label_competition, tmp_path / "birds", 10)
    result = assert_solved(run)
    assert result["test_metric"] == "auc"
    workspace = tmp_path / "birds" / "ws" / "birds-in-the-field"
    submission = pd.read_csv(workspace / "submissions" / "submission.csv")
    sample = pd.read_csv(run.source / "data" / "sample_submission.csv")
    assert submission["Id"].tolist() == sample["Id"].tolist()
    assert submission["Probability"].between(0, 1).all() and submission["Probability"].nunique() > 10
    plan = json.loads((workspace / "setup" / "plan.json").read_text())
    said = "\n".join(plan["steps"] + plan["facts"]["notes"])
    assert "labels as lists of class indices under '[labels]'" in said and "marked '?'" in said
    assert "ids packed as entity*100+class" in said and "named through" in said
    assert np.isfinite(result["test_score"])
