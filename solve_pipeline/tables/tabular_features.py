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


def _number_mode(coded: _Coded) -> str | None:
    """How a text column reads as numbers: "bool" (spreadsheet booleans, TRUE/FALSE: ordered
    facts, 0/1 keeps them usable by linear models), "number" (nearly every present value parses),
    or None: it is no column of numbers."""
    counts = coded.counts()
    present = int(counts.sum())
    if present == 0:
        return None
    if coded.values.str.strip().str.lower().isin(["true", "false"]).all():
        return "bool"
    parsed = _parse_numbers(coded, "number")
    return "number" if counts[~np.isnan(parsed)].sum() >= 0.95 * present else None


def _parse_numbers(coded: _Coded, mode: str, rows: bool = False) -> np.ndarray:
    """Per distinct value (per row with `rows`), the number it reads as under `mode`."""
    as_text = coded.values.str.strip()
    if mode == "bool":
        per_value = as_text.str.lower().map({"true": 1.0, "false": 0.0}).astype(float).to_numpy()
    else:
        per_value = pd.to_numeric(as_text, errors="coerce").astype(float).to_numpy()
    return coded.rows(per_value) if rows else per_value


def _is_numeric_dtype(values: pd.Series) -> bool:
    return pd.api.types.is_bool_dtype(values) or pd.api.types.is_numeric_dtype(values)


def _is_dates(values: pd.Series, coded: _Coded) -> bool:
    """Most sampled values contain a digit and parse as a date."""
    if len(coded.values) == 0:
        return False
    present = values.dropna().astype(str)
    sample = pd.Series(present.unique()[:DATE_SAMPLE])
    if sample.str.contains(_DIGIT).mean() < 0.9:
        return False  # month names alone, codes like "C85" handled as categories instead
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return bool(pd.to_datetime(sample, errors="coerce", format="mixed", utc=True).notna().mean() >= 0.9)


def _stamps(values: pd.Series, coded: _Coded) -> pd.Series:
    """Each distinct value parsed once ("mixed" reads every value on its own), then spread."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        stamps = pd.to_datetime(coded.values, errors="coerce", format="mixed", utc=True)
    return pd.Series(pd.DatetimeIndex(stamps).array.take(coded.codes, allow_fill=True), index=values.index)


def _date_parts(name: str, stamps: pd.Series, origin: pd.Timestamp) -> dict[str, pd.Series]:
    parts = {
        f"{name}__year": stamps.dt.year,
        f"{name}__month": stamps.dt.month,
        f"{name}__day": stamps.dt.day,
        f"{name}__dayofweek": stamps.dt.day_of_week,
        f"{name}__hour": stamps.dt.hour,
        # Elapsed days keep the trend that year/month alone chop into steps.
        f"{name}__days": (stamps - origin).dt.total_seconds() / 86400.0,
    }
    return {key: value.astype(float) for key, value in parts.items()}


Parts = dict[str, tuple[pd.Series, str]]


@dataclass(frozen=True)
class _Numbers:
    """A column of numbers: as read when its values are numbers, else parsed from text by `mode`."""

    mode: str = "number"

    def encode(self, name: str, values: pd.Series) -> Parts:
        if _is_numeric_dtype(values):
            return {name: (values.astype(float), NUMERIC)}
        return {name: (pd.Series(_parse_numbers(_Coded.of(values), self.mode, rows=True), index=values.index), NUMERIC)}


@dataclass(frozen=True)
class _Dates:
    """A column of dates as parts; elapsed days count from `origin`, the earliest date encoded."""

    origin: pd.Timestamp

    def encode(self, name: str, values: pd.Series) -> Parts:
        parts = _date_parts(name, _stamps(values, _Coded.of(values)), self.origin)
        return {key: (part, DATE_PART) for key, part in parts.items()}


@dataclass(frozen=True)
class _Categories:
    """A column of categories: codes into `levels` (a value outside them is missing) when `kind`
    is set; with `counts`, a frequency (a value never seen counts once) and, with `split`, the
    pieces of a compound code (delimiter, width, and per piece its `_Numbers`, its levels or None)."""

    levels: tuple[str, ...]
    kind: str | None
    counts: dict[str, int] | None
    n_rows: int
    split: tuple[str, int, tuple] | None = None

    def encode(self, name: str, values: pd.Series) -> Parts:
        coded = _Coded.of(values)
        return self.encode_text(name, coded.recoded(coded.values.str.strip()), values.index)

    def encode_text(self, name: str, text: _Coded, index: pd.Index) -> Parts:
        out: Parts = {}
        if self.kind is not None:
            out[name] = (pd.Series(text.rows(_ranks(text.values, self.levels)), index=index), self.kind)
        if self.counts is not None:
            counts = text.values.map(self.counts).fillna(1).astype(float).to_numpy()
            out[f"{name}__freq"] = (pd.Series(text.rows(counts), index=index) / self.n_rows, FREQUENCY)
        if self.split is not None:
            out.update(_encode_pieces(name, text, index, self.split))
        return out


def _ranks(values: pd.Series, levels: Sequence[str]) -> np.ndarray:
    """Each value's position among `levels`; NaN for a value outside them."""
    rank = pd.Index(list(levels), dtype=object).get_indexer(values.astype(object)).astype(np.float64)
    rank[rank < 0] = np.nan
    return rank


