"""The grader: scores a submission against held-out answers and places it on a Kaggle leaderboard.

Image-output metrics (masks, boxes: `Metric.spatial`) score an id's rows together as one image,
so there ids may repeat on both sides (one row per object) and a blank cell is an empty mask.

Problems with the submission itself give an invalid `GradeReport` (never an exception), as in
MLE-bench; problems with the grading setup (unknown metric, answers lacking columns) raise
`GradingError`, because no submission could fix them. Answer rows without a value are not the
submission's fault: they are left out of the score and counted (`answers_missing`); answers that
cannot be scored at all raise `GradingError` starting "the answers are unusable:".
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from agentk.core.errors import GradingError, InvalidSubmissionError, SourceError
from agentk.core.readers import UnreadableTable, numbers_from_text, read_csv_text
from agentk.core.metrics import (
    Direction,
    Metric,
    UnknownMetricError,
    aligned_groups,
    get_metric,
    normalise_ids,
    normalise_labels,
    score_class_probabilities,
    scored_columns,
    score_positive_probability,
)
from agentk.core.metrics.scaled_errors import context_of
from agentk.sources.base import Competition, GradingFacts


@dataclass(frozen=True)
class LeaderboardPosition:
    rank: int  # 1 + number of teams strictly better
    n_teams: int
    percentile: float  # fraction of teams strictly worse than us
    medal: Literal["gold", "silver", "bronze"] | None
    gold_threshold: float
    silver_threshold: float
    bronze_threshold: float


@dataclass(frozen=True)
class GradeReport:
    competition_id: str
    metric: str
    higher_is_better: bool
    score: float | None
    valid: bool
    error: str | None
    n_rows: int
    leaderboard: LeaderboardPosition | None = None
    answers_missing: int = 0  # answer rows with no value, left out of the score
    columns_skipped: int = 0  # label columns whose answers hold one class: nothing to rank (AUC)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


class _Invalid(Exception):
    """Internal: the submission is malformed; the message becomes GradeReport.error."""


ANSWERS_UNUSABLE = "the answers are unusable"


def _unusable(reason: str) -> GradingError:
    return GradingError(f"{ANSWERS_UNUSABLE}: {reason}")


def _examples(values: set[str] | list[str], limit: int = 3) -> str:
    return ", ".join(repr(v) for v in sorted(values)[:limit])


def _metric_for(facts: GradingFacts) -> Metric:
    try:
        metric = get_metric(facts.metric)
    except UnknownMetricError as exc:
        raise GradingError(str(exc)) from None
    if metric.higher_is_better != facts.higher_is_better:
        raise GradingError(
            f"grading facts say higher_is_better={facts.higher_is_better} but {metric.name} "
            f"has higher_is_better={metric.higher_is_better}"
        )
    if facts.label_column is None and not facts.target_columns:
        raise GradingError("grading facts name neither target_columns nor a label_column")
    if facts.label_column is not None and metric.kind == "value":
        raise GradingError(f"{metric.name} is a regression metric but the facts name a label column")
    if facts.label_column is not None and metric.spatial:
        raise GradingError(f"{metric.name} scores {metric.kind} strings per row but the facts name a label column")
    return metric


def _answer_keys(answers: pd.DataFrame, facts: GradingFacts, repeated_ids: bool) -> np.ndarray:
    needed = [facts.id_column, *facts.target_columns] + ([facts.label_column] if facts.label_column else [])
    missing = [c for c in needed if c not in answers.columns]
    if missing:
        raise _unusable(f"answers lack column(s) {', '.join(missing)}")
    try:
        keys = normalise_ids(answers[facts.id_column])
    except ValueError as exc:
        raise _unusable(f"column {facts.id_column!r}: {exc}") from None
    if not repeated_ids and not _is_unique(keys):
        raise _unusable("answers have duplicated ids")
    return keys


# Answers are read as the exact text in the file, so a missing value is an empty cell or NaN
# spelled out; a numeric answer spelled like pandas' own missing markers ("NA", "null") is missing
# too, while a label of that spelling may be a real class name and stays.
_NUMERIC_MISSING = {"", "nan", "na", "n/a", "null", "none", "<na>", "#n/a"}


def _blank(values: pd.Series, numeric: bool) -> np.ndarray:
    text = values.astype(str).str.strip().str.lower()
    missing = text.isin(_NUMERIC_MISSING) if numeric else text.isin({"", "nan"})
    return (values.isna() | missing).to_numpy()


def _answered_rows(answers: pd.DataFrame, facts: GradingFacts, metric: Metric) -> np.ndarray:
    """Which answer rows hold a value to score against; answers no submission could be scored
    against raise GradingError. Ranking answers may be blank (the row expects no label), and so
    may image outputs (an empty mask, no boxes)."""
    columns = [*facts.target_columns] + ([facts.label_column] if facts.label_column else [])
    keep = np.ones(len(answers), dtype=bool)
    if metric.spatial:
        return keep
    if metric.kind != "ranking":
        for column in columns:
            keep &= ~_blank(answers[column], numeric=metric.kind == "value")
    if len(answers) and not keep.any():
        raise _unusable(f"no row has a value in {', '.join(repr(c) for c in columns)}")
    for column in columns if metric.kind != "ranking" else []:
        values = answers.loc[keep, column]
        if metric.kind == "value":
            numbers = numbers_from_text(values)
            if numbers.isna().any() or not np.isfinite(numbers.to_numpy(float)).all():
                raise _unusable(f"column {column!r} has non-numeric values, e.g. "
                                f"{_examples(set(map(str, values[numbers.isna()])) or {'inf'})}")
            continue
        try:
            labels = set(normalise_labels(values.to_numpy()))
        except ValueError as exc:
            raise _unusable(f"column {column!r}: {exc}") from None
        if metric.kind == "proba" and column != facts.label_column and not (
                labels <= {"0", "1"} or labels <= {"false", "true"}):
            raise _unusable(f"column {column!r} should hold 0/1 labels for {metric.name}, "
                            f"found {_examples(labels)}")
    return keep


def _arrow_text(keys: np.ndarray) -> pa.Array:
    return pa.array(keys, type=pa.large_string(), from_pandas=True)


def _is_unique(keys: np.ndarray) -> bool:
    """Normalised ids (text) hashed by Arrow's unique: millions in a second (count_distinct: 4x as long)."""
    return len(pc.unique(_arrow_text(keys))) == len(keys)


