"""The grader: valid and invalid submissions, medal brackets, leaderboard positions, grade_file."""

from __future__ import annotations

import json
import math
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import accuracy_score, f1_score, log_loss, roc_auc_score

from agentk.core.errors import GradingError, InvalidSubmissionError
from agentk.grading import GradeReport, grade_file, grade_run, grade_submission, leaderboard_position, medal_ranks
from agentk.sources import load_competition
from agentk.sources.base import Competition, GradingFacts
from agentk.sources.demo import make_demo_competition

COMPETITIONS = Path(__file__).resolve().parents[2] / "shared" / "competitions"
TITANIC = GradingFacts(metric="accuracy", higher_is_better=True, id_column="PassengerId", target_columns=("Survived",))
SPOOKY = GradingFacts(metric="multiclass_logloss", higher_is_better=False, id_column="id", label_column="author")


@lru_cache
def _train(competition: str, columns: tuple[str, ...]) -> pd.DataFrame:
    return pd.read_csv(COMPETITIONS / competition / "data" / "train.csv", usecols=list(columns))


def _titanic_case() -> tuple[pd.DataFrame, pd.DataFrame]:
    """Answers = the last 200 titanic passengers; submission = the gender model."""
    df = _train("titanic", ("PassengerId", "Survived", "Sex")).tail(200)
    answers = df[["PassengerId", "Survived"]].reset_index(drop=True)
    submission = pd.DataFrame({"PassengerId": df["PassengerId"], "Survived": (df["Sex"] == "female").astype(int)})
    return answers, submission.reset_index(drop=True)


def _assert_invalid(report: GradeReport, fragment: str) -> None:
    assert not report.valid and report.score is None
    assert report.error is not None and "\n" not in report.error
    assert fragment in report.error, report.error


# ---------------------------------------------------------------------------------------------
# Valid submissions


def test_valid_submission_scores_the_metric() -> None:
    answers, submission = _titanic_case()
    report = grade_submission(submission, answers, TITANIC, "titanic")
    expected = accuracy_score(answers["Survived"], submission["Survived"])
    assert report.valid and report.error is None
    assert report.score == pytest.approx(expected)
    assert 0.7 < expected < 0.9  # the gender model's known accuracy band
    assert (report.competition_id, report.metric, report.higher_is_better, report.n_rows) == ("titanic", "accuracy", True, 200)


def test_row_order_and_id_spelling_do_not_matter() -> None:
    answers, submission = _titanic_case()
    baseline = grade_submission(submission, answers, TITANIC).score
    shuffled = submission.sample(frac=1, random_state=3)
    assert grade_submission(shuffled, answers, TITANIC).score == baseline
    as_text = shuffled.astype({"PassengerId": str})  # "892" == 892
    assert grade_submission(as_text, answers, TITANIC).score == baseline
    as_words = submission.assign(Survived=submission["Survived"].map({0: "0.0", 1: "1"}))
    assert grade_submission(as_words, answers, TITANIC).score == baseline


def test_perfect_and_wrong_submissions_order_correctly() -> None:
    answers, _ = _titanic_case()
    perfect = grade_submission(answers.copy(), answers, TITANIC).score
    inverted = grade_submission(answers.assign(Survived=1 - answers["Survived"]), answers, TITANIC).score
    assert perfect == 1.0 and inverted == 0.0


def test_f1_on_the_disaster_tweets() -> None:
    df = _train("nlp-getting-started", ("id", "text", "target")).tail(500)
    facts = GradingFacts(metric="f1", higher_is_better=True, id_column="id", target_columns=("target",))
    guess = df["text"].str.contains("fire|flood|storm|killed|disaster", case=False).astype(int)
    submission = pd.DataFrame({"id": df["id"], "target": guess})
    report = grade_submission(submission, df[["id", "target"]], facts)
    assert report.valid and report.score == pytest.approx(f1_score(df["target"], guess))


def test_proba_metric_with_a_target_column_reads_positive_probabilities() -> None:
    df = _train("nlp-getting-started", ("id", "text", "target")).tail(500)
    facts = GradingFacts(metric="auc", higher_is_better=True, id_column="id", target_columns=("target",))
    p = df["text"].str.count("fire|flood|storm|killed|disaster|fatal").clip(upper=3) / 4 + 0.1
    report = grade_submission(pd.DataFrame({"id": df["id"], "target": p}), df[["id", "target"]], facts)
    assert report.valid and report.score == pytest.approx(roc_auc_score(df["target"], p))


