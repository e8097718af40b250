"""The prediction frame, the solver's hand-over to the setup's formatter and metric: `id`, each
target's original label or value, and one probability column per class of a classifier."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd

from agentk.core.artifacts import CLASSIFICATION_TASKS


@dataclass(frozen=True)
class TargetSpec:
    """One entry of target_info.json."""

    column: str
    task: str
    classes: list | None = None

    @property
    def is_classification(self) -> bool:
        return self.task in CLASSIFICATION_TASKS

    @property
    def n_classes(self) -> int:
        return len(self.classes) if self.classes else 0

    def proba_column(self, label: object) -> str:
        return f"{self.column}__proba__{label}"


def prediction_frame(
    ids: Sequence[str],
    targets: Sequence[TargetSpec],
    outputs: Mapping[str, np.ndarray],
    inverse: Callable[[pd.DataFrame], pd.DataFrame],
    class_indices: Mapping[str, np.ndarray] | None = None,
    regression_scale: Literal["transformed", "original"] = "transformed",
) -> pd.DataFrame:
    """The architecture's prediction frame: `id`, each target's original label or value, and one
    `<target>__proba__<class>` column per class of a classifier.

    `outputs[t]` is an (n, K) probability matrix in target_info's class order for a classifier
    and (n,) values for a regressor. A classifier's label is `class_indices[t]` when given (a
    tuned decoder's choice), else the most probable class. `inverse` is the setup's
    inverse target transform; regression values already on the `original` scale bypass it.
    """
    ids = ids if isinstance(ids, np.ndarray) else list(ids)  # the solver's scoring passes row positions
    transformed = pd.DataFrame({"id": ids})
    for spec in targets:
        out = outputs[spec.column]
        if spec.is_classification:
            chosen = (class_indices or {}).get(spec.column)
            transformed[spec.column] = (out.argmax(axis=1) if chosen is None else np.asarray(chosen)).astype(int)
        else:
            # Original-scale values bypass inverse(); a neutral placeholder keeps its input whole.
            transformed[spec.column] = out if regression_scale == "transformed" else 0.0
    original = inverse(transformed.copy())
    if len(original) != len(transformed):
        raise ValueError("inverse() changed the number of rows")
    # Built in one go: inserting 99 probability columns one by one cost ~0.2 s a frame, paid on
    # every metric call (leaf's species).
    columns: dict[str, Any] = {"id": ids}
    for spec in targets:
        if spec.is_classification or regression_scale == "transformed":
            columns[spec.column] = np.asarray(original[spec.column])
        else:
            columns[spec.column] = np.asarray(outputs[spec.column], dtype=float)
        if spec.is_classification:
            for k, label in enumerate(spec.classes or []):
                columns[spec.proba_column(label)] = outputs[spec.column][:, k]
    return pd.DataFrame(columns)


