"""Table roles are decided by structure: which file is the sample, the test rows, the training rows,
the answers kept apart, the extra features; names only break ties."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pandas as pd
import pytest
from PIL import Image

from agentk.sources import load_competition
from setup_pipeline.expert.inspect import inspect_competition
from setup_pipeline.perception.catalogue import build_catalogue
from setup_pipeline.perception.roles import decide_roles

pytestmark = pytest.mark.integration

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
MAKE_VARIANTS = SHARED / "tools" / "make_variants.py"

TRAIN = pd.DataFrame({"key": [f"k{i:03d}" for i in range(40)], "x": range(40), "colour": ["red", "blue"] * 20,
                      "label": ["yes", "no", "no", "yes"] * 10})
TEST = pd.DataFrame({"key": [f"t{i:03d}" for i in range(10)], "x": range(10), "colour": ["blue"] * 10})


def _folder(tmp_path: Path, files: dict[str, pd.DataFrame], description: str = "Predict label.\n") -> Path:
    raw = tmp_path / "raw"
    for name, frame in files.items():
        path = raw / "data" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if name.endswith(".json"):
            path.write_text(frame.to_json(orient="records"))
        elif name.endswith(".parquet"):
            frame.to_parquet(path, index=False)
        else:
            frame.to_csv(path, index=False, sep="\t" if name.endswith(".tsv") else ",")
    (raw / "description.md").write_text(description)
    return raw


def _roles(raw: Path, header: list[str] | None = None):
    return decide_roles(build_catalogue(raw), header)


def _sample(keys: pd.Series, column: str = "label", value: str = "no") -> pd.DataFrame:
    return pd.DataFrame({"key": keys, column: value})


def test_names_that_say_nothing(tmp_path: Path) -> None:
    raw = _folder(tmp_path, {"flowers.csv": TRAIN, "flowers_to_score.json": TEST,
                             "example_submission.csv": _sample(TEST["key"])})
    roles = _roles(raw)
    assert roles.sample == "data/example_submission.csv"
    assert roles.test.files == ["data/flowers_to_score.json"] and roles.train.files == ["data/flowers.csv"]
    assert roles.key == roles.test_key == roles.train_key == "key"
    assert roles.prediction_columns == ["label"]


def test_answers_in_a_file_of_their_own(tmp_path: Path) -> None:
    by_key = _folder(tmp_path / "a", {"train_values.csv": TRAIN.drop(columns="label"), "train_labels.csv": TRAIN[["key", "label"]].iloc[::-1],
                                      "test_values.csv": TEST, "submission_format.csv": _sample(TEST["key"])})
    roles = _roles(by_key)
    assert roles.train.joins[0].file == ["data/train_labels.csv"] and roles.train.joins[0].columns == ["label"]
    assert roles.train_frame.set_index("key").loc["k003", "label"] == "yes"  # joined by key, not by position
    by_row = _folder(tmp_path / "b", {"X_train.csv": TRAIN.drop(columns=["label"]), "y_train.csv": TRAIN[["label"]],
                                      "X_test.csv": TEST, "sample_submission.csv": _sample(TEST["key"])})
    roles = _roles(by_row)
    assert roles.train.beside == ["data/y_train.csv"]
    assert roles.train_frame["label"].tolist() == TRAIN["label"].tolist()


def test_the_key_is_the_only_input(tmp_path: Path) -> None:
    """X_train, y_train, X_test of one sentence column, keyed by the sentence itself: X_train is the
    training table (y_train lies beside it row by row) and the sentence is both the id and the input."""
    words = ["raven", "night", "dread", "shadow", "gloom", "tomb", "moon", "mist"]
    sentence = [f"The {words[i % 8]} fell over the {words[(i * 3) % 8]} house number {i} at dusk." for i in range(50)]
    train, test = pd.DataFrame({"text": sentence[:40]}), pd.DataFrame({"text": sentence[40:]})
    labels = pd.DataFrame({"author": ["EAP", "HPL", "MWS", "EAP"] * 10})
    raw = _folder(tmp_path, {"X_train.json": train, "y_train.json": labels, "X_test.json": test,
                             "example_submission.csv": test.assign(author="EAP")}, "Predict the author.\n")
    roles = _roles(raw)
    assert roles.train.files == ["data/X_train.json"] and roles.train.beside == ["data/y_train.json"]
    assert roles.train_frame["author"].tolist() == labels["author"].tolist()
    facts = inspect_competition(raw)
    assert facts.id_column == facts.train_id_column == facts.test_id_column == "text"
    assert facts.text_columns == ["text"] and facts.input_modalities == ["text"]
    assert [t.column for t in facts.targets] == ["author"] and facts.targets[0].classes == ["EAP", "HPL", "MWS"]


def test_parts_and_a_second_feature_table(tmp_path: Path) -> None:
    details = pd.concat([TRAIN, TEST])[["key"]].assign(height=range(50)).sample(frac=1, random_state=0)
    raw = _folder(tmp_path, {"train/part-00000.csv": TRAIN.iloc[:20].drop(columns="colour"),
                             "train/part-00001.csv": TRAIN.iloc[20:].drop(columns="colour"),
                             "test.csv": TEST.drop(columns="colour"), "metadata.csv": details.assign(colour="c"),
                             "sample_submission.csv": _sample(TEST["key"])})
    roles = _roles(raw)
    assert roles.train.files == ["data/train/part-00000.csv", "data/train/part-00001.csv"]
    assert len(roles.train_frame) == 40
    assert [j.columns for j in roles.train.joins] == [["height", "colour"]]
    assert roles.test_frame.set_index("key").loc["t004", "height"] == str(details.set_index("key").loc["t004", "height"])


def test_one_file_with_blank_answers(tmp_path: Path) -> None:
    both = pd.concat([TRAIN, TEST.assign(label="")]).sample(frac=1, random_state=1)
    raw = _folder(tmp_path, {"data.parquet": both, "sample_submission.csv": _sample(TEST["key"])})
    roles = _roles(raw)
    assert roles.train.rows == "target_present" and roles.test.rows == "target_blank"
    assert len(roles.train_frame) == 40 and len(roles.test_frame) == 10
    assert "label" not in roles.test_frame.columns


def test_one_file_with_blank_answers_and_an_echoed_column(tmp_path: Path) -> None:
    """One file holds train and test; the sample puts its prediction first and repeats a test input."""
    both = pd.concat([TRAIN, TEST.assign(label="")]).sample(frac=1, random_state=1)
    sample = pd.DataFrame({"label": "no", "key": TEST["key"], "colour": TEST["colour"]})
    raw = _folder(tmp_path, {"data.tsv": both, "sample_submission.csv": sample})
    roles = _roles(raw)
    assert roles.test.rows == "target_blank" and roles.key == "key"
    assert roles.echo == {"colour": "colour"} and roles.prediction_columns == ["label"]


def test_restarting_ids_and_echoed_columns(tmp_path: Path) -> None:
    """Train and test ids both start at 1; the sample puts its prediction first and repeats a test column."""
    train = TRAIN.assign(key=range(1, 41))
    test = TEST.assign(key=range(1, 11))
    sample = pd.DataFrame({"label": "no", "key": test["key"], "colour": test["colour"]})
    raw = _folder(tmp_path, {"train.csv": train, "test.csv": test, "sample_submission.csv": sample})
    roles = _roles(raw)
    assert roles.test.files == ["data/test.csv"] and roles.train.files == ["data/train.csv"]
    assert roles.key == "key" and roles.echo == {"colour": "colour"} and roles.prediction_columns == ["label"]


def test_rows_matched_by_order(tmp_path: Path) -> None:
    sample = pd.DataFrame({"row": range(1, 11), "label": "no"})
    raw = _folder(tmp_path, {"train.csv": TRAIN.drop(columns="key"), "test.csv": TEST.drop(columns="key"),
                             "sample_submission.csv": sample})
    roles = _roles(raw)
    assert roles.key == "row" and roles.test_key is None and roles.test.files == ["data/test.csv"]


def test_rows_matched_by_order_prediction_first(tmp_path: Path) -> None:
    """The sample puts its prediction first and numbers the test rows after it: the numbering is the
    key (no table holds it), the prediction is what train answers."""
    sample = pd.DataFrame({"label": "no", "row": range(1, 11)})
    train, test = (t.drop(columns="key").assign(x=t["x"] + 0.5) for t in (TRAIN, TEST))  # no column counts 1..10
    raw = _folder(tmp_path, {"train.csv": train, "test.csv": test, "sample_submission.csv": sample})
    roles = _roles(raw)
    assert roles.key == "row" and roles.test_key is None and roles.prediction_columns == ["label"]
    facts = inspect_competition(raw)
    assert facts.id_column == "row" and facts.submission_columns == ["label", "row"]
    assert [t.column for t in facts.targets] == ["label"]


def test_rows_matched_by_order_an_echoed_input_with_gaps(tmp_path: Path) -> None:
    """Test rows follow the sample's order and the sample repeats a test column with missing cells:
    those blanks are missing inputs, not answers of a file holding train and test."""
    test = TEST.drop(columns="key").assign(colour=["blue", "", "red"] + ["blue"] * 7)
    sample = pd.DataFrame({"row": range(1, 11), "label": "no", "colour": test["colour"]})
    raw = _folder(tmp_path, {"train.csv": TRAIN.drop(columns="key"), "test.csv": test, "sample_submission.csv": sample})
    roles = _roles(raw)
    assert roles.test.rows == "all" and roles.train.files == ["data/train.csv"] and len(roles.test_frame) == 10
    assert roles.key == "row" and roles.echo == {"colour": "colour"} and roles.prediction_columns == ["label"]


def test_no_sample_the_description_example_decides(tmp_path: Path) -> None:
    page = ("Predict the label.\n\nThe file should contain a header and have the following format:\n\n"
            "```\nlabel,key\nno,t000\nyes,t001\n```\n")
    raw = _folder(tmp_path, {"train.tsv": TRAIN, "test.tsv": TEST}, page)
    facts = inspect_competition(raw)
    assert facts.id_column == "key" and facts.submission_columns == ["label", "key"]
    assert [t.column for t in facts.targets] == ["label"] and facts.targets[0].task == "binary"
    assert any(a.startswith("metric: accuracy") for a in facts.assumptions)


def test_no_sample_an_echoed_input_with_gaps(tmp_path: Path) -> None:
    """The page's example repeats a test input after the prediction; that input has missing cells in
    test. Test lacks the predicted column, so it is not one file holding train and test."""
    page = ("Predict the label.\n\nThe file should contain a header and have the following format:\n\n"
            "```\nlabel,key,colour\nno,t000,blue\nno,t001,red\n```\n")
    test = TEST.assign(colour=["blue", "", "red"] + ["blue"] * 7)
    raw = _folder(tmp_path, {"train.csv": TRAIN, "test.csv": test}, page)
    roles = _roles(raw, ["label", "key", "colour"])
    assert roles.test.rows == "all" and roles.train.files == ["data/train.csv"]
    assert roles.echo == {"colour": "colour"} and roles.prediction_columns == ["label"]


def test_no_sample_a_labels_table_beside_one_folder_per_image(tmp_path: Path) -> None:
    """Images in one folder per id; the only table names each training folder's label, and the page
    asks for one probability per label: that table is the training answers, not the rows to predict."""
    raw = tmp_path / "raw"
    names = {"train": [f"img_{i:03d}" for i in range(12)], "test": [f"img_{i:03d}" for i in range(12, 16)]}
    for split, ids in names.items():
        for name in ids:
            (raw / "data" / split / name).mkdir(parents=True)
            Image.new("L", (4, 4), color=int(name[-2:]) * 9).save(raw / "data" / split / name / "image.png")
    pd.DataFrame({"filename": names["train"], "label": ["0", "1", "2"] * 4}).to_csv(raw / "data/labels.csv", index=False)
    (raw / "description.md").write_text(
        "Predict the digit. Scored by multi-class log loss.\n\nThe file should contain a header and have the "
        "following format:\n\n```\nfilename,0,1,2\nimg_900,0.3,0.3,0.4\n```\n")
    roles = _roles(raw, ["filename", "0", "1", "2"])
    assert roles.train.files == ["data/labels.csv"] and roles.test is None
    facts = inspect_competition(raw)
    assert facts.image is not None and facts.image.n_test_images == 4 and facts.image.ids_are_folders
    assert facts.submission_format == "per_class_proba" and facts.targets[0].column == "label"
    assert facts.targets[0].classes == ["0", "1", "2"] and facts.submission_columns == ["filename", "0", "1", "2"]


def test_a_labels_table_whose_ids_restart_like_the_samples(tmp_path: Path) -> None:
    """Folders per image numbered from 1 in train and in test: the sample's ids are also the labels
    table's, but that table labels every row with the sample's class columns: it is train's."""
    raw = tmp_path / "raw"
    for split, n in (("train", 12), ("test", 4)):
        for i in range(1, n + 1):
            (raw / "data" / split / str(i)).mkdir(parents=True)
            Image.new("L", (4, 4), color=i * 9).save(raw / "data" / split / str(i) / "image.png")
    pd.DataFrame({"filename": range(1, 13), "label": ["cat", "dog", "owl"] * 4}).to_csv(raw / "data/labels.csv", index=False)
    pd.DataFrame({"filename": range(1, 5), "cat": 0.3, "dog": 0.3, "owl": 0.4}).to_csv(raw / "data/sample_submission.csv", index=False)
    (raw / "description.md").write_text("Predict the animal. Scored by multi-class log loss.\n")
    roles = _roles(raw)
    assert roles.sample == "data/sample_submission.csv" and roles.test is None and roles.train.files == ["data/labels.csv"]
    facts = inspect_competition(raw)
    assert facts.image is not None and facts.image.n_test_images == 4 and facts.targets[0].column == "label"


