"""The tabular block's columns: numbers, dates as parts, categories as codes (with frequency and
compound parts), and the group features a compound id hides. Encoded over train and test stacked:
unsupervised, no transform ever looks at a target."""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pandas as pd

from solve_pipeline.base.dataset import CATEGORY, DATE_PART, FREQUENCY, NUMERIC, ORDINAL_CODE

# Above this many levels a category code is no longer handed to LightGBM as categorical
# (it overfits) nor one-hot encoded for linear models; the code stays as an ordinal column.
MAX_CATEGORICAL_LEVELS = 200
# More levels than this also earn a frequency encoding (a cheap, leak-free popularity signal).
FREQUENCY_ENCODING_LEVELS = 20
# Columns whose values are nearly all distinct (names, free ids) carry nothing as codes.
MAX_UNIQUE_RATIO_FOR_CODES = 0.5
DATE_SAMPLE = 1000
COMPOUND_DELIMITERS = ("/", "_", "-", ":", "|")
ID_DELIMITERS = ("_", "-", "/", ":", ".")
MAX_ID_GROUP_SIZE = 100
SAMPLED_IDS, ID_SAMPLE = 50_000, 2_000
_DIGIT = re.compile(r"\d")


@dataclass(frozen=True)
class _Coded:
    """A column as codes into its distinct values: every per-value transform (strip, parse, split)
    then runs once per distinct value, not once per row (a million rows of a 50-level category:
    seconds instead of minutes), and gives exactly the per-row result."""

    codes: np.ndarray  # per row: the position of its value in `values`; -1 where missing
    values: pd.Series  # the distinct values, as strings

    @classmethod
    def of(cls, column: pd.Series) -> "_Coded":
        codes, uniques = pd.factorize(column, use_na_sentinel=True)
        return cls(codes, pd.Series(uniques, dtype=object).astype("string"))

    def rows(self, per_value: np.ndarray | pd.Series) -> np.ndarray:
        """A per-value float array spread over the rows (missing rows: NaN)."""
        values = np.asarray(per_value, dtype=np.float64)
        out = np.full(len(self.codes), np.nan)
        present = self.codes >= 0
        out[present] = values[self.codes[present]]
        return out

    def counts(self) -> np.ndarray:
        """Rows per distinct value."""
        return np.bincount(self.codes[self.codes >= 0], minlength=len(self.values))

    def recoded(self, per_value: pd.Series) -> "_Coded":
        """The rows' codes into a per-value transform's own distinct values (missing stays missing)."""
        inner, uniques = pd.factorize(per_value, use_na_sentinel=True)
        codes = np.where(self.codes >= 0, inner[np.maximum(self.codes, 0)], -1)
        return _Coded(codes, pd.Series(uniques, dtype=object).astype("string"))


def _numeric_or_none(values: pd.Series, coded: _Coded | None = None) -> pd.Series | None:
    """The column as floats when (nearly) every present value is a number, else None."""
    if pd.api.types.is_bool_dtype(values):
        return values.astype(float)
    if pd.api.types.is_numeric_dtype(values):
        return values.astype(float)
    coded = coded or _Coded.of(values)
    parsed = _numeric_values(coded)
    return None if parsed is None else pd.Series(parsed, index=values.index)


def _numeric_values(coded: _Coded) -> np.ndarray | None:
    counts = coded.counts()
    present = int(counts.sum())
    if present == 0:
        return None
    as_text = coded.values.str.strip()
    lowered = as_text.str.lower()
    # Spreadsheet booleans (TRUE/FALSE) are ordered facts; 0/1 keeps them usable by linear models.
    if lowered.isin(["true", "false"]).all():
        return coded.rows(lowered.map({"true": 1.0, "false": 0.0}).astype(float))
    parsed = pd.to_numeric(as_text, errors="coerce").astype(float).to_numpy()
    if counts[~np.isnan(parsed)].sum() >= 0.95 * present:
        return coded.rows(parsed)
    return None


def _dates_or_none(values: pd.Series, coded: _Coded) -> pd.Series | None:
    """Parsed timestamps when most sampled values contain a digit and parse as a date."""
    if len(coded.values) == 0:
        return None
    present = values.dropna().astype(str)
    sample = pd.Series(present.unique()[:DATE_SAMPLE])
    if sample.str.contains(_DIGIT).mean() < 0.9:
        return None  # month names alone, codes like "C85" handled as categories instead
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if pd.to_datetime(sample, errors="coerce", format="mixed", utc=True).notna().mean() < 0.9:
            return None
        # Each distinct value parsed once ("mixed" reads every value on its own), then spread.
        stamps = pd.to_datetime(coded.values, errors="coerce", format="mixed", utc=True)
        return pd.Series(pd.DatetimeIndex(stamps).array.take(coded.codes, allow_fill=True), index=values.index)


def _date_parts(name: str, stamps: pd.Series) -> dict[str, pd.Series]:
    parts = {
        f"{name}__year": stamps.dt.year,
        f"{name}__month": stamps.dt.month,
        f"{name}__day": stamps.dt.day,
        f"{name}__dayofweek": stamps.dt.day_of_week,
        f"{name}__hour": stamps.dt.hour,
        # Elapsed days keep the trend that year/month alone chop into steps.
        f"{name}__days": (stamps - stamps.min()).dt.total_seconds() / 86400.0,
    }
    return {key: value.astype(float) for key, value in parts.items()}


