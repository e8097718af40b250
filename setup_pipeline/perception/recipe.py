"""How the train or test frame is assembled from the files: the one contract between perception
(which decides it) and the generated map code (which runs it through `assemble`).

A recipe concatenates parts, joins feature tables on a key, puts a row-aligned table beside it
(`y_train` next to `X_train`), keeps the rows whose targets are present or blank (one file holding
both train and test), and can take ids from the sample submission by row order.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import pandas as pd
from pydantic import BaseModel

from agentk.core.readers import read_table


class Join(BaseModel):
    file: list[str]  # the joined table's parts, relative to raw/
    on: str  # key column in the frame
    other_on: str  # key column in the joined table
    columns: list[str]  # the joined table's columns to bring in
    # Several rows per key (a customer's past loans): numbers averaged, words by their most common
    # value, and the number of rows as `count_column`.
    aggregate: bool = False
    count_column: str | None = None


class TableRecipe(BaseModel):
    files: list[str]  # parts, concatenated in order; paths relative to raw/
    beside: list[str] = []  # a table aligned row by row with the frame (its parts)
    beside_columns: list[str] = []
    joins: list[Join] = []
    rows: Literal["all", "target_present", "target_blank"] = "all"
    target_columns: list[str] = []  # what `rows` looks at

    def describe(self) -> str:
        text = " + ".join(self.files)
        if self.beside:
            text += f" beside {' + '.join(self.beside)}"
        for join in self.joins:
            text += f" joined with {' + '.join(join.file)} on {join.on}"
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


def _blank(frame: pd.DataFrame, columns: list[str]) -> pd.Series:
    return frame[columns].apply(lambda c: c.astype(str).str.strip() == "").all(axis=1)


def assemble(raw: str | Path, recipe: TableRecipe | dict, loaded: dict[str, pd.DataFrame] | None = None) -> pd.DataFrame:
    """The frame a recipe describes, every cell as text ("" when missing). `loaded` holds tables
    already read (path relative to raw/ -> frame), so perception does not read a file twice."""
    raw = Path(raw)
    recipe = TableRecipe.model_validate(recipe)
    frame = _read_parts(raw, recipe.files, loaded)
    if recipe.beside:
        beside = _read_parts(raw, recipe.beside, loaded)
        if len(beside) != len(frame):
            raise ValueError(f"{recipe.beside[0]} has {len(beside)} rows but {recipe.files[0]} has {len(frame)}")
        for column in recipe.beside_columns:
            frame[column] = beside[column].to_numpy()
    for join in recipe.joins:
        other = _read_parts(raw, join.file, loaded)
        other = other[[join.other_on, *join.columns]].rename(columns={join.other_on: "__key__"})
        other["__key__"] = other["__key__"].astype(str).str.strip()
        other = _aggregate(other, join) if join.aggregate else other.drop_duplicates(subset=["__key__"])
        keys = frame[join.on].astype(str).str.strip()
        merged = pd.DataFrame({"__key__": keys}).merge(other, on="__key__", how="left")
        for column in [c for c in other.columns if c != "__key__"]:
            frame[column] = merged[column].fillna("").to_numpy()
    if recipe.rows != "all":
        blank = _blank(frame, recipe.target_columns)
        frame = frame[blank if recipe.rows == "target_blank" else ~blank]
    return frame.reset_index(drop=True)