def test_regression_submission_with_rmse_log() -> None:
    df = _train("house-prices-advanced-regression-techniques", ("Id", "SalePrice", "GrLivArea"))
    facts = GradingFacts(metric="rmse_log", higher_is_better=False, id_column="Id", target_columns=("SalePrice",))
    guess = df["GrLivArea"] * 120.0
    report = grade_submission(pd.DataFrame({"Id": df["Id"], "SalePrice": guess}), df[["Id", "SalePrice"]], facts)
    expected = math.sqrt(np.mean((np.log(guess) - np.log(df["SalePrice"])) ** 2))
    assert report.valid and report.score == pytest.approx(expected)


def _spooky_case() -> tuple[pd.DataFrame, pd.DataFrame, np.ndarray]:
    df = _train("spooky-author-identification", ("id", "author")).tail(1000).reset_index(drop=True)
    classes = ["EAP", "HPL", "MWS"]
    rng = np.random.default_rng(0)
    proba = rng.dirichlet(np.ones(3), size=len(df))
    proba[np.arange(len(df)), df["author"].map({c: i for i, c in enumerate(classes)})] += 0.5
    proba /= proba.sum(axis=1, keepdims=True)
    submission = pd.DataFrame(proba, columns=classes).assign(id=df["id"])[["id", *classes]]
    return df, submission, proba


def test_label_column_submission_scores_multiclass_logloss() -> None:
    answers, submission, proba = _spooky_case()
    report = grade_submission(submission.sample(frac=1, random_state=0), answers, SPOOKY, "spooky")
    assert report.valid
    assert report.score == pytest.approx(log_loss(answers["author"], proba, labels=["EAP", "HPL", "MWS"]))
    uniform = submission.assign(EAP=1 / 3, HPL=1 / 3, MWS=1 / 3)
    assert grade_submission(uniform, answers, SPOOKY).score == pytest.approx(math.log(3))


# ---------------------------------------------------------------------------------------------
# Invalid submissions: a report, never an exception


def test_invalid_submissions_give_one_line_errors() -> None:
    answers, sub = _titanic_case()
    wrong_ids = sub.assign(PassengerId=sub["PassengerId"].where(sub.index != 0, 99999))
    _assert_invalid(grade_submission(wrong_ids, answers, TITANIC), "1 missing")
    _assert_invalid(grade_submission(sub.iloc[:-5], answers, TITANIC), "5 missing")
    _assert_invalid(grade_submission(pd.concat([sub, sub.iloc[:2]]), answers, TITANIC), "2 duplicated id")
    with_nan = sub.astype({"Survived": float})
    with_nan.loc[3, "Survived"] = np.nan
    _assert_invalid(grade_submission(with_nan, answers, TITANIC), "1 missing values")
    _assert_invalid(grade_submission(sub.drop(columns="Survived"), answers, TITANIC), "no 'Survived' column")
    _assert_invalid(grade_submission(sub.drop(columns="PassengerId"), answers, TITANIC), "no 'PassengerId' column")
    _assert_invalid(grade_submission(pd.DataFrame(), answers, TITANIC), "no 'PassengerId' column")


def test_invalid_values_for_numeric_metrics() -> None:
    df = _train("house-prices-advanced-regression-techniques", ("Id", "SalePrice"))
    facts = GradingFacts(metric="rmse", higher_is_better=False, id_column="Id", target_columns=("SalePrice",))
    text = df.assign(SalePrice=df["SalePrice"].astype(str).where(df.index != 7, "cheap"))
    _assert_invalid(grade_submission(text, df, facts), "non-numeric")
    qwk = GradingFacts(metric="quadratic_weighted_kappa", higher_is_better=True, id_column="Id", target_columns=("quality",))
    wine = _train("playground-series-s3e5", ("Id", "quality"))
    _assert_invalid(grade_submission(wine.assign(quality="good"), wine, qwk), "could not score")


def test_label_column_submission_missing_a_class_or_out_of_range() -> None:
    answers, submission, _ = _spooky_case()
    _assert_invalid(grade_submission(submission.drop(columns="HPL"), answers, SPOOKY), "no probability column")
    _assert_invalid(grade_submission(submission.assign(EAP=-0.2), answers, SPOOKY), "[0, 1]")
    _assert_invalid(grade_submission(submission.assign(MWS="high"), answers, SPOOKY), "non-numeric")