def tabular_columns(both: pd.DataFrame) -> tuple[dict[str, pd.Series], dict[str, str]]:
    """Encode every column of train+test stacked; returns columns and their kinds."""
    columns: dict[str, pd.Series] = {}
    kinds: dict[str, str] = {}
    n_rows = max(len(both), 1)
    for name in both.columns:
        values = both[name]
        if values.isna().all():
            continue
        coded = None if pd.api.types.is_bool_dtype(values) or pd.api.types.is_numeric_dtype(values) else _Coded.of(values)
        numeric = _numeric_or_none(values, coded)
        if numeric is not None:
            columns[str(name)], kinds[str(name)] = numeric, NUMERIC
            continue
        assert coded is not None
        stamps = _dates_or_none(values, coded)
        if stamps is not None:
            for key, part in _date_parts(str(name), stamps).items():
                columns[key], kinds[key] = part, DATE_PART
            continue
        # Categories come from the union of train and test values: unsupervised, so no leakage,
        # and a test-only level gets its own code instead of colliding with a train level.
        text = coded.recoded(coded.values.str.strip())
        levels = sorted(text.values)
        rank = pd.Categorical(text.values, categories=levels).codes
        codes = pd.Series(text.rows(rank), index=values.index)
        if len(levels) <= MAX_CATEGORICAL_LEVELS:
            columns[str(name)], kinds[str(name)] = codes, CATEGORY
        elif len(levels) <= MAX_UNIQUE_RATIO_FOR_CODES * n_rows:
            columns[str(name)], kinds[str(name)] = codes, ORDINAL_CODE
        if len(levels) > FREQUENCY_ENCODING_LEVELS:
            counts = pd.Series(text.rows(text.counts()), index=values.index)
            columns[f"{name}__freq"], kinds[f"{name}__freq"] = counts / n_rows, FREQUENCY
            for key, (part, kind) in _compound_parts(str(name), text, values.index).items():
                columns[key], kinds[key] = part, kind
    return columns, kinds


def _compound_parts(name: str, text: _Coded, index: pd.Index) -> dict[str, tuple[pd.Series, str]]:
    """Parts of a compound code ("B/0/P": deck, number, side) when one delimiter splits nearly
    every value into the same 2-4 parts; each part becomes a number or a category of its own."""
    present = text.codes[text.codes >= 0]
    if present.size == 0:
        return {}
    sample = pd.Series(text.values.to_numpy()[present[:DATE_SAMPLE]], dtype="string")  # the first present rows
    for delimiter in COMPOUND_DELIMITERS:
        counts = sample.str.count(re.escape(delimiter)) + 1
        width = int(counts.mode().iloc[0])
        if not 2 <= width <= 4 or (counts == width).mean() < 0.95:
            continue
        pieces = text.values.str.split(delimiter, n=width - 1, expand=True, regex=False)
        if pieces.shape[1] != width:
            continue
        parts: dict[str, tuple[pd.Series, str]] = {}
        for i in range(width):
            piece = text.recoded(pieces[i].str.strip().replace("", pd.NA))
            numeric = _numeric_values(piece)
            if numeric is not None:
                parts[f"{name}__part{i}"] = (pd.Series(numeric, index=index), NUMERIC)
                continue
            levels = sorted(piece.values)
            if 1 < len(levels) <= MAX_CATEGORICAL_LEVELS:
                rank = pd.Categorical(piece.values, categories=levels).codes
                parts[f"{name}__part{i}"] = (pd.Series(piece.rows(rank), index=index), CATEGORY)
        return parts
    return {}


def id_prefix(ids: Sequence[str]) -> tuple[str, np.ndarray] | None:
    """The leading part of compound ids (`0001_02` -> `0001`) when one delimiter splits nearly
    every id in two parts or more and the prefixes repeat; (delimiter, prefixes) or None."""
    if not ids:
        return None
    values = pd.Series(list(ids), dtype="string")
    # A spread sample rules a delimiter out at once on many ids (the full split of a million ids
    # costs seconds per delimiter); below SAMPLED_IDS every id is split, as always.
    sample = values.iloc[:: max(len(values) // ID_SAMPLE, 1)] if len(values) > SAMPLED_IDS else None
    for delimiter in ID_DELIMITERS:
        if sample is not None and sample.str.contains(delimiter, regex=False).mean() < 0.5:
            continue
        split = values.str.split(re.escape(delimiter), n=1, regex=True)
        if (split.str.len() == 2).mean() < 0.95:
            continue
        prefixes = split.str[0].fillna("").to_numpy(dtype=object)
        groups = len(set(prefixes))
        # Entities repeat a few times each; one shared prefix ("id_0001") or a handful of huge
        # ones (a year before a date) are no entities.
        if 2 <= groups < 0.9 * len(prefixes) and len(prefixes) / groups <= MAX_ID_GROUP_SIZE:
            return delimiter, prefixes
    return None


def id_parts(ids: list[str]) -> dict[str, pd.Series]:
    """Group features a compound id hides (`gggg_pp`: a travel party, a household): the group's
    size over train and test, and the member's number within it when it is one."""
    found = id_prefix(ids)
    if found is None:
        return {}
    delimiter, prefixes = found
    keys = pd.Series(prefixes)
    parts = {"id__group_size": keys.map(keys.value_counts()).astype(float)}
    member = pd.to_numeric(pd.Series(ids, dtype="string").str.split(re.escape(delimiter), n=1, regex=True).str[1],
                           errors="coerce")
    if member.notna().mean() >= 0.95:
        parts["id__member"] = member.astype(float)
    return parts