def test_one_file_no_sample_classes_written_as_floats(tmp_path: Path) -> None:
    """One file, blank answers on the rows to predict, classes written as floats ("5.0") while the
    page's example names the class columns "4", "5", "6"; the id column counting 1..n holds those
    numbers too but is no label column."""
    grade = [4.0, 5.0, 6.0, None] * 10
    frame = pd.DataFrame({"id": range(1, 41), "x": [i * 0.5 for i in range(40)], "grade": grade})
    page = ("Predict the grade. Scored by multi-class log loss.\n\nThe file should contain a header and have "
            "the following format:\n\n```\nid,4,5,6\n4,0.3,0.3,0.4\n```\n")
    raw = _folder(tmp_path, {"data.parquet": frame}, page)
    roles = _roles(raw, ["id", "4", "5", "6"])
    assert roles.test.rows == "target_blank" and roles.test.target_columns == ["grade"] and len(roles.test_frame) == 10
    facts = inspect_competition(raw)
    assert facts.submission_format == "per_class_proba" and facts.targets[0].classes == ["4", "5", "6"]


@pytest.fixture(scope="module")
def variants(tmp_path_factory: pytest.TempPathFactory) -> Path:
    assert MAKE_VARIANTS.is_file(), "../shared/tools must sit beside the repository (see README)"
    out = tmp_path_factory.mktemp("variants")
    subprocess.run([sys.executable, str(MAKE_VARIANTS), str(out), "--n", "24", "--seed", "11"],
                   check=True, capture_output=True, timeout=300)
    return out