def test_grading_setup_errors_raise() -> None:
    answers, submission = _titanic_case()
    with pytest.raises(GradingError, match="unknown metric"):
        grade_submission(submission, answers, GradingFacts("hausdorff", True, "PassengerId", ("Survived",)))
    with pytest.raises(GradingError, match="higher_is_better"):
        grade_submission(submission, answers, GradingFacts("accuracy", False, "PassengerId", ("Survived",)))
    with pytest.raises(GradingError, match="answers lack"):
        grade_submission(submission, answers.drop(columns="Survived"), TITANIC)


# ---------------------------------------------------------------------------------------------
# Medals and leaderboards


@pytest.mark.parametrize(
    ("n_teams", "expected"),
    [(1, (1, 1, 1)), (5, (1, 1, 2)), (99, (9, 19, 39)), (100, (10, 20, 40)), (249, (10, 49, 99)),
     (250, (10, 50, 100)), (999, (11, 50, 100)), (1000, (12, 50, 100)), (5000, (20, 250, 500))],
)
def test_medal_ranks_at_bracket_edges(n_teams: int, expected: tuple[int, int, int]) -> None:
    assert medal_ranks(n_teams) == expected


def test_medal_ranks_rejects_empty_leaderboards() -> None:
    with pytest.raises(ValueError):
        medal_ranks(0)


def _leaderboard(scores: list[float]) -> pd.DataFrame:
    return pd.DataFrame({
        "TeamId": range(1000, 1000 + len(scores)),
        "TeamName": [f"team {i}" for i in range(len(scores))],
        "SubmissionDate": pd.date_range("2023-01-01", periods=len(scores), freq="h").astype(str),
        "Score": scores,
    })


def test_leaderboard_position_higher_is_better() -> None:
    # 20 teams: gold = rank 2, silver = rank 4, bronze = rank 8.
    board = _leaderboard([0.99 - 0.01 * i for i in range(20)]).sample(frac=1, random_state=0)
    pos = leaderboard_position(0.975, board, higher_is_better=True)
    assert (pos.rank, pos.n_teams, pos.medal) == (3, 20, "silver")
    assert pos.percentile == pytest.approx(18 / 20)
    assert (pos.gold_threshold, pos.silver_threshold, pos.bronze_threshold) == pytest.approx((0.98, 0.96, 0.92))
    tie = leaderboard_position(0.98, board, higher_is_better=True)  # ties rank with the team they equal
    assert (tie.rank, tie.medal) == (2, "gold")
    assert leaderboard_position(0.5, board, True).medal is None
    assert leaderboard_position(0.5, board, True).percentile == 0.0
    assert leaderboard_position(1.5, board, True).percentile == 1.0


def test_leaderboard_position_lower_is_better_with_lowercase_score_column() -> None:
    board = _leaderboard([0.12 + 0.01 * i for i in range(20)]).rename(columns={"Score": "score"})
    pos = leaderboard_position(0.185, board, higher_is_better=False)
    assert (pos.rank, pos.medal) == (8, "bronze")
    assert pos.bronze_threshold == pytest.approx(0.19)
    with pytest.raises(GradingError, match="no score column"):
        leaderboard_position(0.1, board.drop(columns="score"), False)


# ---------------------------------------------------------------------------------------------
# grade_file


def _competition(answers: pd.DataFrame, facts: GradingFacts | None = TITANIC) -> Competition:
    return Competition(id="titanic", source_kind="local", root=COMPETITIONS / "titanic", title="Titanic",
                       grading=facts, prepare_fn=lambda raw: None, answers_fn=lambda: answers)


def test_grade_file_with_leaderboard(tmp_path: Path) -> None:
    answers, submission = _titanic_case()
    path = tmp_path / "submission.csv"
    submission.to_csv(path, index=False)
    board_path = tmp_path / "leaderboard.csv"
    _leaderboard([0.80 - 0.005 * i for i in range(150)]).to_csv(board_path, index=False)
    report = grade_file(path, _competition(answers), board_path)
    assert report.valid and report.score == pytest.approx(grade_submission(submission, answers, TITANIC).score)
    assert report.leaderboard is not None and report.leaderboard.n_teams == 150
    assert report.leaderboard.rank == 1 + sum(0.80 - 0.005 * i > report.score for i in range(150))
    assert json.loads(json.dumps(report.to_dict()))["leaderboard"]["n_teams"] == 150


