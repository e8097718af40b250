"""Competition sources on real folders: the 8 shared Kaggle competitions, the generated digits
image competition in both layouts, MLE-bench prepared folders, and the one-line errors."""

from __future__ import annotations

import math
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from helpers import make_mlebench_layout

from agentk.core.errors import GradingError, SourceError
from agentk.sources import load_competition
from agentk.sources.common import build_atomically, find_sample_csv

SHARED = Path(__file__).resolve().parents[2] / "shared"
COMPETITIONS = SHARED / "competitions"
SHARED_IDS = sorted(p.name for p in COMPETITIONS.iterdir() if p.is_dir())


def read_exact(path: Path) -> pd.DataFrame:
    return pd.read_csv(path, dtype=str, keep_default_na=False)


def files_under(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()}


@pytest.fixture(scope="module")
def prepared_shared(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """Each shared competition loaded and prepared once for the module."""
    out = {}
    for comp_id in SHARED_IDS:
        comp = load_competition(COMPETITIONS / comp_id)
        raw = tmp_path_factory.mktemp(comp_id) / "raw"
        comp.prepare(raw)
        out[comp_id] = (comp, raw)
    return out


# ---------------------------------------------------------------- the 8 shared competitions


@pytest.mark.parametrize("comp_id", SHARED_IDS)
def test_split_competition_prepares_the_agents_view(comp_id: str, prepared_shared: dict) -> None:
    comp, raw = prepared_shared[comp_id]
    source = COMPETITIONS / comp_id
    toml = tomllib.loads((source / "competition.toml").read_text())
    grading = comp.grading
    assert comp.id == comp_id and comp.source_kind == "local" and comp.has_answers
    assert grading.metric == toml["grading"]["metric"]
    graded = list(grading.target_columns) or [grading.label_column]

    original = read_exact(source / "data" / "train.csv")
    original_test_columns = list(read_exact(source / "data" / "test.csv").columns)
    train = read_exact(raw / "data" / "train.csv")
    test = read_exact(raw / "data" / "test.csv")
    n_held = math.ceil(0.1 * len(original))  # sklearn rounds a float test_size up
    assert len(test) == n_held and len(train) + len(test) == len(original)
    assert list(train.columns) == list(original.columns)
    assert list(test.columns) == original_test_columns
    assert not set(graded) & set(test.columns)
    assert set(train[grading.id_column]).isdisjoint(test[grading.id_column])

    # Every written value is the original text of that row and column.
    by_id = original.set_index(grading.id_column)
    kept = train.set_index(grading.id_column)
    assert kept.equals(by_id.loc[kept.index])
    held = test.set_index(grading.id_column)
    assert held.equals(by_id.loc[held.index, held.columns])

    answers = comp.answers()
    assert list(answers.columns) == [grading.id_column, *graded]
    assert answers[grading.id_column].tolist() == test[grading.id_column].tolist()
    assert answers.set_index(grading.id_column).equals(by_id.loc[held.index, graded])
    assert comp.answers().equals(answers)  # deterministic

    # A sample exists exactly when Kaggle shipped one, re-made for the held-out ids.
    original_sample = find_sample_csv(source / "data")
    raw_samples = [p for p in (raw / "data").glob("*.csv") if p.name not in ("train.csv", "test.csv")]
    if original_sample is None:
        assert raw_samples == []
    else:
        assert [p.name for p in raw_samples] == [original_sample.name]
        kaggle_sample = read_exact(original_sample)
        sample = read_exact(raw_samples[0])
        assert list(sample.columns) == list(kaggle_sample.columns)
        assert sample[grading.id_column].tolist() == test[grading.id_column].tolist()
        for column in kaggle_sample.columns.drop(grading.id_column):
            assert set(sample[column]) == {kaggle_sample[column].iloc[0]}

    # The agent's view: description and data only, never the grading facts or answers.
    assert (raw / "description.md").read_bytes() == (source / "description.md").read_bytes()
    names = files_under(raw)
    assert not any("competition.toml" in n or n.startswith("private") for n in names)
    expected_data = {p.name for p in (source / "data").iterdir()}
    assert {n.removeprefix("data/") for n in names if n.startswith("data/")} == expected_data
    assert b"\r\n" not in (raw / "data" / "train.csv").read_bytes()


def test_spreadsheet_booleans_and_empty_cells_survive(prepared_shared: dict) -> None:
    _, raw = prepared_shared["spaceship-titanic"]
    train = read_exact(raw / "data" / "train.csv")
    assert set(train["Transported"]) == {"TRUE", "FALSE"}
    # This file spells missing values "NaN": kept as that text, not turned into a float.
    assert set(train["CryoSleep"]) == {"TRUE", "FALSE", "NaN"}
    comp, raw = prepared_shared["titanic"]
    test = read_exact(raw / "data" / "test.csv")
    assert (test["Cabin"] == "").sum() > 0 and "nan" not in set(test["Cabin"])
    assert set(comp.answers()["Survived"]) == {"0", "1"}


def test_other_data_files_are_copied_unchanged(prepared_shared: dict) -> None:
    _, raw = prepared_shared["house-prices-advanced-regression-techniques"]
    source = COMPETITIONS / "house-prices-advanced-regression-techniques" / "data" / "data_description.txt"
    assert (raw / "data" / "data_description.txt").read_bytes() == source.read_bytes()


def test_test_file_keeps_only_the_original_test_columns(prepared_shared: dict) -> None:
    # bike-sharing: train has casual/registered besides the target, test has neither.
    _, raw = prepared_shared["bike-sharing-demand"]
    test = read_exact(raw / "data" / "test.csv")
    assert not {"casual", "registered", "count"} & set(test.columns)
    assert (raw / "data" / "sampleSubmission.csv").is_file()


# ---------------------------------------------------------------- prepare is idempotent and atomic


@pytest.fixture()
def titanic_copy(tmp_path: Path) -> Path:
    folder = tmp_path / "titanic"
    shutil.copytree(COMPETITIONS / "titanic", folder, copy_function=shutil.copyfile)
    for path in [folder, *folder.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    return folder


def test_prepare_twice_does_not_rewrite(titanic_copy: Path, tmp_path: Path) -> None:
    comp = load_competition(titanic_copy)
    raw = tmp_path / "ws" / "raw"
    comp.prepare(raw)
    before = (raw / "data" / "train.csv").stat().st_mtime_ns
    load_competition(titanic_copy).prepare(raw)
    assert (raw / "data" / "train.csv").stat().st_mtime_ns == before
    assert sorted(p.name for p in raw.parent.iterdir()) == ["raw"]  # no temp siblings left


def test_prepare_redoes_a_changed_source_or_incomplete_folder(titanic_copy: Path, tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "half-written.csv").write_text("x\n")
    load_competition(titanic_copy).prepare(raw)
    assert not (raw / "half-written.csv").exists()

    (titanic_copy / "description.md").write_text("# Titanic\n\nnew text\n")
    load_competition(titanic_copy).prepare(raw)
    assert (raw / "description.md").read_text() == "# Titanic\n\nnew text\n"


def test_a_failed_build_leaves_the_previous_folder(tmp_path: Path) -> None:
    target = tmp_path / "raw"
    assert build_atomically(target, "v1", lambda out: (out / "a.txt").write_text("one"))

    def broken(out: Path) -> None:
        (out / "a.txt").write_text("half")
        raise RuntimeError("killed")

    with pytest.raises(RuntimeError):
        build_atomically(target, "v2", broken)
    assert (target / "a.txt").read_text() == "one"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["raw"]
    assert not build_atomically(target, "v1", broken)  # already complete: skipped


# ---------------------------------------------------------------- generated image competition


@pytest.fixture(scope="module")
def digits(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    tool = SHARED / "tools" / "make_digits_competition.py"
    base = tmp_path_factory.mktemp("digits")
    folders = {}
    for layout in ("folders", "csv"):
        folders[layout] = base / layout
        subprocess.run([sys.executable, str(tool), str(folders[layout]), "--layout", layout], check=True)
    return folders


@pytest.mark.parametrize("layout", ["folders", "csv"])
def test_image_competition_copies_images_and_reads_answers(layout: str, digits: dict, tmp_path: Path) -> None:
    source = digits[layout]
    comp = load_competition(source)
    assert comp.id == f"digit-images-{layout}" and comp.title == "Digit Images"
    assert comp.grading.target_columns == ("label",) and comp.grading.id_column == "image_id"
    comp.prepare(tmp_path / "raw")
    data = tmp_path / "raw" / "data"
    assert files_under(data) == files_under(source / "data")
    pngs = list(data.rglob("*.png"))
    assert len(pngs) == 1797
    assert pngs[0].read_bytes() == (source / "data" / pngs[0].relative_to(data)).read_bytes()
    answers = comp.answers()
    assert answers.equals(read_exact(source / "private" / "answers.csv"))
    sample = read_exact(data / "sample_submission.csv")
    assert answers["image_id"].tolist() == sample["image_id"].tolist()
    assert not (tmp_path / "raw" / "private").exists()


# ---------------------------------------------------------------- MLE-bench prepared layout


def test_mlebench_titanic_derives_target_columns(tmp_path: Path) -> None:
    prepared = make_mlebench_layout(COMPETITIONS / "titanic", tmp_path)
    assert prepared == tmp_path / "titanic" / "prepared"
    assert (prepared / "public" / "sample_submission.csv").is_file()
    for path in (prepared, prepared.parent):  # the prepared/ folder or the folder above it
        comp = load_competition(path)
        assert comp.id == "titanic" and comp.source_kind == "mlebench"
        assert comp.grading.id_column == "PassengerId"
        assert comp.grading.target_columns == ("Survived",) and comp.grading.label_column is None
        assert comp.grading.metric == "accuracy" and comp.grading.higher_is_better

    raw = tmp_path / "raw"
    comp.prepare(raw)
    assert files_under(raw) == {".prepared", "description.md", "data/train.csv", "data/test.csv",
                                "data/sample_submission.csv"}
    test = read_exact(raw / "data" / "test.csv")
    assert comp.answers()["PassengerId"].tolist() == test["PassengerId"].tolist()


def test_mlebench_spooky_without_sample_derives_label_column(tmp_path: Path) -> None:
    prepared = make_mlebench_layout(COMPETITIONS / "spooky-author-identification", tmp_path)
    assert find_sample_csv(prepared / "public") is None
    comp = load_competition(prepared)
    assert comp.id == "spooky-author-identification"
    assert comp.grading.id_column == "id" and comp.grading.label_column == "author"
    assert comp.grading.target_columns == ()
    assert comp.grading.metric == "multiclass_logloss" and not comp.grading.higher_is_better
    assert set(comp.answers()["author"]) == {"EAP", "HPL", "MWS"}


def test_mlebench_uses_a_competition_toml_beside_prepared(tmp_path: Path) -> None:
    prepared = make_mlebench_layout(COMPETITIONS / "titanic", tmp_path)
    (prepared.parent / "competition.toml").write_text(
        '[competition]\ntitle = "T"\n[grading]\nmetric = "f1"\nhigher_is_better = true\n'
        'id_column = "PassengerId"\ntarget_columns = ["Survived"]\n'
    )
    comp = load_competition(prepared)
    assert comp.grading.metric == "f1" and comp.title == "T"


def test_mlebench_without_a_detectable_metric_keeps_answers(tmp_path: Path) -> None:
    prepared = make_mlebench_layout(COMPETITIONS / "titanic", tmp_path)
    (prepared / "public" / "description.md").write_text("# Some task\n\nPredict things.\n")
    comp = load_competition(prepared)
    assert comp.grading is None and not comp.has_answers
    assert len(comp.answers()) == 90


# ---------------------------------------------------------------- folders without grading facts


def test_local_folder_without_toml_has_no_answers(tmp_path: Path) -> None:
    (tmp_path / "mine" / "data" / "imgs").mkdir(parents=True)
    (tmp_path / "mine" / "description.md").write_text("# My Own Task\n\nPredict y.\n")
    (tmp_path / "mine" / "data" / "train.csv").write_text("id,y\n1,2\n")
    (tmp_path / "mine" / "data" / "imgs" / "a.png").write_bytes(b"\x89PNG")
    comp = load_competition(str(tmp_path / "mine"))
    assert comp.id == "mine" and comp.title == "My Own Task" and comp.grading is None
    assert not comp.has_answers
    with pytest.raises(GradingError):
        comp.answers()
    comp.prepare(tmp_path / "raw")
    assert files_under(tmp_path / "raw") == {".prepared", "description.md", "data/train.csv", "data/imgs/a.png"}


# ---------------------------------------------------------------- one-line errors


def make_local(folder: Path, toml: str | None = None, files: dict[str, str] | None = None) -> Path:
    (folder / "data").mkdir(parents=True)
    (folder / "description.md").write_text("# Task\n")
    if toml is not None:
        (folder / "competition.toml").write_text(toml)
    for name, text in (files or {}).items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    return folder


SPLIT_TOML = '[grading]\nmetric = "accuracy"\nhigher_is_better = true\nid_column = "id"\ntarget_columns = ["y"]\nanswers = "split"\n'


def load_error(path: str | Path) -> str:
    with pytest.raises(SourceError) as info:
        load_competition(path)
    message = str(info.value)
    assert "\n" not in message and message
    return message


def test_errors_for_missing_or_unrecognised_folders(tmp_path: Path) -> None:
    assert load_error(tmp_path / "nope") == f"competition folder not found: {tmp_path / 'nope'}"
    (tmp_path / "empty").mkdir()
    assert "expected description.md and data/" in load_error(tmp_path / "empty")
    (tmp_path / "file.csv").write_text("a\n")
    assert "is a file" in load_error(tmp_path / "file.csv")
    assert "a Kaggle competition: `agentk run" in load_error("some-kaggle-competition")
    assert "a Kaggle competition: `agentk run" in load_error("https://www.kaggle.com/competitions/titanic")


def test_errors_for_incomplete_local_folders(tmp_path: Path) -> None:
    (tmp_path / "no_desc" / "data").mkdir(parents=True)
    (tmp_path / "no_desc" / "data" / "train.csv").write_text("id,y\n1,2\n")
    # data/ without a page is a competition too: its page says none came (tests/test_sources_bare.py).
    bare = load_competition(tmp_path / "no_desc")
    assert bare.grading is None and bare.id == "no_desc"
    assert "missing or empty" in load_error(make_local(tmp_path / "no_data"))
    (tmp_path / "prepared").mkdir()
    assert "public/" in load_error(tmp_path / "prepared")


def test_errors_for_bad_grading_files(tmp_path: Path) -> None:
    empty_train = make_local(tmp_path / "a", SPLIT_TOML, {"data/train.csv": ""})
    assert load_error(empty_train).startswith("cannot read data/train.csv:")
    no_train = make_local(tmp_path / "b", SPLIT_TOML, {"data/other.txt": "x"})
    assert "needs a train CSV" in load_error(no_train)
    broken_toml = make_local(tmp_path / "c", "[grading\nmetric=", {"data/train.csv": "id,y\n1,2\n"})
    assert load_error(broken_toml).startswith("cannot parse competition.toml:")
    no_target = make_local(tmp_path / "d", SPLIT_TOML.replace('target_columns = ["y"]\n', ""),
                           {"data/train.csv": "id,y\n1,2\n"})
    assert "target_columns" in load_error(no_target)
    wrong_column = make_local(tmp_path / "e", SPLIT_TOML, {"data/train.csv": "id,z\n1,2\n"})
    assert "lacks the graded columns ['y']" in load_error(wrong_column)
    no_answers = make_local(tmp_path / "f", SPLIT_TOML.replace('"split"', '"private/answers.csv"'),
                            {"data/train.csv": "id,y\n1,2\n"})
    assert "answers file not found" in load_error(no_answers)


def test_split_with_too_few_rows_fails_at_prepare(tmp_path: Path) -> None:
    comp = load_competition(make_local(tmp_path / "one", SPLIT_TOML, {"data/train.csv": "id,y\n1,2\n"}))
    with pytest.raises(SourceError, match="too few"):
        comp.prepare(tmp_path / "raw")
    assert not (tmp_path / "raw").exists()


def test_mlebench_sample_with_one_column_per_class_gives_label_column(tmp_path: Path) -> None:
    prepared = make_mlebench_layout(COMPETITIONS / "leaf-classification", tmp_path)
    species = sorted(set(read_exact(prepared / "public" / "train.csv")["species"]))
    test_ids = read_exact(prepared / "public" / "test.csv")["id"]
    sample = pd.DataFrame({"id": test_ids, **{s: "0.0101" for s in species}})
    sample.to_csv(prepared / "public" / "sample_submission.csv", index=False)
    comp = load_competition(prepared)
    assert comp.grading.id_column == "id" and comp.grading.label_column == "species"
    assert comp.grading.metric == "multiclass_logloss"


@pytest.mark.parametrize(("rows", "fraction", "seed"), [(2, 0.1, 0), (10, 0.1, 0), (891, 0.2, 7), (1001, 0.33, 123)])
def test_the_held_out_split_is_scikit_learns_row_for_row(rows: int, fraction: float, seed: int) -> None:
    from sklearn.model_selection import train_test_split

    from agentk.sources.local import held_out_split

    df = pd.DataFrame({"id": range(rows), "x": np.arange(rows) * 2.0})
    kept, held = held_out_split(df, fraction, seed)
    want_kept, want_held = train_test_split(df, test_size=fraction, random_state=seed)
    pd.testing.assert_frame_equal(kept, want_kept)
    pd.testing.assert_frame_equal(held, want_held)


def test_the_split_and_its_answers_go_through_the_bounded_readers(tmp_path: Path) -> None:
    """A train.csv that is one line past the readers' bound (150 MB made agentk grow past 11 GB):
    refused in one line by the reader the agent uses, before any parser holds its fields."""
    from agentk.core.readers import MAX_RECORD_BYTES
    from agentk.grading import grade_file

    fields = b"7," * (MAX_RECORD_BYTES // 2 + 1)
    headless = make_local(tmp_path / "a", SPLIT_TOML)
    (headless / "data" / "train.csv").write_bytes(b"id,y," + fields)  # no line break at all
    assert load_error(headless) == (f"cannot read data/train.csv: a record runs over {MAX_RECORD_BYTES / 2**20:g} MB "
                                    "without a line break: not a table of rows")
    after_header = make_local(tmp_path / "b", SPLIT_TOML)
    (after_header / "data" / "train.csv").write_bytes(b"id,y\n1,0\n2,1\n" + fields)
    competition = load_competition(after_header)
    with pytest.raises(SourceError, match="without a line break"):
        competition.prepare(tmp_path / "raw")
    submission = tmp_path / "submission.csv"
    submission.write_text("id,y\n1,0\n")
    with pytest.raises(GradingError, match="answers are unusable: cannot read them: .*without a line break"):
        grade_file(submission, competition)
