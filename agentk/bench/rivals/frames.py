"""Subprocess side of the rivals: model outputs → the architecture's prediction frame → the setup's
formatter → submission.csv.

This imports the workspace's generated modules (untrusted code), so it only runs inside a sandboxed
subprocess: the LightGBM rival's own process, and `python -m agentk.bench.rivals.frames` for
AutoGluon, whose predictions come from another venv's interpreter as a file.

The prediction frame is the contract's own builder (`agentk.core.predictions`), the one the
solver uses too: the rivals depend on the contract, not on solver internals.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd

from agentk.core.predictions import prediction_frame as build_prediction_frame
from agentk.core.records.workspace import replacing
from solve_pipeline.base.setup_modules import SetupArtifacts, TargetSpec

# A class a model never saw must not make log loss infinite (the solver floors the same way).
PROBA_FLOOR = 1e-6


def enter_setup(workspace: Path) -> SetupArtifacts:
    """Load the artifacts with cwd = setup/, the generated code's contract."""
    setup = Path(workspace).resolve() / "setup"
    os.chdir(setup)
    artifacts = SetupArtifacts.load(Path(workspace))
    artifacts.require_solvable()
    return artifacts


def normalise(proba: np.ndarray) -> np.ndarray:
    proba = np.clip(np.nan_to_num(np.asarray(proba, dtype=float), nan=0.0), PROBA_FLOOR, 1.0)
    return proba / proba.sum(axis=1, keepdims=True)


def prediction_frame(artifacts: SetupArtifacts, ids: Sequence[str], outputs: dict[str, np.ndarray],
                     regression_scale: Literal["transformed", "original"] = "transformed") -> pd.DataFrame:
    """`outputs[t]`: (n, K) probabilities in target_info class order for classifiers; (n,) values
    for regressors, on the transformed scale (inverse() applied) or already `original`."""
    return build_prediction_frame(ids, artifacts.targets, outputs, artifacts.transform.inverse,
                                  regression_scale=regression_scale)


def write_formatted(artifacts: SetupArtifacts, frame: pd.DataFrame, out: Path) -> None:
    formatted = artifacts.submission.format_submission(frame.copy())
    if not isinstance(formatted, pd.DataFrame) or formatted.empty:
        raise ValueError("format_submission did not return a non-empty DataFrame")
    with replacing(out) as tmp:
        formatted.to_csv(tmp, index=False)


def label_key(value: Any) -> str:
    """Labels compared as text, with numbers canonical ("1.0" and 1 match) and booleans by name."""
    text = str(value).strip()
    try:
        number = float(text)
    except ValueError:
        return text.lower() if text.lower() in ("true", "false") else text
    if math.isfinite(number) and number == int(number):
        return str(int(number))
    return repr(number)


def align_probabilities(spec: TargetSpec, labels: list[str], proba: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """Columns of `proba` (one per `labels`) reordered into the spec's classes; returns the
    (n, K) matrix and the labels that matched no class of the spec."""
    index = {label_key(c): k for k, c in enumerate(spec.classes or [])}
    out = np.zeros((proba.shape[0], spec.n_classes))
    unmatched = []
    for j, label in enumerate(labels):
        k = index.get(label_key(label))
        if k is None:
            unmatched.append(label)
        else:
            out[:, k] += proba[:, j]
    return normalise(out), unmatched


def format_external(workspace: Path, predictions: Path, out: Path) -> dict[str, Any]:
    """Turn an external system's predictions (`predictions.csv` + `predictions.json` from the
    AutoGluon runner: original labels' probabilities or original-scale values) into a submission."""
    artifacts = enter_setup(workspace)
    meta = json.loads((predictions / "predictions.json").read_text())
    table = pd.read_csv(predictions / "predictions.csv", dtype={"id": str})
    table["id"] = table["id"].astype(str).str.strip()
    table = table.drop_duplicates("id").set_index("id")
    ids = artifacts.test_ids
    missing = [i for i in ids if i not in table.index]
    if missing:
        raise ValueError(f"{len(missing)} test ids have no prediction, e.g. {missing[:3]}")
    table = table.loc[ids]
    outputs: dict[str, np.ndarray] = {}
    notes: list[str] = []
    for spec in artifacts.targets:
        target = meta["targets"].get(spec.column)
        if target is None:
            raise ValueError(f"no predictions for target {spec.column!r}")
        if spec.is_classification:
            labels = [str(c) for c in target["classes"]]
            proba = table[[f"{spec.column}__proba__{j}" for j in range(len(labels))]].to_numpy(dtype=float)
            outputs[spec.column], unmatched = align_probabilities(spec, labels, proba)
            if unmatched:
                notes.append(f"{spec.column}: labels {unmatched[:5]} match no setup class")
        else:
            outputs[spec.column] = table[spec.column].to_numpy(dtype=float)
    write_formatted(artifacts, prediction_frame(artifacts, ids, outputs, regression_scale="original"), out)
    return {"notes": notes}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m agentk.bench.rivals.frames",
                                     description="Format an external system's predictions with the setup's formatter.")
    parser.add_argument("workspace", type=Path)
    parser.add_argument("predictions", type=Path, help="folder with predictions.csv and predictions.json")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    report = format_external(args.workspace.resolve(), args.predictions.resolve(), args.out.resolve())
    print(json.dumps({"event": "formatted", **report}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
