"""What the solver leaves on disk: submissions, per-candidate files and prediction frames.

Every file is written atomically, so a solver killed at any moment leaves either the previous
submission or the new one, never half of one; the adopted submission itself goes through
`submission_record.adopt_submission`, which also keeps it from ever getting worse.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from agentk.core.artifacts import SetupLayout
from agentk.core.metrics.direction import Direction
from agentk.core.records.workspace import replacing
from solve_pipeline.base.cv import Predictions, emit, prediction_frame
from solve_pipeline.base.dataset import FeatureSet
from solve_pipeline.base.setup_modules import SetupArtifacts
from solve_pipeline.base.submission_check import validate_submission


def write_csv_atomic(frame: pd.DataFrame, path: Path) -> None:
    with replacing(path) as tmp:
        frame.to_csv(tmp, index=False)


def formatted_submission(artifacts: SetupArtifacts, features: FeatureSet,
                         predictions: dict[str, Predictions]) -> pd.DataFrame:
    """The setup's formatter applied to the test predictions: the one path every submission takes."""
    outputs = {t: p.test for t, p in predictions.items()}
    decoders = {t: p.decoder for t, p in predictions.items()}
    pred = prediction_frame(features.test_ids, artifacts.targets, outputs, artifacts, decoders)
    formatted = artifacts.submission.format_submission(pred.copy())
    if not isinstance(formatted, pd.DataFrame) or formatted.empty:
        raise ValueError("format_submission did not return a non-empty DataFrame")
    return formatted


def check_against_formatter(artifacts: SetupArtifacts, path: Path) -> None:
    """The formatter's own dummy output names the columns Kaggle expects; a mismatch is reported,
    while the orchestrator's validation against the sample stays the real gate."""
    reference = artifacts.setup_dir / SetupLayout.SUBMISSION_FORMAT_CHECK
    if reference.is_file():
        frame = pd.read_csv(reference, dtype=str, keep_default_na=False)
        # Columns the formatter itself leaves blank repeat test inputs with missing cells (the
        # setup's check accepted them): blanks there are no problem.
        blank = [c for c in frame.columns if bool((frame[c].str.strip() == "").any())]
        problems = validate_submission(path, sample_path=None, expected_columns=list(frame.columns), echoed=blank)
        if problems:
            emit("submission_problems", problems=problems)


def save_prediction_frames(artifacts: SetupArtifacts, features: FeatureSet,
                           results: dict[str, Predictions], name: str) -> None:
    """OOF and test prediction frames per candidate, for later blending and inspection."""
    folder = artifacts.workspace / "solve" / "predictions"
    decoders = {t: p.decoder for t, p in results.items()}
    oof = prediction_frame(features.train_ids, artifacts.targets,
                           {t: p.oof for t, p in results.items()}, artifacts, decoders)
    test = prediction_frame(features.test_ids, artifacts.targets,
                            {t: p.test for t, p in results.items()}, artifacts, decoders)
    write_csv_atomic(oof, folder / f"{name}_oof.csv")
    write_csv_atomic(test, folder / f"{name}_test.csv")


def candidates_dir(artifacts: SetupArtifacts) -> Path:
    return artifacts.workspace / "submissions" / "candidates"


def clear_candidates(artifacts: SetupArtifacts) -> None:
    """Files left by an earlier solve would otherwise pass for this solve's candidates."""
    folder = candidates_dir(artifacts)
    if folder.is_dir():
        for stale in folder.glob("*.csv"):
            stale.unlink()


def write_candidate(artifacts: SetupArtifacts, features: FeatureSet, results: dict[str, Predictions],
                    name: str, score: float) -> dict[str, object] | None:
    """The candidate's own submission, so the orchestrator can send more than the single best."""
    if not math.isfinite(score):
        return None  # without a validation score it cannot be ranked against the others
    path = candidates_dir(artifacts) / f"{name}.csv"
    try:
        write_csv_atomic(formatted_submission(artifacts, features, results), path)
    except Exception as error:  # noqa: BLE001 - untrusted formatter: one lost candidate file must not sink the run
        emit("skip_candidate", model=name, reason=f"{type(error).__name__}: {error}")
        return None
    return {"model": name, "validation_score": score,
            "path": path.relative_to(artifacts.workspace).as_posix()}


def ranked_candidates(candidates: list[dict[str, object]], higher_is_better: bool) -> list[dict[str, object]]:
    """Best first by validation; the sort is stable, so ties keep the order the solver adopted them in."""
    return Direction(higher_is_better).ranked(candidates, key=lambda c: float(c["validation_score"]))  # type: ignore[arg-type]