def test_generated_variants_keys_and_targets(variants: Path, tmp_path: Path) -> None:
    """Twenty-four generated competitions (file formats, layouts, names, id conventions, submission shapes):
    the key and the predicted columns match the grader's facts on every one."""
    wrong = []
    manifest = [json.loads(line) for line in (variants / "manifest.jsonl").read_text().splitlines()]
    for entry in manifest:
        folder = variants / entry["id"]
        grading = tomllib.loads((folder / "competition.toml").read_text())["grading"]
        raw = tmp_path / entry["id"]
        load_competition(folder).prepare(raw)
        facts = inspect_competition(raw)
        predicted = [c for c in facts.submission_columns if c != facts.id_column and c not in facts.echo_columns]
        expected = grading.get("target_columns") or []
        if facts.id_column != grading["id_column"] or (expected and predicted != expected):
            wrong.append(f"{entry['id']}: key {facts.id_column} predicted {predicted} vs {grading['id_column']} {expected}")
    assert not wrong, "\n".join(wrong)


def test_a_renamed_prediction_among_several_train_only_columns(tmp_path: Path) -> None:
    """The sample calls it `prediction`; train has two columns test lacks; the page says which is predicted."""
    train = TRAIN.assign(score=[float(i) for i in range(40)], error=0.5)
    page = "Predict the `score` of each item.\n\n## Evaluation\n\nSubmissions are scored on the RMSE.\n"
    raw = _folder(tmp_path, {"train.csv": train, "test.csv": TEST, "sample_submission.csv": _sample(TEST["key"], "prediction", "0")}, page)
    facts = inspect_competition(raw)
    assert [t.column for t in facts.targets] == ["score"] and facts.submission_columns == ["key", "prediction"]
    assert any(a.startswith("target: 'score'") for a in facts.assumptions)