def _positions(keys: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """Where each of `wanted` sits among the unique `keys`; -1 where it is absent."""
    found = pc.index_in(_arrow_text(wanted), value_set=_arrow_text(keys))
    return pc.fill_null(found, -1).to_numpy(zero_copy_only=False).astype(np.int64)


def _aligned(submission: pd.DataFrame, answer_keys: np.ndarray, id_column: str) -> pd.DataFrame:
    """The submission with its rows in the answers' order (row order in the file does not matter)."""
    sub, keys = _keyed(submission, answer_keys, id_column, repeated_ids=False)
    return (sub if keys is answer_keys else sub.iloc[_positions(keys, answer_keys)]).reset_index(drop=True)


def _keyed(submission: pd.DataFrame, answer_keys: np.ndarray, id_column: str,
           repeated_ids: bool) -> tuple[pd.DataFrame, np.ndarray]:
    """The submission (column names stripped) and its normalised ids, which must be the answers'."""
    sub = submission.copy()
    sub.columns = [str(c).strip() for c in sub.columns]
    if sub.columns.duplicated().any():
        raise _Invalid(f"duplicated column(s): {_examples(set(sub.columns[sub.columns.duplicated()]))}")
    if id_column not in sub.columns:
        raise _Invalid(f"submission has no {id_column!r} column (columns: {_examples(list(sub.columns), 6)})")
    no_id = sub[id_column].isna() | (sub[id_column].astype(str).str.strip() == "")
    if no_id.any():
        raise _Invalid(f"{int(no_id.sum())} rows have no {id_column!r}")
    keys = normalise_ids(sub[id_column])
    if len(keys) == len(answer_keys) and np.array_equal(keys, answer_keys):  # in order (a sample's copy): no hashing
        return sub, answer_keys  # the very answers' keys say so to _aligned; found unique in _answer_keys
    unique = _is_unique(keys)
    dupes = set() if repeated_ids or unique else set(keys[pd.Series(keys).duplicated().to_numpy()])
    if dupes:
        raise _Invalid(f"{len(dupes)} duplicated id(s), e.g. {_examples(dupes)}")
    # A per-pixel file holds millions of ids, nearly always the answers' own: Arrow hashes them.
    if unique and len(keys) == len(answer_keys) and (_positions(keys, answer_keys) >= 0).all():
        return sub, keys
    seen, expected = set(keys), set(answer_keys)
    if seen != expected:
        missing, extra = expected - seen, seen - expected
        parts = [f"{len(missing)} missing (e.g. {_examples(missing)})"] if missing else []
        parts += [f"{len(extra)} unexpected (e.g. {_examples(extra)})"] if extra else []
        raise _Invalid(f"submission ids do not match the answers: {'; '.join(parts)}")
    return sub, keys


def _column(sub: pd.DataFrame, column: str, numeric: bool, blanks: bool = False) -> pd.Series:
    if column not in sub.columns:
        raise _Invalid(f"submission has no {column!r} column")
    values = sub[column]
    if blanks:
        return values.fillna("")
    # A blank cell is missing; any other text ("None", "NA") is a word the metric judges.
    missing = values.isna() | (values.astype(str).str.strip() == "")
    if missing.any():
        raise _Invalid(f"column {column!r} has {int(missing.sum())} missing values")
    if not numeric:
        return values
    numbers = numbers_from_text(values)
    if numbers.isna().any() or not np.isfinite(numbers.to_numpy(float)).all():
        bad = set(map(str, values[numbers.isna()]))
        raise _Invalid(f"column {column!r} has non-numeric values, e.g. {_examples(bad)}")
    return numbers.astype(float)


def _score_targets(metric: Metric, sub: pd.DataFrame, answers: pd.DataFrame, facts: GradingFacts,
                   columns: list[str]) -> float:
    if metric.name == "lrap" and len(facts.target_columns) > 1:
        # One score per label column (Freesound's tagging): the row's labels ranked by them together.
        columns = list(facts.target_columns)
        scores = np.column_stack([_column(sub, c, numeric=True).to_numpy() for c in columns])
        truth = np.column_stack([numbers_from_text(answers[c].astype(str)).to_numpy() for c in columns])
        if np.isnan(truth).any():
            raise _unusable(f"label columns {', '.join(columns[:3])}... should hold 0/1 in every row for lrap")
        return metric.fn(truth, scores)
    scores = []
    for column in columns:
        # A ranking row may be blank: the submission predicts no label for it.
        predicted = _column(sub, column, numeric=metric.kind in ("value", "proba"), blanks=metric.kind == "ranking")
        truth = answers[column].to_numpy()
        if metric.kind == "proba":
            # A single column per target holds P(positive class) (Kaggle's binary AUC/log-loss format).
            scores.append(score_positive_probability(metric.name, truth, predicted.to_numpy()))
        elif metric.kind == "value":  # a scaled error reads each series' history where the answers carry it
            context = context_of(answers, column) if metric.per_series else {}
            scores.append(metric.fn(truth, predicted.to_numpy(), **context))
        else:
            scores.append(metric.fn(truth, predicted.to_numpy(dtype=object)))
    return float(np.mean(scores))


def _score_images(metric: Metric, submission: pd.DataFrame, answers: pd.DataFrame, answer_keys: np.ndarray,
                  facts: GradingFacts) -> float:
    """Image outputs: each id's rows (one per object, or one per image) scored as one image."""
    sub, keys = _keyed(submission, answer_keys, facts.id_column, repeated_ids=True)
    scores = []
    for column in facts.target_columns:
        predicted = _column(sub, column, numeric=False, blanks=True).to_numpy(dtype=object)
        truth, groups = aligned_groups(answer_keys, answers[column].to_numpy(dtype=object), keys, predicted)
        scores.append(metric.fn(truth, groups))
    return float(np.mean(scores))


def _score_label_column(metric: Metric, sub: pd.DataFrame, answers: pd.DataFrame, facts: GradingFacts) -> float:
    assert facts.label_column is not None
    classes = [c for c in sub.columns if c != facts.id_column]
    truth = answers[facts.label_column].to_numpy()
    try:
        true_labels = set(normalise_labels(truth))
    except ValueError as exc:
        raise _unusable(f"column {facts.label_column!r}: {exc}") from None
    try:
        missing = true_labels - set(normalise_labels(classes))
    except ValueError as exc:
        raise _Invalid(f"class columns: {exc}") from None
    if missing:
        raise _Invalid(f"submission has no probability column for {len(missing)} class(es), e.g. {_examples(missing)}")
    proba = np.column_stack([_column(sub, c, numeric=True).to_numpy() for c in classes])
    if (proba < -1e-9).any() or (proba > 1 + 1e-9).any():
        raise _Invalid("class probabilities must lie in [0, 1]")
    return score_class_probabilities(metric.name, truth, proba, classes)


def grade_submission(
    submission: pd.DataFrame, answers: pd.DataFrame, facts: GradingFacts, competition_id: str = ""
) -> GradeReport:
    """Score a submission; malformed submissions give valid=False with a one-line error.

    The submission must still cover every answer id; rows whose answer has no value are then
    left out of the score (counted in `answers_missing`).
    """
    metric = _metric_for(facts)
    answer_keys = _answer_keys(answers, facts, repeated_ids=metric.spatial)
    answered = _answered_rows(answers, facts, metric)
    scored_answers = answers[answered].reset_index(drop=True)
    missing = int((~answered).sum())
    try:  # of several label columns ranked one by one (AUC), those holding both classes
        ranked = list(facts.target_columns) if facts.label_column or metric.spatial else \
            scored_columns(metric.name, scored_answers, facts.target_columns)
    except ValueError as exc:
        raise _unusable(str(exc)) from None

    def report(score: float | None, error: str | None) -> GradeReport:
        return GradeReport(competition_id, metric.name, facts.higher_is_better, score, error is None, error,
                           len(submission), answers_missing=missing,
                           columns_skipped=len(facts.target_columns) - len(ranked))

    try:
        if metric.spatial:
            score = _score_images(metric, submission, answers, answer_keys, facts)
        else:
            sub = _aligned(submission, answer_keys, facts.id_column)[answered].reset_index(drop=True)
            score = (_score_label_column(metric, sub, scored_answers, facts) if facts.label_column is not None
                     else _score_targets(metric, sub, scored_answers, facts, ranked))
    except _Invalid as exc:
        return report(None, str(exc))
    except (ValueError, TypeError) as exc:
        # Raised by the metric on inputs it cannot score (e.g. non-numeric ordinal labels).
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return report(None, f"could not score the submission: {first_line}")
    if not math.isfinite(score):
        return report(None, f"{metric.name} is not finite ({score})")
    return report(score, None)


def grade_note(report: GradeReport) -> str | None:
    """Why a grade has no score, or what it left out; None for a complete, plain score."""
    if report.score is None:
        return f"the submission is invalid: {report.error}" if not report.valid else "no score"
    notes = [f"{report.answers_missing} answer row(s) have no value and were not scored"] if report.answers_missing else []
    if report.columns_skipped:
        notes.append(f"{report.columns_skipped} label column(s) hold one class in the answers and were not ranked")
    return "; ".join(notes) or None


def medal_ranks(n_teams: int) -> tuple[int, int, int]:
    """Worst rank that still earns gold, silver and bronze (Kaggle progression, as in MLE-bench)."""
    if n_teams < 1:
        raise ValueError("a leaderboard needs at least one team")
    if n_teams < 100:
        return max(1, int(n_teams * 0.1)), max(1, int(n_teams * 0.2)), max(1, int(n_teams * 0.4))
    if n_teams < 250:
        return 10, int(n_teams * 0.2), int(n_teams * 0.4)
    gold = 10 + int(n_teams * 0.002)
    if n_teams < 1000:
        return gold, 50, 100
    return gold, int(n_teams * 0.05), int(n_teams * 0.1)


def leaderboard_position(score: float, leaderboard: pd.DataFrame, higher_is_better: bool) -> LeaderboardPosition:
    """Where `score` would rank on a Kaggle leaderboard (one row per team, a "Score" column)."""
    column = next((c for c in leaderboard.columns if str(c).strip().lower() == "score"), None)
    if column is None:
        columns = _examples([str(c) for c in leaderboard.columns], 6)
        raise GradingError(f"leaderboard has no score column (columns: {columns})")
    scores = pd.to_numeric(leaderboard[column], errors="coerce").dropna().to_numpy(float)
    if len(scores) == 0:
        raise GradingError("leaderboard has no scores")
    n_teams = len(scores)
    direction = Direction(higher_is_better)
    ordered = direction.ranked(scores.tolist(), key=lambda s: s)
    n_better = sum(direction.better(s, score) for s in ordered)
    n_worse = sum(direction.better(score, s) for s in ordered)
    rank = n_better + 1
    gold, silver, bronze = medal_ranks(n_teams)
    medal = "gold" if rank <= gold else "silver" if rank <= silver else "bronze" if rank <= bronze else None
    gold_at, silver_at, bronze_at = (float(ordered[min(r, n_teams) - 1]) for r in (gold, silver, bronze))
    return LeaderboardPosition(rank, n_teams, n_worse / n_teams, medal, gold_at, silver_at, bronze_at)


def _read_submission(path: Path) -> pd.DataFrame:
    """Every cell as the file spells it, as Kaggle's scorer reads it: a predicted class "None" or
    "NA" is a word, and a blank cell is "" (the checks below call it missing); numbers are parsed
    by whoever needs them. Ids keep their exact spelling ("0013_01", "007")."""
    if not path.is_file():
        raise InvalidSubmissionError(f"submission file {path} does not exist")
    try:
        return read_csv_text(path)
    except (UnreadableTable, OSError, UnicodeDecodeError, ValueError, pd.errors.ParserError) as exc:
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InvalidSubmissionError(f"cannot read submission {path} as CSV: {first_line}") from None


def grade_file(submission_path: Path, competition: Competition, leaderboard_csv: Path | None = None) -> GradeReport:
    """Grade a submission CSV for a competition, placing it on `leaderboard_csv` when given.

    Raises InvalidSubmissionError when the file is missing or not a CSV, GradingError when the
    competition cannot be graded; a readable but malformed submission gives valid=False.
    """
    facts = competition.grading
    if facts is None:
        raise GradingError(f"competition {competition.id!r} has no grading facts")
    try:
        answers = competition.answers()  # the source's bounded reader: SourceError when refused
    except (SourceError, OSError, UnicodeDecodeError, ValueError, pd.errors.ParserError) as exc:
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise _unusable(f"cannot read them: {first_line}") from None
    submission = _read_submission(Path(submission_path))
    report = grade_submission(submission, answers, facts, competition.id)
    if leaderboard_csv is None or report.score is None:
        return report
    return place_on(report, leaderboard_csv)


def grade_run(submission_path: Path, competition: Competition, finished: bool,
              leaderboard: Path | None = None) -> tuple[GradeReport | None, str | None]:
    """A run's grade and the reason its test score is missing (or what the score left out),
    placed on `leaderboard` or else the competition's own leaderboard file when there is one."""
    if not competition.has_answers:
        return None, "no answers available"
    if not finished:
        return None, "the run did not finish"
    if not Path(submission_path).is_file():
        return None, "the submission is invalid: the run left no submission file"
    try:
        report = grade_file(submission_path, competition)
    except InvalidSubmissionError as exc:
        return None, f"the submission is invalid: {exc}"
    except GradingError as exc:
        # An answer problem is said as such; other grading problems name what could not be graded.
        text = str(exc)
        return None, text if text.startswith(ANSWERS_UNUSABLE) else f"cannot grade: {text}"
    note = grade_note(report)
    board = leaderboard or competition.leaderboard_path
    if board is not None and report.score is not None:
        # A leaderboard that cannot be read costs the place, never the score.
        try:
            report = place_on(report, board)
        except GradingError as exc:
            note = "; ".join(n for n in (note, f"not placed on {board.name}: {exc}") if n)
    return report, note


def place_on(report: GradeReport, leaderboard_csv: Path) -> GradeReport:
    """The report with its score placed on a leaderboard CSV (rank, percentile, medal)."""
    assert report.score is not None
    try:
        leaderboard = read_csv_text(leaderboard_csv)  # the scores are parsed where they are ranked
    except (UnreadableTable, OSError, UnicodeDecodeError, ValueError, pd.errors.ParserError) as exc:
        raise GradingError(f"cannot read leaderboard {leaderboard_csv}: {exc}") from None
    return dataclasses.replace(report, leaderboard=leaderboard_position(report.score, leaderboard, report.higher_is_better))
