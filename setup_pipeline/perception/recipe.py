"""How the train or test frame is assembled from the files: the one contract between perception
(which decides it) and the generated map code (which runs it through `assemble`).

A recipe concatenates parts, joins feature tables on a key, puts a row-aligned table beside it
(`y_train` next to `X_train`), keeps the rows whose targets are present or blank (one file holding
both train and test), and can take ids from the sample submission by row order.

A join keyed by the id brings the table's columns as they are named. A side table keyed by other
columns (a store, a store and a date: relations.py) is a left join whose columns carry its prefix,
with both sides' keys written alike first (keys.py) and several rows per key summarised
(side_stats.py); train and test run the same Join, so they get exactly the same columns. Joins run
in order: a chained one keys on a column an earlier join brought (`orders__user_id`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import pandas as pd
from pydantic import BaseModel

from agentk.core.readers import read_table
from setup_pipeline.perception.composed_keys import ComposedKey
from setup_pipeline.perception.keys import KeyForm, normalise_key
from setup_pipeline.perception.side_stats import summarise


class Join(BaseModel):
    file: list[str]  # the joined table's parts, relative to raw/
    on: str | list[str]  # key column(s) in the frame
    other_on: str | list[str]  # key column(s) in the joined table, in the same order
    columns: list[str]  # the joined table's columns to bring in
    # Several rows per key (a customer's past loans): numbers averaged, words by their most common
    # value, and the number of rows as `count_column`.
    aggregate: bool = False
    count_column: str | None = None
    # A side table keyed by other columns than the id (a store, a store and a date):
    key_forms: list[KeyForm] = []  # per key column, how both sides are written before matching ([]: as text)
    prefix: str = ""  # joined columns are named prefix + column: the solver can tell each join's block apart
    statistics: bool = False  # aggregate per key: rows, mean/min/max of numbers, distinct words, the last by time
    time_column: str | None = None  # the side table's time, for the last value per key
    match: dict[str, float] = {}  # evidence: share of train / test rows whose key the side table holds
    via: str | None = None  # a chained join: the side table (first file) whose joined column is the key
    left_out: dict[str, str] = {}  # evidence: the table's columns not brought in, and why (a leak)

    @property
    def keys(self) -> list[str]:
        return [self.on] if isinstance(self.on, str) else list(self.on)

    @property
    def other_keys(self) -> list[str]:
        return [self.other_on] if isinstance(self.other_on, str) else list(self.other_on)


class TableRecipe(BaseModel):
    files: list[str]  # parts, concatenated in order; paths relative to raw/
    beside: list[str] = []  # a table aligned row by row with the frame (its parts)
    beside_columns: list[str] = []
    joins: list[Join] = []
    rows: Literal["all", "target_present", "target_blank"] = "all"
    target_columns: list[str] = []  # what `rows` looks at
    composed_key: ComposedKey | None = None  # a key column made of others ("<sentence_id>_<token_id>")

    def describe(self) -> str:
        text = " + ".join(self.files)
        if self.beside:
            text += f" beside {' + '.join(self.beside)}"
        for join in self.joins:
            text += f" joined with {' + '.join(join.file)} on {' + '.join(join.keys)}"
        if self.rows != "all":
            text += f" (rows with {'present' if self.rows == 'target_present' else 'blank'} {', '.join(self.target_columns)})"
        return text


def _read_parts(raw: Path, files: list[str], loaded: dict[str, pd.DataFrame] | None = None) -> pd.DataFrame:
    loaded = loaded or {}
    frames = [loaded[f].copy() if f in loaded else read_table(raw / f) for f in files]
    return pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]


def _aggregate(other: pd.DataFrame, join: Join) -> pd.DataFrame:
    """One row per key: the mean of number columns, the most common value of the others, a row count."""
    grouped = other.groupby("__key__", sort=False)
    out = pd.DataFrame({"__key__": list(grouped.groups)})
    for column in join.columns:
        cells = other[column].astype(str).str.strip()
        numbers = pd.to_numeric(cells.where(cells != ""), errors="coerce")
        present = cells != ""
        if present.any() and numbers[present].notna().mean() >= 0.95:
            values = numbers.groupby(other["__key__"], sort=False).mean()
            out[column] = out["__key__"].map(values).map(lambda v: "" if pd.isna(v) else repr(float(v)))
        else:
            modes = cells[present].groupby(other["__key__"][present], sort=False).agg(lambda v: v.value_counts().index[0])
            out[column] = out["__key__"].map(modes).fillna("")
    if join.count_column:
        out[join.count_column] = out["__key__"].map(grouped.size()).astype(str)
    return out


def _key(frame: pd.DataFrame, columns: list[str], forms: list[KeyForm]) -> pd.Series:
    """One text key per row (columns written per their form, joined by a unit separator); blank
    when any part is blank, so a missing key matches nothing."""
    parts = [normalise_key(frame[c], forms[i] if forms else "text") for i, c in enumerate(columns)]
    key = parts[0]
    for part in parts[1:]:
        key = key + "\x1f" + part
    blank = pd.concat([p == "" for p in parts], axis=1).any(axis=1)
    return key.where(~blank, "")


def join_table(frame: pd.DataFrame, other: pd.DataFrame, join: Join) -> pd.DataFrame:
    """A left join: every row of the frame kept, in order; a key the table lacks leaves blanks."""
    side = other[join.columns].copy()
    side.insert(0, "__key__", _key(other, join.other_keys, join.key_forms).to_numpy())
    if join.time_column:
        side["__time__"] = normalise_key(other[join.time_column], "timestamp").to_numpy()
    side = side[side["__key__"] != ""]
    if join.statistics:
        side = summarise(side, join.columns, join.prefix)
    elif join.aggregate:
        side = _aggregate(side, join)
    else:
        side = side.drop(columns=["__time__"], errors="ignore").drop_duplicates(subset=["__key__"])
        side = side.rename(columns={c: join.prefix + c for c in join.columns})
    keys = _key(frame, join.keys, join.key_forms)
    merged = pd.DataFrame({"__key__": keys.to_numpy()}).merge(side, on="__key__", how="left")
    if len(merged) != len(frame):  # the side table is one row per key by now
        raise ValueError(f"joining {join.file[0]} changed the row count ({len(frame)} -> {len(merged)})")
    added = [c for c in side.columns if c != "__key__"]
    # One concat, not a column at a time: a summarised table brings dozens of columns.
    block = pd.DataFrame({c: merged[c].fillna("").to_numpy() for c in added}, index=frame.index)
    return pd.concat([frame.drop(columns=[c for c in added if c in frame.columns]), block], axis=1)


def _blank(frame: pd.DataFrame, columns: list[str]) -> pd.Series:
    return frame[columns].apply(lambda c: c.astype(str).str.strip() == "").all(axis=1)


def assemble(raw: str | Path, recipe: TableRecipe | dict, loaded: dict[str, pd.DataFrame] | None = None) -> pd.DataFrame:
    """The frame a recipe describes, every cell as text ("" when missing). `loaded` holds tables
    already read (path relative to raw/ -> frame), so perception does not read a file twice."""
    raw = Path(raw)
    recipe = TableRecipe.model_validate(recipe)
    frame = _read_parts(raw, recipe.files, loaded)
    if recipe.composed_key is not None:
        frame[recipe.composed_key.column] = recipe.composed_key.compose(frame).to_numpy()
    if recipe.beside:
        beside = _read_parts(raw, recipe.beside, loaded)
        if len(beside) != len(frame):
            raise ValueError(f"{recipe.beside[0]} has {len(beside)} rows but {recipe.files[0]} has {len(frame)}")
        for column in recipe.beside_columns:
            frame[column] = beside[column].to_numpy()
    for join in recipe.joins:
        frame = join_table(frame, _read_parts(raw, join.file, loaded), join)
    if recipe.rows != "all":
        blank = _blank(frame, recipe.target_columns)
        frame = frame[blank if recipe.rows == "target_blank" else ~blank]
    return frame.reset_index(drop=True)
