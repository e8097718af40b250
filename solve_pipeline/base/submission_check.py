"""Submission validation: trusted code, run by the orchestrator before a submission is final.

Everything is read as text, because what matters is what Kaggle's scorer will read: ids are
compared as stripped strings, numbers must parse, booleans must look like booleans.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal, Sequence

import numpy as np
import pandas as pd

from agentk.core.readers import UnreadableTable, numbers_from_text, read_csv_text, read_table

MISSING_TEXT = {"", "nan", "none", "null", "<na>"}
_TEXT = pd.StringDtype("pyarrow")
BOOL_TEXT = {"true", "false"}
SHOW = 3


def _read_text_csv(path: Path) -> pd.DataFrame:
    """Every cell as a string; nothing silently turned into NaN."""
    return read_csv_text(path)


def _read_sample(path: Path) -> pd.DataFrame:
    """A sample in any format (CSV, gzip, ...), cells as text, read as perception read it."""
    try:
        return read_table(path)
    except UnreadableTable as exc:
        raise OSError(str(exc)) from exc


def _examples(values: Sequence[object]) -> str:
    shown = ", ".join(repr(v) for v in list(values)[:SHOW])
    return shown + (", ..." if len(values) > SHOW else "")


def _is_missing(column: pd.Series) -> pd.Series:
    """Blank cells, and NaN spelled out ("nan", "None") among numbers; in a column of text, or one
    of nothing else, those spellings are words like any other (a class may be called "None"; a
    constant submission may predict it everywhere). A sample's numeric column still refuses them."""
    text = column.str.strip()
    spelled = text.str.lower().isin(MISSING_TEXT) & (text != "")
    others = text[~spelled & (text != "")]
    if spelled.any() and not others.empty and _numeric(others).notna().all():
        return text.eq("") | spelled
    return text.eq("")


def _numeric(column: pd.Series) -> pd.Series:
    return numbers_from_text(column)


def _looks_numeric(column: pd.Series) -> bool:
    present = column[~_is_missing(column)]
    return len(present) > 0 and bool(_numeric(present).notna().all())


def _looks_bool(column: pd.Series) -> bool:
    present = column[~_is_missing(column)]
    return len(present) > 0 and bool(present.str.strip().str.lower().isin(BOOL_TEXT).all())


def _column_problems(submission: pd.DataFrame, expected: Sequence[str]) -> list[str]:
    actual = list(submission.columns)
    expected = list(expected)
    if actual == expected:
        return []
    problems = []
    missing = [c for c in expected if c not in actual]
    extra = [c for c in actual if c not in expected]
    if missing:
        problems.append(f"missing {len(missing)} column(s): {_examples(missing)}")
    if extra:
        problems.append(f"{len(extra)} unexpected column(s): {_examples(extra)}")
    if not missing and not extra:
        problems.append(f"columns are in the wrong order: expected {expected}, got {actual}")
    return problems


def _stripped(values: pd.Series | Sequence[object]) -> pd.Series:
    series = values if isinstance(values, pd.Series) else pd.Series([str(v) for v in values], dtype=object)
    return series.astype(_TEXT).str.strip().reset_index(drop=True)


def _id_problems(ids: pd.Series, expected: pd.Series | Sequence[object]) -> list[str]:
    # Compared as Arrow columns first: a per-pixel submission has millions of ids, nearly always right.
    actual_ids, expected_ids = _stripped(ids), _stripped(expected)
    if len(actual_ids) == len(expected_ids) and bool(actual_ids.eq(expected_ids).all()):
        return []
    actual, expected = actual_ids.tolist(), expected_ids.tolist()
    problems = []
    duplicated = pd.Series(actual)[pd.Series(actual).duplicated()].unique().tolist()
    if duplicated:
        problems.append(f"{len(duplicated)} duplicated id(s): {_examples(duplicated)}")
    actual_set, expected_set = set(actual), set(expected)
    absent = [i for i in expected if i not in actual_set]
    unexpected = [i for i in actual if i not in expected_set]
    if absent:
        problems.append(f"{len(absent)} expected id(s) missing: {_examples(absent)}")
    if unexpected:
        problems.append(f"{len(unexpected)} unexpected id(s): {_examples(unexpected)}")
    if not absent and not unexpected and not duplicated:
        moved = [f"row {r}: expected {e}, got {a}"
                 for r, (e, a) in enumerate(zip(expected, actual)) if e != a]
        shown = _examples(moved)
        problems.append(f"ids are in a different order: {len(moved)} position(s) differ ({shown})")
    return problems


def _is_probability_layout(sample: pd.DataFrame) -> bool:
    """Several non-id columns, all numeric within [0, 1]: one probability per class."""
    value_columns = list(sample.columns[1:])
    if len(value_columns) < 2 or sample.empty:
        return False
    for column in value_columns:
        if not _looks_numeric(sample[column]):
            return False
        numbers = _numeric(sample[column])
        if numbers.min() < 0 or numbers.max() > 1:
            return False
    return True