def test_grade_file_keeps_text_ids_exact(tmp_path: Path) -> None:
    df = _train("spaceship-titanic", ("PassengerId", "Transported")).tail(300)
    facts = GradingFacts("accuracy", True, "PassengerId", ("Transported",))
    path = tmp_path / "submission.csv"
    df.assign(Transported=df["Transported"].map({True: "TRUE", False: "FALSE"})).to_csv(path, index=False)
    report = grade_file(path, _competition(df, facts))
    assert report.valid and report.score == 1.0


def test_grade_file_unreadable_or_ungradable(tmp_path: Path) -> None:
    answers, submission = _titanic_case()
    with pytest.raises(InvalidSubmissionError, match="does not exist"):
        grade_file(tmp_path / "missing.csv", _competition(answers))
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    with pytest.raises(InvalidSubmissionError, match="cannot read"):
        grade_file(empty, _competition(answers))
    binary = tmp_path / "binary.csv"
    binary.write_bytes(b"\xff\xfe\x00\x81garbage\x00\x00")
    with pytest.raises(InvalidSubmissionError):
        grade_file(binary, _competition(answers))
    good = tmp_path / "good.csv"
    submission.to_csv(good, index=False)
    with pytest.raises(GradingError, match="no grading facts"):
        grade_file(good, _competition(answers, facts=None))


def test_a_runs_grade_is_placed_on_the_competitions_own_leaderboard(tmp_path: Path) -> None:
    """MLE-bench keeps a leaderboard beside each competition: a run's test score lands on it, the
    agent's view never holds it, and an unreadable one costs the place, not the score."""
    competition_dir = make_demo_competition(tmp_path / "demo")
    _leaderboard([0.99 - 0.001 * i for i in range(200)]).to_csv(competition_dir / "leaderboard.csv", index=False)
    competition = load_competition(competition_dir)
    assert competition.leaderboard_path == competition_dir / "leaderboard.csv"
    competition.prepare(tmp_path / "raw")
    assert not [p for p in (tmp_path / "raw").rglob("*") if "leaderboard" in p.name.lower()]

    answers = competition.answers()
    submission = tmp_path / "submission.csv"
    answers.to_csv(submission, index=False)  # a perfect submission: first place
    report, note = grade_run(submission, competition, finished=True)
    assert report is not None and report.score == 1.0 and note is None
    assert report.leaderboard is not None and (report.leaderboard.rank, report.leaderboard.n_teams) == (1, 200)
    assert report.leaderboard.medal == "gold"

    (competition_dir / "leaderboard.csv").write_text("TeamName,Points\nsomeone,3\n")  # no Score column
    report, note = grade_run(submission, competition, finished=True)
    assert report is not None and report.score == 1.0 and report.leaderboard is None
    assert note is not None and "not placed on leaderboard.csv" in note and "no score column" in note


def test_an_mlebench_leaderboard_in_private_is_not_taken_for_the_answers(tmp_path: Path) -> None:
    from agentk.sources.mlebench import _find_answers

    private = tmp_path / "private"
    private.mkdir()
    (private / "solution.csv").write_text("id,y\n1,0\n")
    (private / "leaderboard.csv").write_text("TeamName,Score\na,1\n")
    assert _find_answers(private) == private / "solution.csv"


def test_the_graders_own_reading_is_bounded(tmp_path: Path) -> None:
    """A submission or a leaderboard that is one enormous line is refused by the agent's bounded
    reader (one line), not handed to a parser that would hold every field of it."""
    from agentk.core.readers import MAX_RECORD_BYTES

    answers, submission = _titanic_case()
    one_line = tmp_path / "one_line.csv"
    one_line.write_bytes(b"PassengerId,Survived," + b"1," * (MAX_RECORD_BYTES // 2 + 1))
    with pytest.raises(InvalidSubmissionError, match="without a line break"):
        grade_file(one_line, _competition(answers))
    good = tmp_path / "good.csv"
    submission.to_csv(good, index=False)
    with pytest.raises(GradingError, match="cannot read leaderboard .*without a line break"):
        grade_file(good, _competition(answers), one_line)
