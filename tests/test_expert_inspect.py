"""The expert's inspection on real competitions, laid out as the agent sees them.

The agent's view is built here by copying description.md and data/ (never competition.toml or
private/); only the assertions read competition.toml, to compare the inferred facts with the truth.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pandas as pd
import pytest

from setup_pipeline.expert.description import sections, submission_header, summarise
from setup_pipeline.expert.facts import DataFacts, ExpertDeclined
from setup_pipeline.expert.inspect import inspect_competition

SHARED = Path(__file__).resolve().parents[2] / "shared" / "competitions"
DIGITS_TOOL = Path(__file__).resolve().parents[2] / "shared" / "tools" / "make_digits_competition.py"
COMPETITIONS = sorted(p.name for p in SHARED.iterdir() if (p / "competition.toml").is_file())
# These two ship no sample submission: the format is only in the description.
ONLY_TRAIN_TEST = {"spooky-author-identification", "leaf-classification"}



def _agent_view(source: Path, raw: Path, only: set[str] | None = None) -> Path:
    raw.mkdir(parents=True)
    shutil.copyfile(source / "description.md", raw / "description.md")
    if only is None:
        shutil.copytree(source / "data", raw / "data")
    else:
        (raw / "data").mkdir()
        for name in sorted(only):
            shutil.copyfile(source / "data" / name, raw / "data" / name)
    return raw


def _truth(source: Path) -> dict:
    with (source / "competition.toml").open("rb") as fh:
        return tomllib.load(fh)


@pytest.fixture(scope="session")
def views(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Path]]:
    """competition id -> (agent's raw/ folder, source folder holding the truth)."""
    base = tmp_path_factory.mktemp("views")
    out: dict[str, tuple[Path, Path]] = {}
    for cid in COMPETITIONS:
        only = {"train.csv", "test.csv"} if cid in ONLY_TRAIN_TEST else None
        out[cid] = (_agent_view(SHARED / cid, base / cid / "raw", only), SHARED / cid)
    for layout in ("folders", "csv"):
        made = base / f"made-{layout}"
        subprocess.run([sys.executable, str(DIGITS_TOOL), str(made), "--layout", layout], check=True)
        out[f"digits-{layout}"] = (_agent_view(made, base / f"digits-{layout}" / "raw"), made)
    return out


@pytest.fixture(scope="session")
def facts(views: dict[str, tuple[Path, Path]]) -> dict[str, DataFacts]:
    return {cid: inspect_competition(raw) for cid, (raw, _) in views.items()}


ALL = [*COMPETITIONS, "digits-folders", "digits-csv"]


# ---------------------------------------------------------------- facts against the truth


@pytest.mark.parametrize("cid", ALL)
def test_facts_match_grading_truth(cid: str, views: dict, facts: dict) -> None:
    truth = _truth(views[cid][1])
    grading, comp = truth["grading"], truth["competition"]
    got = facts[cid]
    assert got.metric == grading["metric"]
    assert got.metric_higher_is_better == grading["higher_is_better"]
    assert got.id_column == grading["id_column"]
    assert got.submission_columns[0] == got.id_column
    if "label_column" in grading:
        assert got.submission_format == "per_class_proba"
        assert [t.column for t in got.targets] == [grading["label_column"]]
    else:
        assert got.submission_format == "per_target"
        assert [t.column for t in got.targets] == grading["target_columns"]
        assert got.submission_columns == [grading["id_column"], *grading["target_columns"]]
    expected_task = "multiclass" if comp["task_type"] == "ordinal" else comp["task_type"]
    assert {t.task for t in got.targets} == {expected_task}
    assert set(got.input_modalities) == set(comp["input_modalities"])


@pytest.mark.parametrize("cid", ALL)
def test_feature_columns_are_in_train_and_test(cid: str, views: dict, facts: dict) -> None:
    got, raw = facts[cid], views[cid][0]
    if got.train_file is None:
        assert got.tabular_columns == got.text_columns == []
        return
    train = pd.read_csv(raw / got.train_file, nrows=5)
    test = pd.read_csv(raw / got.test_file, nrows=5)
    features = got.tabular_columns + got.text_columns
    assert set(features) <= set(train.columns) & set(test.columns)
    # The id is a feature only when it holds timestamps (bike sharing's hourly datetime).
    assert got.id_column not in features or any("timestamps" in note for note in got.notes)
    assert not {t.column for t in got.targets} & set(features)
    assert set(features) | set(got.dropped_columns) | {got.train_id_column, got.test_id_column} \
        | {t.column for t in got.targets} >= set(train.columns) | set(test.columns)


def test_titanic(facts: dict) -> None:
    got = facts["titanic"]
    assert got.sample_submission == "data/gender_submission.csv"
    assert got.targets[0].classes == ["0", "1"]
    # Names and tickets are short strings: tabular, not free text.
    assert {"Name", "Ticket", "Sex"} <= set(got.tabular_columns) and got.text_columns == []


def test_spaceship_booleans_stay_as_written(facts: dict) -> None:
    target = facts["spaceship-titanic"].targets[0]
    assert target.classes == ["FALSE", "TRUE"]
    assert target.sample_values == ["False"]  # the formatter must render labels the sample's way
    assert {"CryoSleep", "VIP"} <= set(facts["spaceship-titanic"].tabular_columns)


def test_nlp_text_and_tabular(facts: dict) -> None:
    got = facts["nlp-getting-started"]
    assert got.text_columns == ["text"]
    assert set(got.tabular_columns) == {"keyword", "location"}
    assert got.metric == "f1" and got.targets[0].classes == ["0", "1"]


def test_spooky_classes_from_description(facts: dict) -> None:
    got = facts["spooky-author-identification"]
    assert got.sample_submission is None
    assert got.input_modalities == ["text"] and got.text_columns == ["text"] and got.tabular_columns == []
    assert got.targets[0].classes == ["EAP", "HPL", "MWS"]
    assert got.submission_columns == ["id", "EAP", "HPL", "MWS"]
    assert got.metric == "multiclass_logloss"


def test_leaf_classes_expanded_from_ellipsis(views: dict, facts: dict) -> None:
    got = facts["leaf-classification"]
    assert got.sample_submission is None
    classes = got.targets[0].classes
    species = pd.read_csv(views["leaf-classification"][0] / "data/train.csv")["species"]
    assert len(classes) == 99 and classes == sorted(species.unique())
    assert classes[:3] == ["Acer_Capillipes", "Acer_Circinatum", "Acer_Mono"]
    assert got.submission_columns == ["id", *classes] and "..." not in got.submission_columns
    assert got.metric == "multiclass_logloss"  # plain "logarithmic loss" upgraded for 99 classes
    assert got.image is None and len(got.tabular_columns) == 192


def test_bike_drops_train_only_columns(facts: dict) -> None:
    got = facts["bike-sharing-demand"]
    assert got.sample_submission == "data/sampleSubmission.csv"
    assert set(got.dropped_columns) == {"casual", "registered"}
    assert all("not in test" in why for why in got.dropped_columns.values())
    assert got.targets[0].task == "regression" and got.targets[0].classes is None
    assert got.tabular_columns[0] == "datetime"  # the timestamp id feeds the hour of day


def test_numeric_ids_are_not_features(facts: dict) -> None:
    for cid in ("titanic", "house-prices-advanced-regression-techniques", "playground-series-s3e5"):
        assert facts[cid].id_column not in facts[cid].tabular_columns


def test_ordinal_with_kappa_is_multiclass(facts: dict) -> None:
    target = facts["playground-series-s3e5"].targets[0]
    assert target.task == "multiclass" and target.classes == ["3", "4", "5", "6", "7", "8"]


def test_house_prices_regression(facts: dict) -> None:
    got = facts["house-prices-advanced-regression-techniques"]
    assert got.metric == "rmse_log" and got.targets[0].task == "regression"
    assert len(got.tabular_columns) == 79


def test_digits_class_folders(views: dict, facts: dict) -> None:
    got, raw = facts["digits-folders"], views["digits-folders"][0]
    assert got.train_file is None and got.test_file is None
    assert got.train_id_column is None and got.test_id_column is None
    layout = got.image
    assert layout is not None and layout.kind == "class_folders"
    assert (layout.train_dir, layout.test_dir, layout.extension) == ("data/train", "data/test", ".png")
    assert not layout.ids_include_extension
    assert got.targets[0].classes == [str(i) for i in range(10)]
    # Ids are the test image file stems, exactly the sample's ids.
    stems = {p.stem for p in (raw / layout.test_dir).iterdir()}
    sample = pd.read_csv(raw / got.sample_submission, dtype=str)
    assert stems == set(sample[got.id_column]) and layout.n_test_images == len(stems)


def test_digits_id_files(facts: dict) -> None:
    got = facts["digits-csv"]
    layout = got.image
    assert layout is not None and layout.kind == "id_files"
    assert layout.image_dir == "data/images" and layout.train_dir is None and layout.test_dir is None
    assert (got.train_id_column, got.test_id_column) == ("image_id", "image_id")
    assert got.input_modalities == ["image"] and got.tabular_columns == []


# ---------------------------------------------------------------- variations of real layouts


def _copy_raw(views: dict, cid: str, dst: Path) -> Path:
    shutil.copytree(views[cid][0], dst)
    return dst


def test_ids_with_extension_and_split_image_folders(views: dict, tmp_path: Path) -> None:
    raw = _copy_raw(views, "digits-csv", tmp_path / "raw")
    data = raw / "data"
    test_ids = set(pd.read_csv(data / "test.csv")["image_id"])
    (data / "test_images").mkdir()
    for name in test_ids:
        (data / "images" / f"{name}.png").rename(data / "test_images" / f"{name}.png")
    for name in ("train.csv", "test.csv", "sample_submission.csv"):
        frame = pd.read_csv(data / name, dtype=str)
        frame["image_id"] = frame["image_id"] + ".png"
        frame.to_csv(data / name, index=False)
    layout = inspect_competition(raw).image
    assert layout is not None and layout.kind == "id_files" and layout.ids_include_extension
    assert (layout.train_dir, layout.test_dir, layout.image_dir) == ("data/images", "data/test_images", None)


def test_image_path_column(views: dict, tmp_path: Path) -> None:
    raw = _copy_raw(views, "digits-csv", tmp_path / "raw")
    for name in ("train.csv", "test.csv"):
        frame = pd.read_csv(raw / "data" / name, dtype=str)
        frame["file"] = "images/" + frame["image_id"] + ".png"
        frame.to_csv(raw / "data" / name, index=False)
    got = inspect_competition(raw)
    assert got.image is not None and got.image.path_column == "file" and got.image.path_base == "data"
    assert "file" in got.dropped_columns and got.tabular_columns == []


def test_class_folders_with_probability_columns(views: dict, tmp_path: Path) -> None:
    raw = _copy_raw(views, "digits-folders", tmp_path / "raw")
    sample = pd.read_csv(raw / "data/sample_submission.csv", dtype=str)[["image_id"]]
    for digit in (7, 3, 0, 1, 2, 4, 5, 6, 8, 9):  # an unsorted order the facts must keep
        sample[str(digit)] = "0.1"
    sample.to_csv(raw / "data/sample_submission.csv", index=False)
    (raw / "description.md").write_text("# Digits\n\n## Evaluation\nScored by multi-class log loss.\n")
    got = inspect_competition(raw)
    assert got.submission_format == "per_class_proba" and got.metric == "multiclass_logloss"
    assert got.targets[0].classes == ["7", "3", "0", "1", "2", "4", "5", "6", "8", "9"]


def test_class_folders_without_a_sample_take_the_described_columns(views: dict, tmp_path: Path) -> None:
    """No sample file: labels from the folder names, the submission's digit-named columns from the page."""
    raw = _copy_raw(views, "digits-folders", tmp_path / "raw")
    (raw / "data/sample_submission.csv").unlink()
    classes = [str(i) for i in range(10)]
    (raw / "description.md").write_text(
        "# Digits\n\n## Submission Format\n\nOne probability per class. The file should contain a header "
        f"and have the following format:\n\n```\nimage_id,{','.join(classes)}\n000123,{','.join(['0.1'] * 10)}\n"
        "...\n```\n\nScored with categorical cross-entropy.\n")
    got = inspect_competition(raw)
    assert got.sample_submission is None and got.image is not None and got.image.kind == "class_folders"
    assert got.submission_format == "per_class_proba" and got.submission_columns == ["image_id", *classes]
    assert got.targets[0].classes == classes and got.metric == "multiclass_logloss"


@pytest.mark.parametrize("scoring,columns", [("multi-class log loss", ["id", *map(str, range(10))]),
                                              ("accuracy", ["id", "label"])])
def test_class_folders_with_no_format_anywhere(views: dict, tmp_path: Path, scoring: str, columns: list[str]) -> None:
    """Neither a sample nor an example: the id is the file stem; the metric decides probabilities or labels."""
    raw = _copy_raw(views, "digits-folders", tmp_path / "raw")
    (raw / "data/sample_submission.csv").unlink()
    (raw / "description.md").write_text(f"# Digits\n\n## Evaluation\nScored by {scoring}.\n")
    got = inspect_competition(raw)
    assert got.submission_columns == columns and got.id_column == "id"
    assert got.submission_format == ("per_class_proba" if len(columns) > 2 else "per_target")
    assert got.targets[0].classes == [str(i) for i in range(10)] and got.image is not None
    assert any(a.startswith("submission: no sample nor example") for a in got.assumptions)


def test_spooky_sample_wins_over_description(views: dict, tmp_path: Path) -> None:
    raw = _copy_raw(views, "spooky-author-identification", tmp_path / "raw")
    test = pd.read_csv(raw / "data/test.csv")
    pd.DataFrame({"id": test["id"], "MWS": 0.3, "EAP": 0.4, "HPL": 0.3}).to_csv(
        raw / "data/sample_submission.csv", index=False)
    got = inspect_competition(raw)
    assert got.targets[0].classes == ["MWS", "EAP", "HPL"]
    assert any("differs" in note for note in got.notes)


def test_nested_renamed_files(views: dict, tmp_path: Path) -> None:
    """Other file names, a nested folder and a non-default sample name."""
    raw = _copy_raw(views, "titanic", tmp_path / "raw")
    nested = raw / "data" / "titanic-files"
    nested.mkdir()
    (raw / "data/train.csv").rename(nested / "train_passengers.csv")
    (raw / "data/test.csv").rename(nested / "test_passengers.csv")
    (raw / "data/gender_submission.csv").rename(raw / "data/my_submission_example.csv")
    got = inspect_competition(raw)
    assert got.train_file == "data/titanic-files/train_passengers.csv"
    assert got.sample_submission == "data/my_submission_example.csv"
    assert [t.column for t in got.targets] == ["Survived"]


def test_no_sample_no_header_single_train_only_column(views: dict, tmp_path: Path) -> None:
    raw = _copy_raw(views, "titanic", tmp_path / "raw")
    (raw / "data/gender_submission.csv").unlink()
    (raw / "description.md").write_text("# T\n\n## Evaluation\nScored by accuracy.\n")
    got = inspect_competition(raw)
    assert [t.column for t in got.targets] == ["Survived"] and got.id_column == "PassengerId"
    assert any("missing from test" in note for note in got.notes)


def test_submission_names_differ_from_train(views: dict, tmp_path: Path) -> None:
    raw = _copy_raw(views, "titanic", tmp_path / "raw")
    sample = pd.read_csv(raw / "data/gender_submission.csv", dtype=str)
    sample.columns = ["passengerid", "survived"]  # case differs from train and test
    sample.to_csv(raw / "data/gender_submission.csv", index=False)
    got = inspect_competition(raw)
    assert (got.id_column, got.train_id_column, got.test_id_column) == ("passengerid", "PassengerId", "PassengerId")
    assert [t.column for t in got.targets] == ["Survived"] and got.submission_columns == ["passengerid", "survived"]
    sample.columns = ["PassengerId", "prediction"]  # another name for the one train-only column
    sample.to_csv(raw / "data/gender_submission.csv", index=False)
    got = inspect_competition(raw)
    assert [t.column for t in got.targets] == ["Survived"] and got.submission_columns == ["PassengerId", "prediction"]
    assert got.targets[0].task == "binary"


def test_class_columns_named_as_whole_numbers_written_as_floats(tmp_path: Path) -> None:
    """Train writes its whole-number classes as floats (a column with gaps saved by pandas: "2.0"),
    the sample names one probability column per class "1", "2", "3": they are the same classes."""
    raw = tmp_path / "raw"
    (raw / "data").mkdir(parents=True)
    labels = ["1.0", "2.0", "3.0", "2.0"] * 6
    pd.DataFrame({"key": [f"k{i}" for i in range(24)], "x": range(24), "grade": labels}).to_csv(raw / "data/train.csv", index=False)
    pd.DataFrame({"key": ["t0", "t1", "t2"], "x": [3, 5, 7]}).to_csv(raw / "data/test.csv", index=False)
    pd.DataFrame({"key": ["t0", "t1", "t2"], "1": 0.3, "2": 0.4, "3": 0.3}).to_csv(raw / "data/sample_submission.csv", index=False)
    (raw / "description.md").write_text("# Grades\n\nPredict the grade. Scored by multi-class log loss.\n")
    got = inspect_competition(raw)
    assert got.submission_format == "per_class_proba" and got.submission_columns == ["key", "1", "2", "3"]
    assert got.targets[0].column == "grade" and got.targets[0].classes == ["1", "2", "3"]
    assert not any("without a submission column" in note for note in got.notes)


def test_submission_id_named_differently_from_test(views: dict, tmp_path: Path) -> None:
    raw = _copy_raw(views, "nlp-getting-started", tmp_path / "raw")
    sample = pd.read_csv(raw / "data/sample_submission.csv", dtype=str)
    sample.columns = ["tweet", "target"]
    sample.to_csv(raw / "data/sample_submission.csv", index=False)
    got = inspect_competition(raw)
    assert (got.id_column, got.test_id_column, got.train_id_column) == ("tweet", "id", "id")
    assert got.submission_columns == ["tweet", "target"] and "id" not in got.tabular_columns


# ---------------------------------------------------------------- declines


def test_a_page_without_a_metric_gets_an_assumed_one(views: dict, tmp_path: Path) -> None:
    raw = _copy_raw(views, "titanic", tmp_path / "raw")
    (raw / "description.md").write_text("# Passengers\n\nPredict who survived.\n")
    facts = inspect_competition(raw)
    assert facts.metric == "accuracy"  # 0/1 labels in the sample: labels are scored
    assert any(a.startswith("metric: accuracy") for a in facts.assumptions)


def test_a_metric_the_registry_cannot_compute_is_assumed_from_the_data_and_said(views: dict, tmp_path: Path) -> None:
    raw = _copy_raw(views, "titanic", tmp_path / "raw")
    (raw / "description.md").write_text(
        "# Passengers\n\n## Evaluation\n\nSubmissions are evaluated on the weighted AUC: the area of the ROC "
        "curve below a true positive rate of 0.4 is weighted 2X.\n")
    facts = inspect_competition(raw)
    assert facts.metric == "accuracy"  # not the page's cousin, auc: 0/1 labels in the sample are scored
    assert any(a.startswith("metric: accuracy — the page's metric (weighted AUC) is not one I can compute")
               for a in facts.assumptions), facts.assumptions


def test_a_metric_that_contradicts_the_target_is_replaced(views: dict, tmp_path: Path) -> None:
    raw = _copy_raw(views, "house-prices-advanced-regression-techniques", tmp_path / "raw")
    (raw / "description.md").write_text("# Houses\n\n## Evaluation\n\nSubmissions are scored by accuracy.\n")
    facts = inspect_competition(raw)
    assert facts.metric == "rmse" and facts.targets[0].task == "regression"
    assert any("does not fit" in a for a in facts.assumptions)


def test_decline_without_train(views: dict, tmp_path: Path) -> None:
    raw = _copy_raw(views, "titanic", tmp_path / "raw")
    (raw / "data/train.csv").unlink()
    with pytest.raises(ExpertDeclined, match="no training data"):
        inspect_competition(raw)


def test_decline_readme_only(views: dict, tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    (raw / "data").mkdir(parents=True)
    shutil.copyfile(views["titanic"][0] / "description.md", raw / "description.md")
    (raw / "data/README.md").write_text("The data will be published later.\n")
    with pytest.raises(ExpertDeclined) as info:
        inspect_competition(raw)
    assert "\n" not in info.value.reason and info.value.reason == str(info.value)


def test_several_train_only_columns_the_page_names_the_target(views: dict, tmp_path: Path) -> None:
    """No sample and no example: of casual, registered and count, the page asks for the count."""
    raw = _copy_raw(views, "bike-sharing-demand", tmp_path / "raw")
    (raw / "data/sampleSubmission.csv").unlink()
    text = (raw / "description.md").read_text()
    (raw / "description.md").write_text(text.split("### Submission format")[0])
    facts = inspect_competition(raw)
    assert [t.column for t in facts.targets] == ["count"]
    assert any(a.startswith("target: 'count'") for a in facts.assumptions)


# ---------------------------------------------------------------- description reading


def _description(cid: str) -> str:
    return (SHARED / cid / "description.md").read_text()


def test_sections_nest_and_lower_case() -> None:
    parts = sections(_description("spooky-author-identification"))
    assert "submission file" in parts and "## Evaluation" in parts["overview"]
    assert "id,EAP,HPL,MWS" in parts["evaluation"]
    assert parts["data fields"].startswith("- **id**")


@pytest.mark.parametrize("cid", COMPETITIONS)
def test_submission_header_matches_truth(cid: str) -> None:
    header = submission_header(_description(cid))
    grading = _truth(SHARED / cid)["grading"]
    assert header is not None and header[0] == grading["id_column"]
    if "target_columns" in grading:
        assert header[1:] == grading["target_columns"]


def test_submission_header_unfenced_with_ellipsis() -> None:
    header = submission_header(_description("leaf-classification"))
    assert header == ["id", "Acer_Capillipes", "Acer_Circinatum", "Acer_Mono", "..."]


def test_submission_header_with_class_numbers() -> None:
    page = "## Submission\n\nThe file should have the following format:\n\n```\nimage_id,0,1,2\nx7,0.2,0.3,0.5\n```\n"
    assert submission_header(page) == ["image_id", "0", "1", "2"]
    # A data row is no header: values repeat, or the first cell is a number.
    assert submission_header(page.replace("image_id,0,1,2\n", "")) is None
    assert submission_header(page.replace("image_id,0,1,2", "x1,0,0,1").replace("x7,0.2,0.3,0.5\n", "")) is None


def test_submission_header_absent() -> None:
    assert submission_header("# X\n\n## Data\n```\na,b\n1,2\n```\n") is None


def test_summary_is_noise_free() -> None:
    text = _description("spooky-author-identification")
    summary = summarise(text)
    assert len(summary) <= 4000
    for kept in ("predict the author", "multi-class logarithmic loss", "id,EAP,HPL,MWS", "**author**", r"\frac{1}{N}"):
        assert kept in summary
    for dropped in ("Total prize pool", "Timeline", "Citation", "http", "](", "Eligibility"):
        assert dropped not in summary


def test_summary_drops_images_links_and_html() -> None:
    summary = summarise(_description("spaceship-titanic"))
    assert "![" not in summary and "unsplash" not in summary.lower()
    assert "classification accuracy" in summary  # link text kept, URL gone
    assert "Frequently Asked" not in summary and "PassengerId,Transported" in summary
    assert summarise("<p>Hello <b>world</b></p>\n\n## Evaluation\nAUC.") .count("<") == 0


def test_a_noise_word_in_the_page_title_keeps_the_page() -> None:
    page = ("# Dogs vs. Cats Redux: Kernels Edition\n\nTell dogs from cats\n\n## Description\n\nA rematch of the "
            "classic, with deep learning.\n\n## Evaluation\n\nSubmissions are scored on the log loss.\n\n"
            "### Submission File\n\n```\nid,label\n1,0.5\n```\n\n## Prizes\n\nKudos.\n")
    summary = summarise(page)
    for kept in ("A rematch", "scored on the log loss", "id,label"):
        assert kept in summary
    assert "Kudos" not in summary  # a noise section below the title is still noise


def test_summary_respects_budget() -> None:
    short = summarise(_description("spaceship-titanic"), max_chars=800)
    assert len(short) <= 800 and "## Evaluation" in short
