"""The submission a run hands in without a model and without a usable sample: one constant per
target column, over the test's ids, from what setup already knows.

Setup's deadline (deadline.py) can pass before any model is trained; the sample submission is
the answer then, but a competition may have none, or one its own check refuses (blank cells, an
id column under another name). What setup knows by then decides the constant: the ids come from
the sample, else the test map, else the test table the plan's facts name; the columns from the
sample, else the plan; each value from the train target (the target map, else the train table the
facts name, else the classes the facts list): the positive class's share where the metric scores
probabilities, a share per class for class-probability columns, the mean for a number, else the
most common label. Where a piece is missing the answer is None, and the run says it has none.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from agentk.core.artifacts import SetupLayout
from agentk.core.maps import MapError, id_text, read_map
from agentk.core.metrics import UnknownMetricError, get_metric, normalise_labels
from agentk.core.readers import read_csv_text
from agentk.core.reading.record_bounds import UnreadableTable
from agentk.core.records.workspace import Workspace
from setup_pipeline.expert.targets import default_positive
from setup_pipeline.perception.recipe import assemble
from unit_tests_setup.files import find_sample_submission, test_ids

# A ranking metric's row lists this many labels when the facts do not say (MAP@5 is the common one).
_RANKED_LABELS = 5


@dataclass(frozen=True)
class ConstantSubmission:
    frame: pd.DataFrame
    described: str  # one phrase per value column: "Survived = 0 (the commonest in train)"
    ids: list[str]  # the test's ids, wherever they were read from

def constant_submission(workspace: Workspace, plan: dict) -> ConstantSubmission | None:
    """The constant submission for this workspace, or None when setup knows too little to write
    one (no ids, no columns, or a column it has no value for)."""
    sample = _sample(workspace, plan)
    id_column = plan.get("id_column") if isinstance(plan.get("id_column"), str) else None
    if sample is not None:
        columns = list(sample.columns)
        id_column = id_column if id_column in columns else columns[0]
        ids = sample[id_column]
    else:
        columns = plan.get("submission_columns")
        if not isinstance(columns, list) or not columns or "..." in columns or id_column not in columns:
            return None
        ids = _test_ids(workspace, plan)
    if ids is None or ids.empty:
        return None
    values = _TrainTargets(workspace, plan)
    frame = pd.DataFrame({id_column: ids.to_numpy()})
    described = []
    answers = [c for c in columns if c != id_column]
    # One answer column for one target: the same, whatever the sample calls it ("Label" for "label").
    alias = values.target_columns[0] if len(answers) == 1 and len(values.target_columns) == 1 else None
    for column in answers:
        value = values.constant(column if alias is None or values.known(column) else alias)
        if value is None:
            return None
        frame[column] = value[0]
        described.append(f"{column} = {value[0]}{value[1]}")
    shown = ", ".join(described[:3]) + (" …" if len(described) > 3 else "")
    return ConstantSubmission(frame[columns], shown, [str(i) for i in ids])


def _sample(workspace: Workspace, plan: dict) -> pd.DataFrame | None:
    path = find_sample_submission(workspace.raw, plan)
    if path is None:
        return None
    try:
        frame = read_csv_text(path)
    except (UnreadableTable, UnicodeDecodeError, ValueError, OSError):
        return None
    # A sample without rows shows no ids: the submission check counts it as none too.
    return frame if len(frame.columns) >= 2 and len(frame) else None


def _facts(plan: dict) -> dict:
    facts = plan.get("facts")
    return facts if isinstance(facts, dict) else {}


def _test_ids(workspace: Workspace, plan: dict) -> pd.Series | None:
    """The test's ids: the test map's when setup wrote one, else the test table's key column (or
    the row numbers the facts count from)."""
    try:
        ids = test_ids(workspace.setup)
    except MapError:
        ids = None
    if ids is not None:
        return pd.Series(ids)
    facts = _facts(plan)
    table = _read(workspace.raw, facts.get("test_table"))
    if table is None:
        return None
    key = facts.get("test_id_column")
    if isinstance(key, str) and key in table.columns:
        return id_text(table[key])
    start = facts.get("test_row_id_start")
    return pd.Series([str(start + i) for i in range(len(table))]) if isinstance(start, int) else None


def _read(raw: Path, recipe: object) -> pd.DataFrame | None:
    if not isinstance(recipe, dict):
        return None
    try:
        return assemble(raw, recipe)
    except (UnreadableTable, ValueError, KeyError, OSError):
        return None


class _TrainTargets:
    """Each submission column's constant, from the train target's values, read once."""

    def __init__(self, workspace: Workspace, plan: dict) -> None:
        self.workspace = workspace
        self.plan = plan
        self.targets = {t["column"]: t for t in _facts(plan).get("targets") or [] if isinstance(t, dict) and "column" in t}
        named = plan.get("target_columns")
        self.target_columns = [c for c in named if isinstance(c, str)] if isinstance(named, list) else list(self.targets)
        try:
            self.kind = get_metric(str(plan.get("metric"))).kind
        except UnknownMetricError:
            self.kind = None
        self._train: pd.DataFrame | None | bool = False  # False: not read yet

    def known(self, column: str) -> bool:
        """Whether the column is a target, or a class of the one target, as train writes them."""
        if column in self.target_columns:
            return True
        labels = self._values(self.target_columns[0]) if len(self.target_columns) == 1 else None
        return labels is not None and column in set(labels.astype(str).str.strip())

    def constant(self, column: str) -> tuple[object, str] | None:
        """(value, how it was chosen) for one submission column, or None."""
        if column in self.target_columns:
            return self._target_constant(column)
        # A probability per class: the submission's columns are the single target's classes.
        labels = self._values(self.target_columns[0]) if len(self.target_columns) == 1 else None
        if labels is None or not len(labels):
            return None
        cells = labels.astype(str).str.strip()
        shares = pd.Series(normalise_labels(cells[cells != ""].to_numpy())).value_counts(normalize=True)
        named = str(normalise_labels([column])[0])
        if named in shares.index or _facts(self.plan).get("submission_format") == "per_class_proba":
            return round(float(shares.get(named, 0.0)), 6), " (its share of train)"
        return None

    def _target_constant(self, column: str) -> tuple[object, str] | None:
        values = self._values(column)
        task = self._task(column)
        if values is None or not len(values):
            known = self.targets.get(column, {})
            listed = known.get("sample_values") or known.get("classes") or []
            return (listed[0], " (as the facts list it)") if listed and task != "regression" else None
        cells = values.astype(str).str.strip()
        cells = cells[cells != ""]
        if cells.empty:
            return None
        numbers = pd.to_numeric(cells, errors="coerce")
        if self.kind == "ranking":
            return " ".join(cells.value_counts().index[:int(_facts(self.plan).get("top_k") or _RANKED_LABELS)]), " (the commonest labels)"
        if self.kind == "proba" and task == "binary":
            return round(float((cells == self._positive(column, cells)).mean()), 6), " (the train prior)"
        if (task == "regression" or self.kind == "value") and numbers.notna().all():
            return round(float(numbers.mean()), 6), " (the train mean)"
        return cells.value_counts().index[0], " (the commonest in train)"

    def _task(self, column: str) -> str | None:
        task = self.targets.get(column, {}).get("task") or self.plan.get("task_type")
        return task if isinstance(task, str) else None

    def _positive(self, column: str, cells: pd.Series) -> str:
        known = self.targets.get(column, {})
        if isinstance(known.get("positive_class"), str):
            return known["positive_class"]
        return default_positive([str(c) for c in known.get("classes") or sorted(cells.unique())])

    def _values(self, column: str) -> pd.Series | None:
        if self._train is False:
            self._train = self._read_train()
        train = self._train
        return train[column] if isinstance(train, pd.DataFrame) and column in train.columns else None

    def _read_train(self) -> pd.DataFrame | None:
        """The target map when setup wrote it, else the train table the facts name."""
        try:
            return read_map(SetupLayout(self.workspace.setup).target_map, text=True)
        except MapError:
            return _read(self.workspace.raw, _facts(self.plan).get("train_table"))
