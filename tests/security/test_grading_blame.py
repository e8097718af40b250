"""Issue #11, item 10: grading tells answer problems from submission problems, and a run says why
its test score is missing.

Blank answers are not the submission's fault: those rows are left out of the score and counted;
answers that cannot be scored at all are "the answers are unusable: ...", never "invalid submission".
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import accuracy_score, mean_squared_error

from agentk.core.errors import GradingError
from agentk.grading import grade_run, grade_submission
from agentk.sources import load_competition
from agentk.sources.base import GradingFacts

pytestmark = pytest.mark.integration

COMPETITIONS = Path(__file__).resolve().parents[3] / "shared" / "competitions"
REPO = Path(__file__).resolve().parents[2]
TITANIC = GradingFacts(metric="accuracy", higher_is_better=True, id_column="PassengerId", target_columns=("Survived",))
SPOOKY = GradingFacts(metric="multiclass_logloss", higher_is_better=False, id_column="id", label_column="author")
HOUSE = GradingFacts(metric="rmse", higher_is_better=False, id_column="Id", target_columns=("SalePrice",))


def _titanic(n: int = 120) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Answers as the local source reads them (exact text), and the gender model's submission."""
    train = pd.read_csv(COMPETITIONS / "titanic/data/train.csv", dtype=str, keep_default_na=False).tail(n)
    answers = train[["PassengerId", "Survived"]].reset_index(drop=True)
    submission = pd.DataFrame({"PassengerId": train["PassengerId"],
                               "Survived": (train["Sex"] == "female").astype(int)}).reset_index(drop=True)
    return answers, submission


def test_blank_answers_are_left_out_and_counted() -> None:
    answers, submission = _titanic()
    holes = [3, 10, 11, 50]
    answers.loc[holes[:2], "Survived"] = ""
    answers.loc[holes[2], "Survived"] = np.nan
    answers.loc[holes[3], "Survived"] = "NaN"
    report = grade_submission(submission, answers, TITANIC, "titanic")
    assert report.valid and report.error is None
    assert report.answers_missing == len(holes)
    kept = ~answers.index.isin(holes)
    expected = accuracy_score(answers.loc[kept, "Survived"].astype(int), submission.loc[kept, "Survived"])
    assert report.score == pytest.approx(expected)


def test_blank_label_answers_with_probability_columns() -> None:
    answers = pd.DataFrame({"id": ["a", "b", "c", "d"], "author": ["EAP", "", "MWS", "HPL"]})
    submission = pd.DataFrame({"id": ["d", "c", "b", "a"], "EAP": [0.1, 0.1, 0.5, 0.8],
                               "HPL": [0.8, 0.1, 0.25, 0.1], "MWS": [0.1, 0.8, 0.25, 0.1]})
    report = grade_submission(submission, answers, SPOOKY)
    assert report.valid and report.answers_missing == 1
    assert report.score == pytest.approx(-np.mean(np.log([0.8, 0.8, 0.8])))


def test_unusable_answers_are_an_answer_problem_not_an_invalid_submission() -> None:
    answers, submission = _titanic(20)
    with pytest.raises(GradingError, match="^the answers are unusable: no row has a value in 'Survived'"):
        grade_submission(submission, answers.assign(Survived=""), TITANIC)
    prices = pd.DataFrame({"Id": ["1", "2", "3"], "SalePrice": ["100", "unknown", "300"]})
    guess = pd.DataFrame({"Id": [1, 2, 3], "SalePrice": [110.0, 190.0, 310.0]})
    with pytest.raises(GradingError, match="^the answers are unusable: column 'SalePrice' has non-numeric"):
        grade_submission(guess, prices, HOUSE)
    # The same fault in the submission is the submission's.
    report = grade_submission(guess.assign(SalePrice=["110", "x", "310"]), prices.assign(SalePrice=["100", "200", "300"]), HOUSE)
    assert not report.valid and "non-numeric" in report.error
    # A numeric answer spelled "NA" is missing, and scored without.
    report = grade_submission(guess, prices.assign(SalePrice=["100", "NA", "300"]), HOUSE)
    assert report.valid and report.answers_missing == 1
    assert report.score == pytest.approx(mean_squared_error([100, 300], [110, 310]) ** 0.5)


