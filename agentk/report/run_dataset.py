"""The run report's data section: how many rows the solve trained and predicted on, the input
columns by kind, and each target's distribution, read from the maps the setup wrote."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from agentk.core.artifacts import SetupLayout
from agentk.core.maps import read_map
from agentk.core.records.results import SolveResult
from agentk.report.page import NotAvailable
from agentk.report.run_section import Missing, Record, json_or_empty, section

# Rows read to decide a column's kind: enough to tell numbers, dates, labels and prose apart.
SAMPLE_ROWS = 2000
# A class chart beyond this many classes shows the most frequent ones and says how many it left out.
MAX_CLASSES = 30
HISTOGRAM_BINS = 30


class FeatureColumn(Record):
    map: str  # the map file
    column: str
    kind: str  # numeric | categorical | date | text | boolean | image | empty


class TargetDistribution(Record):
    column: str
    task: str
    rows: int
    missing: int = 0
    classes: list[tuple[str, int]] = []  # most frequent first, at most MAX_CLASSES
    other_classes: int = 0  # classes left out of `classes`
    bins: list[tuple[float, float, int]] = []  # (from, to, count) for a regression target
    mean: float | None = None


class DatasetData(Record):
    n_train: int | NotAvailable
    n_test: int | NotAvailable
    n_train_total: int | None = None
    features: list[FeatureColumn] | NotAvailable
    targets: list[TargetDistribution] | NotAvailable


def read_dataset(root: Path, record: SolveResult | NotAvailable) -> DatasetData:
    """The data section; the sizes the solve recorded (`run_data.read_solve_result`), else the maps'."""
    layout = SetupLayout(root / "setup")
    recorded = record if isinstance(record, SolveResult) else SolveResult()
    return DatasetData(
        n_train=section("the training map", lambda: _size(recorded.n_train, layout, "train")),
        n_test=section("the test map", lambda: _size(recorded.n_test, layout, "test")),
        n_train_total=recorded.n_train_total,
        features=section("the input maps", lambda: _features(layout)),
        targets=section("the target map", lambda: _targets(layout)),
    )


def _size(recorded: int | None, layout: SetupLayout, split: str) -> int:
    if isinstance(recorded, int):
        return recorded
    maps = layout.input_maps(split)  # type: ignore[arg-type]
    if not maps:
        raise Missing(f"no {split} input map under setup/: the setup did not write it")
    return len(pd.read_csv(maps[0], usecols=["id"], dtype=str))


def _features(layout: SetupLayout) -> list[FeatureColumn]:
    maps = layout.input_maps("train")
    if not maps:
        raise Missing("no training input map under setup/: the setup did not write one")
    features = []
    for path in maps:
        frame = pd.read_csv(path, nrows=SAMPLE_ROWS, dtype={"id": str}, low_memory=False)
        code = path.name.split("_")[1]
        # Blank, boolean and number columns told apart for the whole frame at once: asked column by
        # column, a map 10,000 columns wide took seconds.
        blank, boolean = frame.isna().all(), frame.dtypes.map(pd.api.types.is_bool_dtype)
        numeric = frame.dtypes.map(pd.api.types.is_numeric_dtype)
        for column in frame.columns:
            if column == "id":
                continue
            kind = ({"img": "image", "txt": "text", "aud": "audio"}.get(code)
                    or ("empty" if blank[column] else "boolean" if boolean[column] else "numeric" if numeric[column]
                        else _column_kind(frame[column])))
            features.append(FeatureColumn(map=path.name, column=str(column), kind=kind))
    if not features:
        raise Missing("the training maps hold no feature column")
    return features


def _column_kind(values: pd.Series) -> str:
    present = values.dropna()
    if present.empty:
        return "empty"
    if pd.api.types.is_bool_dtype(present):
        return "boolean"
    if pd.api.types.is_numeric_dtype(present):  # before making text of every cell: 4,000 columns took seconds
        return "numeric"
    if set(present.astype(str).str.lower().unique()) <= {"true", "false"}:
        return "boolean"
    text = present.astype(str)
    if text.str.len().mean() > 30 and text.str.contains(" ").mean() > 0.5:
        return "text"
    if text.str.match(r"^\d{4}-\d{1,2}-\d{1,2}").mean() > 0.9:
        return "date"
    return "categorical"


def _targets(layout: SetupLayout) -> list[TargetDistribution]:
    """Each target's distribution over the training rows, from the map the setup wrote (raw labels
    or values), typed by target_info.json."""
    if not layout.target_map.is_file():
        raise Missing("setup/train_tab_target_map.csv is missing: the target stage did not pass")
    frame = read_map(layout.target_map)
    info = json_or_empty(layout.target_info).get("targets") or []
    tasks = {str(t.get("column")): str(t.get("task")) for t in info if isinstance(t, dict)}
    rows = []
    for column in (c for c in frame.columns if c != "id"):
        values = frame[column]
        task = tasks.get(str(column)) or ("regression" if pd.api.types.is_float_dtype(values) else "classes")
        present = values.dropna()
        dist = TargetDistribution(column=str(column), task=task, rows=len(values), missing=int(values.isna().sum()))
        if task == "regression":
            numbers = pd.to_numeric(present, errors="coerce").dropna().to_numpy(dtype=float)
            numbers = numbers[np.isfinite(numbers)]
            if numbers.size:
                counts, edges = np.histogram(numbers, bins=min(HISTOGRAM_BINS, max(1, len(np.unique(numbers)))))
                dist.bins = [(float(a), float(b), int(n)) for a, b, n in zip(edges[:-1], edges[1:], counts, strict=True)]
                dist.mean = float(numbers.mean())
        else:
            counts = present.astype(str).value_counts()
            dist.classes = [(str(label), int(n)) for label, n in counts.head(MAX_CLASSES).items()]
            dist.other_classes = max(0, len(counts) - MAX_CLASSES)
        rows.append(dist)
    if not rows:
        raise Missing("setup/train_tab_target_map.csv has no target column")
    return rows
