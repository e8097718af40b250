"""A blend's recipe for unseen rows: the fitted blender over its parts' test predictions, the very
code the blend phase ran on the test rows (blending.blended_test)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from solve_pipeline.base.replay import TargetReplay
from solve_pipeline.base.table_inputs import Rows
from solve_pipeline.blend.blending import _layout, as_class_matrix, blended_test


@dataclass
class BlendReplay(TargetReplay):
    """A blend of solutions: the fitted blender over their test predictions (and the table's
    columns, where it read them), back in the solver's layout."""

    method: str
    blender: Any
    parts: list[TargetReplay | None]
    task: str
    with_table: bool = False

    def test(self, rows: Rows) -> np.ndarray:
        from solve_pipeline.base.cv import normalise_proba

        tests = [_layout(part.test(rows), self.task) for part in self.parts if part is not None]  # type: ignore[arg-type]
        table = np.asarray(rows.tab, dtype=np.float64) if self.with_table else None
        test = as_class_matrix(blended_test(self.method, self.blender, tests, self.task, table), self.task)  # type: ignore[arg-type]
        return normalise_proba(test) if self.task != "regression" else test