def test_the_submission_still_has_to_cover_the_rows_without_answers() -> None:
    answers, submission = _titanic(30)
    answers.loc[0, "Survived"] = ""
    report = grade_submission(submission.iloc[1:], answers, TITANIC)
    assert not report.valid and "1 missing" in report.error


def _local_competition(root: Path, answers: pd.DataFrame | None) -> Path:
    """A small local competition in the documented layout, from titanic's real rows."""
    train = pd.read_csv(COMPETITIONS / "titanic/data/train.csv", dtype=str, keep_default_na=False)
    seen, held = train.iloc[:300], train.iloc[300:400]
    (root / "data").mkdir(parents=True)
    shutil.copy(COMPETITIONS / "titanic/description.md", root / "description.md")
    seen.to_csv(root / "data/train.csv", index=False)
    held.drop(columns=["Survived"]).to_csv(root / "data/test.csv", index=False)
    pd.DataFrame({"PassengerId": held["PassengerId"], "Survived": 0}).to_csv(root / "data/gender_submission.csv", index=False)
    if answers is not None:
        (root / "private").mkdir()
        answers.to_csv(root / "private/answers.csv", index=False)
        (root / "competition.toml").write_text(
            '[competition]\nid = "tiny-titanic"\n\n[grading]\nmetric = "accuracy"\nhigher_is_better = true\n'
            'id_column = "PassengerId"\ntarget_columns = ["Survived"]\n')
    return root


def _held_answers(blank_every: int | None) -> pd.DataFrame:
    train = pd.read_csv(COMPETITIONS / "titanic/data/train.csv", dtype=str, keep_default_na=False)
    answers = train.iloc[300:400][["PassengerId", "Survived"]].reset_index(drop=True)
    if blank_every is not None:
        answers.loc[:: blank_every, "Survived"] = ""
    return answers


def test_a_run_result_says_why_the_test_score_is_missing(tmp_path: Path) -> None:
    folder = _local_competition(tmp_path / "c", _held_answers(blank_every=10))
    competition = load_competition(folder)
    good = tmp_path / "good.csv"
    pd.DataFrame({"PassengerId": _held_answers(None)["PassengerId"], "Survived": 1}).to_csv(good, index=False)

    report, note = grade_run(good, competition, finished=True)
    assert report is not None and report.score is not None
    assert note == "10 answer row(s) have no value and were not scored"
    assert grade_run(good, competition, finished=False) == (None, "the run did not finish")
    bad = tmp_path / "bad.csv"
    pd.read_csv(good).iloc[5:].to_csv(bad, index=False)
    report, note = grade_run(bad, competition, finished=True)
    assert note is not None and note.startswith("the submission is invalid: submission ids do not match")

    blank = load_competition(_local_competition(tmp_path / "blank", _held_answers(blank_every=1)))
    assert grade_run(good, blank, finished=True) == (
        None, "the answers are unusable: no row has a value in 'Survived'")
    unanswered = load_competition(_local_competition(tmp_path / "none", None))
    assert grade_run(good, unanswered, finished=True) == (None, "no answers available")


def test_the_run_table_says_why_the_test_score_is_missing(capsys: pytest.CaptureFixture[str]) -> None:
    from agentk.cli import _print_result
    from agentk.core.records.results import RunResult

    result = {"competition_id": "tiny", "setup": {}, "metric": "accuracy", "validation_score": 0.8,
              "test_score": None, "model": "linear", "elapsed_s": 1.0, "submission_path": "s.csv",
              "test_score_note": "the answers are unusable: no row has a value in 'Survived'"}
    _print_result(RunResult.model_validate(result))
    line = next(line for line in capsys.readouterr().out.splitlines() if "test score" in line)
    assert "the answers are unusable" in line