Encoding = _Numbers | _Dates | _Categories


def _fit_column(values: pd.Series, n_rows: int) -> tuple[Encoding, Parts] | None:
    """How one column of train+test stacked is encoded, and its encoded parts; None: all missing."""
    name = str(values.name)
    if values.isna().all():
        return None
    if _is_numeric_dtype(values):
        how: Encoding = _Numbers()
        return how, how.encode(name, values)
    coded = _Coded.of(values)
    mode = _number_mode(coded)
    if mode is not None:
        how = _Numbers(mode)
        return how, {name: (pd.Series(_parse_numbers(coded, mode, rows=True), index=values.index), NUMERIC)}
    if _is_dates(values, coded):
        stamps = _stamps(values, coded)
        how = _Dates(stamps.min())
        return how, {key: (part, DATE_PART) for key, part in _date_parts(name, stamps, how.origin).items()}
    # Categories come from the union of train and test values: unsupervised, so no leakage,
    # and a test-only level gets its own code instead of colliding with a train level.
    text = coded.recoded(coded.values.str.strip())
    levels = tuple(sorted(text.values))
    kind = None
    if len(levels) <= MAX_CATEGORICAL_LEVELS:
        kind = CATEGORY
    elif len(levels) <= MAX_UNIQUE_RATIO_FOR_CODES * n_rows:
        kind = ORDINAL_CODE
    counts = split = None
    if len(levels) > FREQUENCY_ENCODING_LEVELS:
        counts = dict(zip(text.values.tolist(), text.counts().tolist(), strict=True))
        split = _fit_pieces(text)
    # Levels are kept only where codes are written: a predictor carries no vocabulary it never reads.
    how = _Categories(levels if kind is not None else (), kind, counts, n_rows, split)
    return how, how.encode_text(name, text, values.index)


@dataclass(frozen=True)
class TableEncoding:
    """How each column of the tabular block is encoded, decided once over train and test stacked
    (`fit_table`); `encode` applies the same encoding to any rows, the run's own and unseen ones."""

    columns: tuple[tuple[str, Encoding], ...]

    def text_columns(self) -> list[str]:
        """The columns encoded from their text (categories, dates): a reader of unseen rows must
        give them as text even where those rows hold only numbers ("113803", not 113803.0)."""
        return [name for name, how in self.columns if not isinstance(how, _Numbers)]

    def encode(self, frame: pd.DataFrame) -> tuple[dict[str, pd.Series], dict[str, str]]:
        columns: dict[str, pd.Series] = {}
        kinds: dict[str, str] = {}
        for name, how in self.columns:
            values = frame[name] if name in frame.columns else pd.Series(np.nan, index=frame.index, dtype=object)
            for key, (part, kind) in how.encode(name, values).items():
                columns[key], kinds[key] = part, kind
        return columns, kinds


def fit_table(both: pd.DataFrame) -> tuple[TableEncoding, dict[str, pd.Series], dict[str, str]]:
    """Encode every column of train+test stacked; returns the encoding, the columns and their kinds."""
    columns: dict[str, pd.Series] = {}
    kinds: dict[str, str] = {}
    encodings: list[tuple[str, Encoding]] = []
    n_rows = max(len(both), 1)
    for name in both.columns:
        fitted = _fit_column(both[name].rename(str(name)), n_rows)
        if fitted is None:
            continue
        encodings.append((str(name), fitted[0]))
        for key, (part, kind) in fitted[1].items():
            columns[key], kinds[key] = part, kind
    return TableEncoding(tuple(encodings)), columns, kinds


