"""How a solution's test predictions are made again from unseen rows: the recipe each solution
carries beside its test array (`Predictions.replay`), built by the solve as it goes, pickled
into the predictor it leaves, and run by that predictor on the inputs of new rows.

Every step calls the code the solve itself ran on the test rows: the fold models' `predict`
averaged over the folds (cv.predict), the temperature (temperature.tempered), the bag's mean; the
blender's test side lives with the blender (blend/blend_replay.py). None of it holds a training row: the models, the
fitted maps and the blend's weights or stacker only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from agentk.core.predictions import TargetSpec
from solve_pipeline.base.table_inputs import InputReplay, Rows
from solve_pipeline.base.temperature import tempered


# What the fold models kept for the predictor may hold in memory over a solve, in all: forests
# grow a node per couple of training rows in each of their trees (spaceship's 7,000 rows: about
# 110 MB a fold), and every bag repeat keeps its own. Past it, a run keeps none (not exportable).
KEPT_MODELS_BYTES = 1 << 30


@dataclass
class KeptModels:
    """The bytes the solve's kept fold models hold (shared by every CV context of one solve)."""

    bytes: int = 0

    def admit(self, models: list[Any]) -> bool:
        size = sum(model_bytes(m) for m in models)
        if self.bytes + size > KEPT_MODELS_BYTES:
            return False
        self.bytes += size
        return True


def model_bytes(model: Any) -> int:
    """A fitted model's size in memory where it can be large (scikit-learn's tree ensembles,
    however deep they sit in wrappers); 0 for the compact ones (boosting, linear, naive Bayes)."""
    seen: set[int] = set()
    total, todo = 0, [model]
    while todo:
        item = todo.pop()
        if item is None or id(item) in seen or not hasattr(item, "__dict__"):
            continue
        seen.add(id(item))
        tree = getattr(item, "tree_", None)
        if tree is not None and hasattr(tree, "node_count"):
            total += int(tree.node_count) * (64 + int(np.prod(tree.value.shape[1:])) * 8)
            continue
        for name, value in vars(item).items():
            if isinstance(value, list) and name == "estimators_":
                todo.extend(value)
            elif name.endswith("_") or name in ("inner", "model"):
                todo.append(value)
    return total


class TargetReplay:
    """One target's test predictions, in the solver's layout, from the inputs of some rows."""

    def test(self, rows: Rows) -> np.ndarray:
        raise NotImplementedError


@dataclass
class FoldModels(TargetReplay):
    """A run's fold models averaged, as fit_fold summed them, then tempered where calibrated."""

    spec: TargetSpec
    inputs: InputReplay
    models: list[tuple[Any, float | None]]  # (fitted model, floor) in the order the folds ran
    n_folds: int
    temperature: float | None = None

    def test(self, rows: Rows) -> np.ndarray:
        from solve_pipeline.base.cv import predict  # lazy: cv carries these recipes (the predictor imports cv)

        X = self.inputs.test(rows)
        width = (self.spec.n_classes,) if self.spec.is_classification else ()
        out = np.zeros((X.shape[0], *width))
        for model, floor in self.models:
            out += predict(model, self.spec, X, floor) / self.n_folds
        return out if self.temperature is None else tempered(out, self.temperature)


@dataclass
class MeanReplay(TargetReplay):
    """A bag: the mean of its runs' test predictions."""

    parts: list[TargetReplay]

    def test(self, rows: Rows) -> np.ndarray:
        return np.mean([part.test(rows) for part in self.parts], axis=0)


def mean_replay(parts: list[TargetReplay | None]) -> MeanReplay | None:
    """None when any part cannot be replayed."""
    kept = [p for p in parts if p is not None]
    return MeanReplay(kept) if len(kept) == len(parts) and kept else None