def test_a_table_with_several_rows_per_key_is_aggregated(tmp_path: Path) -> None:
    """Past loans per customer (not every customer has one): averaged numbers, the usual word, a count."""
    keys = list(TRAIN["key"][:30]) + list(TEST["key"][:8])
    loans = pd.DataFrame({"key": [k for k in keys for _ in range(2)], "amount": [10.0, 30.0] * len(keys),
                          "kind": ["car", "car"] * len(keys)})
    raw = _folder(tmp_path, {"train.csv": TRAIN, "test.csv": TEST, "loans.csv": loans,
                             "sample_submission.csv": _sample(TEST["key"])})
    roles = _roles(raw)
    assert roles.train.joins[0].aggregate and roles.train.joins[0].count_column == "loans_rows"
    row = roles.train_frame.set_index("key").loc["k001"]
    assert float(row["amount"]) == 20.0 and row["kind"] == "car" and row["loans_rows"] == "2"
    assert roles.train_frame.set_index("key").loc["k035", "loans_rows"] == ""  # no loans: blank, not zero rows read
    assert len(roles.test_frame) == 10 and roles.test_frame["loans_rows"].tolist()[:8] == ["2"] * 8


def test_no_key_no_sample_answers_apart(tmp_path: Path) -> None:
    """X_train, y_train and X_test alike, no sample, an example keyed by row numbers: X_test is the test."""
    page = ("Predict the label.\n\nThe file should contain a header and have the following format:\n\n"
            "```\nlabel,row\nno,1\nno,2\n```\n")
    train = pd.DataFrame({"x": [i * 1.37 for i in range(40)], "colour": ["red", "blue", "green", "red"] * 10})
    test = pd.DataFrame({"x": [i * 2.11 + 0.5 for i in range(10)], "colour": ["blue", "red"] * 5})
    raw = _folder(tmp_path, {"X_train.csv": train, "y_train.csv": TRAIN[["label"]], "X_test.csv": test}, page)
    roles = _roles(raw, ["label", "row"])
    assert roles.test.files == ["data/X_test.csv"] and roles.train.beside == ["data/y_train.csv"]
    facts = inspect_competition(raw)
    assert facts.id_column == "row" and facts.test_row_id_start == 1 and [t.column for t in facts.targets] == ["label"]


def test_one_file_no_sample_one_column_per_class(tmp_path: Path) -> None:
    """One file with blank labels, no sample, an example with a probability column per class."""
    page = ("Predict the label.\n\nThe file should contain a header and have the following format:\n\n"
            "```\nkey,no,yes\nt000,0.5,0.5\nt001,0.5,0.5\n```\n")
    both = pd.concat([TRAIN, TEST.assign(label="")]).sample(frac=1, random_state=2)
    raw = _folder(tmp_path, {"everything.csv": both}, page)
    roles = _roles(raw, ["key", "no", "yes"])
    assert roles.test.rows == "target_blank" and roles.test.target_columns == ["label"]
    assert len(roles.train_frame) == 40 and len(roles.test_frame) == 10