def tabular_columns(both: pd.DataFrame) -> tuple[dict[str, pd.Series], dict[str, str]]:
    """Encode every column of train+test stacked; returns columns and their kinds."""
    _, columns, kinds = fit_table(both)
    return columns, kinds


def _fit_pieces(text: _Coded) -> tuple[str, int, tuple] | None:
    """Parts of a compound code ("B/0/P": deck, number, side) when one delimiter splits nearly
    every value into the same 2-4 parts; each part becomes a number or a category of its own."""
    present = text.codes[text.codes >= 0]
    if present.size == 0:
        return None
    sample = pd.Series(text.values.to_numpy()[present[:DATE_SAMPLE]], dtype="string")  # the first present rows
    for delimiter in COMPOUND_DELIMITERS:
        counts = sample.str.count(re.escape(delimiter)) + 1
        width = int(counts.mode().iloc[0])
        if not 2 <= width <= 4 or (counts == width).mean() < 0.95:
            continue
        pieces = _pieces(text, delimiter, width)
        if pieces is None:
            continue
        kept: list[_Numbers | tuple[str, ...] | None] = []
        for piece in pieces:
            mode = _number_mode(piece)
            levels = tuple(sorted(piece.values))
            kept.append(_Numbers(mode) if mode is not None else
                        levels if 1 < len(levels) <= MAX_CATEGORICAL_LEVELS else None)
        return delimiter, width, tuple(kept)
    return None


def _pieces(text: _Coded, delimiter: str, width: int, pad: bool = False) -> list[_Coded] | None:
    """The compound code's pieces, each coded per row; None when the values split into fewer
    pieces (unless `pad`: unseen rows without the delimiter get missing pieces)."""
    split = text.values.str.split(delimiter, n=width - 1, expand=True, regex=False)
    if split.shape[1] != width:
        if not pad:
            return None
        split = split.reindex(columns=range(width)).astype("string")
    return [text.recoded(split[i].str.strip().replace("", pd.NA)) for i in range(width)]


def _encode_pieces(name: str, text: _Coded, index: pd.Index, split: tuple[str, int, tuple]) -> Parts:
    delimiter, width, kept = split
    pieces = _pieces(text, delimiter, width, pad=True)
    assert pieces is not None
    parts: Parts = {}
    for i, (piece, how) in enumerate(zip(pieces, kept, strict=True)):
        if isinstance(how, _Numbers):
            parts[f"{name}__part{i}"] = (pd.Series(_parse_numbers(piece, how.mode, rows=True), index=index), NUMERIC)
        elif how is not None:
            parts[f"{name}__part{i}"] = (pd.Series(piece.rows(_ranks(piece.values, how)), index=index), CATEGORY)
    return parts


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


@dataclass(frozen=True)
class IdParts:
    """The group features of compound ids, as `id_parts` found them: the delimiter, each group's
    size over the ids it saw (a group never seen counts its members among the ids encoded), and
    whether members are numbered."""

    delimiter: str
    sizes: dict[str, int]
    member: bool

    def encode(self, ids: Sequence[str]) -> dict[str, pd.Series]:
        values = pd.Series(list(ids), dtype="string")
        split = values.str.split(re.escape(self.delimiter), n=1, regex=True)
        keys = pd.Series(split.str[0].fillna("").to_numpy(dtype=object))
        sizes = keys.map(self.sizes)
        if sizes.isna().any():
            sizes = sizes.fillna(keys.map(keys.value_counts()))
        parts = {"id__group_size": sizes.astype(float)}
        if self.member:
            parts["id__member"] = pd.to_numeric(split.str[1], errors="coerce").astype(float)
        return parts


def fit_id_parts(ids: list[str]) -> IdParts | None:
    """Group features a compound id hides (`gggg_pp`: a travel party, a household): the group's
    size over train and test, and the member's number within it when it is one."""
    found = id_prefix(ids)
    if found is None:
        return None
    delimiter, prefixes = found
    sizes = pd.Series(prefixes).value_counts()
    member = pd.to_numeric(pd.Series(ids, dtype="string").str.split(re.escape(delimiter), n=1, regex=True).str[1],
                           errors="coerce")
    return IdParts(delimiter, {str(k): int(v) for k, v in sizes.items()}, bool(member.notna().mean() >= 0.95))


def id_parts(ids: list[str]) -> dict[str, pd.Series]:
    """`fit_id_parts`'s features of these ids (none when they are no compound ids)."""
    fitted = fit_id_parts(ids)
    return {} if fitted is None else fitted.encode(ids)
