"""Key values written alike on both sides of a join: what kind of key a column can be, and the one
normalisation that `assemble` and the key search both apply, so train and test match as perception did.

A person joining `store.csv` reads `1` and `1.0`, or `2015-07-31`, `2015-07-31 00:00:00` and
`2015-07-31T00:00:00Z`, as the same key. Timestamps with a zone are read in UTC and ones without
taken as UTC; a `day` key compares the date alone (a daily table joined to hourly rows).
"""

from __future__ import annotations

from typing import Literal

import pandas as pd

KeyForm = Literal["text", "integer", "timestamp", "day"]
KeyKind = Literal["text", "integer", "timestamp"]

_INTEGER = r"^([+-]?)0*(\d+?)(?:\.0*)?$"  # 7, 007, 7.0: one whole number, written by any writer
_SAMPLE = 2000  # cells looked at to judge a column's kind
_TEXT_CHARACTERS = 40  # longer cells are descriptions, not codes
_TEXT_WORDS = 3


def cells(series: pd.Series) -> pd.Series:
    return series.astype(str).str.strip()


def _rendered(uniques: pd.Series, form: KeyForm) -> pd.Series:
    """Each distinct cell written in `form`; a cell that is not of the form stays as written."""
    if form == "integer":
        parts = uniques.str.extract(_INTEGER)
        sign = parts[0].where((parts[0] == "-") & (parts[1] != "0"), "")  # "+7" is 7, "-0" is 0
        return (sign + parts[1]).where(parts[1].notna(), uniques)
    stamps = pd.to_datetime(uniques, errors="coerce", format="mixed", utc=True).dt.tz_localize(None)
    written = stamps.dt.strftime("%Y-%m-%d" if form == "day" else "%Y-%m-%d %H:%M:%S")
    return written.where(stamps.notna(), uniques)


def normalise_key(series: pd.Series, form: KeyForm) -> pd.Series:
    """The column's cells as keys in `form` ("" stays blank: a missing key matches nothing).
    Distinct cells are parsed once: a date column of a million rows holds a few thousand days."""
    text = cells(series)
    if form == "text":
        return text
    uniques = pd.Series(pd.unique(text), dtype=object)
    lookup = dict(zip(uniques, _rendered(uniques, form)))
    return text.map(lookup)


def key_kind(series: pd.Series) -> KeyKind | None:
    """What key the column can be: whole numbers, a timestamp, a short code or name; None for
    measurements (decimals) and free text, which a person never joins on."""
    present = cells(series.head(50_000))
    present = present[present != ""]
    if present.empty:
        return None
    present = present.sample(_SAMPLE, random_state=0) if len(present) > _SAMPLE else present
    if present.str.fullmatch(_INTEGER).all():
        return "integer"
    if pd.to_numeric(present, errors="coerce").notna().mean() >= 0.95:
        return None  # decimals
    if present.str.contains(r"\d").all() and present.str.contains(r"[-/:]").all():
        parsed = pd.to_datetime(present, errors="coerce", format="mixed", utc=True)
        if parsed.notna().mean() >= 0.95:
            return "timestamp"
    if present.str.len().median() <= _TEXT_CHARACTERS and present.str.split().str.len().mean() <= _TEXT_WORDS:
        return "text"
    return None


def only_days(series: pd.Series) -> bool:
    """Every timestamp of the column falls at midnight: the column holds dates."""
    stamps = normalise_key(series.head(_SAMPLE), "timestamp")
    stamps = stamps[stamps != ""]
    return bool(stamps.str.endswith(" 00:00:00").all())


def common_form(mine: KeyKind, theirs: KeyKind, mine_days: bool, their_days: bool) -> KeyForm | None:
    """How two columns' keys are compared, or None when they cannot be the same key."""
    if mine == "timestamp" or theirs == "timestamp":
        if mine != theirs:
            return None
        return "day" if mine_days or their_days else "timestamp"
    return "integer" if mine == theirs == "integer" else "text"
