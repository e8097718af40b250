"""validate_submission against real Kaggle sample submissions, broken in the usual ways."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from solve_pipeline.phases.outputs import check_against_formatter
from solve_pipeline.base.setup_modules import SetupArtifacts
from solve_pipeline.base.submission_check import validate_submission

DATA = Path(__file__).resolve().parents[2] / "shared" / "competitions"
TITANIC_SAMPLE = DATA / "titanic/data/gender_submission.csv"  # CRLF line ends, as Kaggle ships it
SPACESHIP_SAMPLE = DATA / "spaceship-titanic/data/sample_submission.csv"



@pytest.fixture
def titanic() -> pd.DataFrame:
    frame = pd.read_csv(TITANIC_SAMPLE)
    frame["Survived"] = (np.arange(len(frame)) % 3 == 0).astype(int)
    return frame


def write(frame: pd.DataFrame, path: Path) -> Path:
    frame.to_csv(path, index=False)
    return path


def test_valid_file(titanic: pd.DataFrame, tmp_path: Path) -> None:
    assert validate_submission(write(titanic, tmp_path / "s.csv"), sample_path=TITANIC_SAMPLE) == []


def test_wrong_order(titanic: pd.DataFrame, tmp_path: Path) -> None:
    swapped = titanic.copy()
    swapped.iloc[[0, 1]] = swapped.iloc[[1, 0]].to_numpy()
    problems = validate_submission(write(swapped, tmp_path / "s.csv"), sample_path=TITANIC_SAMPLE)
    assert len(problems) == 1 and "order" in problems[0] and "2 position(s)" in problems[0]
    assert "expected 892, got 893" in problems[0]


def test_wrong_column_order(titanic: pd.DataFrame, tmp_path: Path) -> None:
    problems = validate_submission(write(titanic[["Survived", "PassengerId"]], tmp_path / "s.csv"),
                                   sample_path=TITANIC_SAMPLE)
    assert any("wrong order" in p for p in problems)


def test_missing_id(titanic: pd.DataFrame, tmp_path: Path) -> None:
    problems = validate_submission(write(titanic.drop(index=5), tmp_path / "s.csv"),
                                   sample_path=TITANIC_SAMPLE)
    assert "417 row(s), expected 418" in problems
    assert any("1 expected id(s) missing: '897'" in p for p in problems)


def test_missing_value(titanic: pd.DataFrame, tmp_path: Path) -> None:
    broken = titanic.astype({"Survived": float})
    broken.loc[[3, 7], "Survived"] = np.nan
    problems = validate_submission(write(broken, tmp_path / "s.csv"), sample_path=TITANIC_SAMPLE)
    assert problems == ["column 'Survived': 2 missing value(s) (rows 3, 7)"]


def test_extra_column(titanic: pd.DataFrame, tmp_path: Path) -> None:
    problems = validate_submission(write(titanic.assign(Proba=0.5), tmp_path / "s.csv"),
                                   sample_path=TITANIC_SAMPLE)
    assert problems == ["1 unexpected column(s): 'Proba'"]


def test_non_numeric_in_numeric_column(titanic: pd.DataFrame, tmp_path: Path) -> None:
    broken = titanic.astype({"Survived": str})
    broken.loc[0, "Survived"] = "yes"
    problems = validate_submission(write(broken, tmp_path / "s.csv"), sample_path=TITANIC_SAMPLE)
    assert len(problems) == 1 and "non-numeric" in problems[0] and "'yes'" in problems[0]


def test_empty_and_unreadable_files(tmp_path: Path) -> None:
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    header_only = tmp_path / "header.csv"
    header_only.write_text("PassengerId,Survived\n")
    for path in (empty, header_only, tmp_path / "absent.csv"):
        problems = validate_submission(path, sample_path=TITANIC_SAMPLE)
        assert len(problems) == 1, problems


def test_bool_like_sample(tmp_path: Path) -> None:
    sample = pd.read_csv(SPACESHIP_SAMPLE, dtype=str)
    good = sample.assign(Transported=np.where(np.arange(len(sample)) % 2, "True", "False"))
    assert validate_submission(write(good, tmp_path / "good.csv"), sample_path=SPACESHIP_SAMPLE) == []
    numeric = sample.assign(Transported=np.arange(len(sample)) % 2)
    problems = validate_submission(write(numeric, tmp_path / "bad.csv"), sample_path=SPACESHIP_SAMPLE)
    assert len(problems) == 1 and "True/False" in problems[0]


def test_probability_layout(tmp_path: Path) -> None:
    ids = pd.read_csv(DATA / "spooky-author-identification/data/test.csv", usecols=["id"], nrows=50)
    sample = write(ids.assign(EAP=1 / 3, HPL=1 / 3, MWS=1 / 3), tmp_path / "sample.csv")
    fine = ids.assign(EAP=0.2, HPL=0.5, MWS=0.3)
    assert validate_submission(write(fine, tmp_path / "fine.csv"), sample_path=sample) == []
    logits = fine.assign(HPL=np.linspace(-1, 2, 50))
    problems = validate_submission(write(logits, tmp_path / "logits.csv"), sample_path=sample)
    assert len(problems) == 1 and "outside [0, 1]" in problems[0] and "'HPL'" in problems[0]


def test_without_sample_uses_expectations(titanic: pd.DataFrame, tmp_path: Path) -> None:
    path = write(titanic, tmp_path / "s.csv")
    ids = titanic["PassengerId"].astype(str).tolist()
    assert validate_submission(path, sample_path=None, expected_ids=ids,
                               expected_columns=["PassengerId", "Survived"]) == []
    problems = validate_submission(path, sample_path=None, expected_ids=ids[:-1] + ["9999"],
                                   expected_columns=["PassengerId", "Survived", "Extra"])
    assert any("missing 1 column(s): 'Extra'" == p for p in problems)
    assert any("unexpected id(s): '1309'" in p for p in problems)
    assert any("expected id(s) missing: '9999'" in p for p in problems)


def test_without_sample_an_echoed_input_may_be_blank(titanic: pd.DataFrame, tmp_path: Path) -> None:
    """A submission repeating a test input ("Cabin") keeps that input's missing cells; a blank
    prediction is still a problem."""
    frame = titanic.assign(Cabin=["C85", ""] * (len(titanic) // 2) + ["E46"] * (len(titanic) % 2))
    path = write(frame, tmp_path / "s.csv")
    ids, columns = titanic["PassengerId"].astype(str).tolist(), ["PassengerId", "Survived", "Cabin"]
    assert validate_submission(path, sample_path=None, expected_ids=ids, expected_columns=columns,
                               echoed=["Cabin"]) == []
    problems = validate_submission(path, sample_path=None, expected_ids=ids, expected_columns=columns)
    assert len(problems) == 1 and problems[0].startswith("column 'Cabin': 209 missing value(s)")
    broken = write(frame.astype({"Survived": float}).assign(Survived=np.nan), tmp_path / "b.csv")
    problems = validate_submission(broken, sample_path=None, expected_ids=ids, expected_columns=columns, echoed=["Cabin"])
    assert len(problems) == 1 and problems[0].startswith("column 'Survived'")


def test_the_solver_accepts_blanks_its_formatter_writes_itself(titanic: pd.DataFrame, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    """The solver compares its submission with the formatter's own output: an echoed input the
    formatter leaves blank (Cabin) is no problem there, a blank prediction is."""
    setup = tmp_path / "setup"
    setup.mkdir()
    frame = titanic.assign(Cabin=["C85", ""] * (len(titanic) // 2) + ["E46"] * (len(titanic) % 2))
    write(frame, setup / "submission_format_check.csv")
    artifacts = SetupArtifacts(workspace=tmp_path, setup_dir=setup, train_maps={}, test_maps={}, target_map=None,
                               target_map_transformed=None, targets=[], target_info={})
    check_against_formatter(artifacts, write(frame, tmp_path / "s.csv"))
    assert "submission_problems" not in capsys.readouterr().out
    check_against_formatter(artifacts, write(frame.astype({"Survived": float}).assign(Survived=np.nan), tmp_path / "b.csv"))
    assert "column 'Survived'" in capsys.readouterr().out


def test_values_in_a_zero_one_sample_are_no_probabilities_when_the_setup_says_so(tmp_path: Path) -> None:
    """Two count targets whose sample holds 0 and 1 placeholders look like class probabilities; a
    setup that knows its targets are values says so, and counts above 1 are then fine."""
    ids = pd.DataFrame({"id": [str(i) for i in range(20)]})
    sample = write(ids.assign(casual=0, registered=1), tmp_path / "sample.csv")
    counts = write(ids.assign(casual=np.arange(20) * 3.5, registered=np.arange(20) + 40), tmp_path / "counts.csv")
    assert any("outside [0, 1]" in p for p in validate_submission(counts, sample_path=sample))
    assert validate_submission(counts, sample_path=sample, probabilities=False) == []