def _value_problems(submission: pd.DataFrame, sample: pd.DataFrame | None, id_column: str | None = None,
                    echoed: Sequence[str] = (), probabilities: bool | None = None) -> list[str]:
    problems = []
    for column in submission.columns:
        values = submission[column]
        missing = _is_missing(values)
        # An echoed input column may be blank where the sample itself is blank, or, without a
        # sample, where the test input it repeats is missing.
        blank_in_sample = sample is not None and column in sample.columns and bool(_is_missing(sample[column]).any())
        if missing.any() and not blank_in_sample and column not in echoed:
            rows = np.flatnonzero(missing.to_numpy()).tolist()
            problems.append(f"column {column!r}: {len(rows)} missing value(s) (rows {_examples(rows)})")
        if sample is None or column not in sample.columns or column == (id_column or sample.columns[0]):
            continue
        present = values[~missing]
        if _looks_bool(sample[column]):
            bad = present[~present.str.strip().str.lower().isin(BOOL_TEXT)]
            if len(bad):
                problems.append(f"column {column!r}: {len(bad)} value(s) are not True/False like the "
                                f"sample ({_examples(bad.tolist())})")
        elif _looks_numeric(sample[column]):
            bad = present[_numeric(present).isna()]
            if len(bad):
                problems.append(f"column {column!r}: {len(bad)} non-numeric value(s) where the sample "
                                f"is numeric ({_examples(bad.tolist())})")
    # Unknown (None): a sample of numbers within [0, 1] in several columns reads as class
    # probabilities; a setup that knows its targets are values (two counts) says False.
    if sample is not None and (probabilities if probabilities is not None else _is_probability_layout(sample)):
        for column in [c for c in sample.columns[1:] if c in submission.columns]:
            numbers = _numeric(submission[column])
            outside = numbers[(numbers < 0) | (numbers > 1)]
            if len(outside):
                problems.append(f"column {column!r}: {len(outside)} probability value(s) outside [0, 1] "
                                f"({_examples(outside.tolist())})")
    return problems


def validate_submission(
    submission_path: Path,
    *,
    sample_path: Path | None,
    expected_ids: pd.Series | Sequence[str] | None = None,
    expected_columns: Sequence[str] | None = None,
    id_column: str | None = None,
    echoed: Sequence[str] = (),
    probabilities: bool | None = None,
    encoded: Sequence[str] = (),
    encoding: Literal["rle", "boxes"] = "rle",
    repeated_ids: bool = False,
) -> list[str]:
    """Problems with a submission file; an empty list means it is valid.

    With a sample submission, its columns, ids (first column, in order) and value types are the
    reference. Without one, `expected_columns` and `expected_ids` are, when given. Ids are in
    `id_column` (default: the first column; a submission may put its prediction first).
    `echoed` columns repeat test inputs and may be blank where those are. `probabilities`: whether
    the value columns are class probabilities, checked to lie in [0, 1] (None: read from the sample).
    `encoded` columns hold run-length masks (blank: no mask), or boxes (`encoding="boxes"`:
    `conf x y w h ...`, blank for none); with `repeated_ids` a picture may
    take several consecutive rows (one per object), its first row where the sample lists it.
    """
    try:
        submission = _read_text_csv(Path(submission_path))
    except FileNotFoundError:
        return [f"submission file not found: {submission_path}"]
    except (UnreadableTable, pd.errors.EmptyDataError, pd.errors.ParserError, UnicodeDecodeError, OSError) as error:
        return [f"submission file is unreadable: {type(error).__name__}: {error}"]
    if submission.columns.empty:
        return ["submission file is empty"]
    if submission.empty:
        return ["submission file has a header but no rows"]

    sample = None
    if sample_path is not None:
        try:
            sample = _read_sample(Path(sample_path))
        except (pd.errors.EmptyDataError, pd.errors.ParserError, UnicodeDecodeError, OSError) as error:
            return [f"sample submission is unreadable: {type(error).__name__}: {error}"]
        expected_columns = list(sample.columns)
        key = id_column if id_column in sample.columns else (sample.columns[0] if len(sample.columns) else None)
        expected_ids = sample[key] if key is not None else []

    problems: list[str] = []
    if expected_columns is not None:
        problems += _column_problems(submission, expected_columns)
    if expected_ids is not None:
        key = id_column if id_column in submission.columns else submission.columns[0]
        ids = submission[key]
        if repeated_ids:
            problems += _run_problems(ids)
            ids = ids[~ids.str.strip().duplicated()]
        if len(ids) != len(expected_ids):
            problems.append(f"{len(ids)} {'picture' if repeated_ids else 'row'}(s), expected {len(expected_ids)}")
        problems += _id_problems(ids, expected_ids)
    plain = submission.drop(columns=[c for c in encoded if c in submission.columns])
    problems += _value_problems(plain, sample, id_column, echoed, probabilities)
    problems += [p for c in encoded if c in submission.columns for p in _encoding_problems(submission[c], c, encoding)]
    return problems


def _run_problems(ids: pd.Series) -> list[str]:
    """A picture's rows (one per object) must follow each other."""
    stripped = ids.str.strip()
    starts = stripped[stripped.ne(stripped.shift())]
    split = starts[starts.duplicated()].unique().tolist()
    return [f"{len(split)} id(s) whose rows are not consecutive: {_examples(split)}"] if split else []


def _encoding_problems(values: pd.Series, column: str, encoding: Literal["rle", "boxes"]) -> list[str]:
    """Cells that are not run-length masks (pairs of non-negative integers) or not boxes (groups of
    `conf x y w h`); blank or -1 for none."""
    from agentk.core.boxes import parse_boxes
    from agentk.core.masks import rle_numbers

    read = rle_numbers if encoding == "rle" else parse_boxes
    bad = []
    for value in values.fillna("").tolist():
        try:
            read(value)
        except ValueError:
            bad.append(value)
    what = "run-length masks" if encoding == "rle" else "boxes (conf x y w h ...)"
    return [f"column {column!r}: {len(bad)} cell(s) are not {what} ({_examples(bad)})"] if bad else []
