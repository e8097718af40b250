"""What a valid submission is for this workspace: the sample submission's shape when there is one,
else the plan's columns over the test map's ids. A sample that holds no row (or none readable)
shows no shape to follow, and counts as none."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from agentk.core.maps import MapError
from agentk.core.readers import read_table
from agentk.core.reading.record_bounds import UnreadableTable
from agentk.core.records.workspace import Workspace
from unit_tests_setup.files import find_sample_submission, test_ids
from solve_pipeline.base.submission_check import validate_submission


def validate_against_setup(workspace: Workspace, submission: Path, plan: dict,
                           ids: Sequence[str] | None = None) -> list[str]:
    """Problems with `submission` (none: valid). `ids`: the test's ids where setup has written no
    test map yet (a submission handed in at setup's deadline reads them from the test table)."""
    sample = find_sample_submission(workspace.raw, plan)
    if sample is not None and not _has_rows(sample):
        sample = None
    # Columns repeating test inputs (the plan may name them) keep the test's missing cells.
    echoed = [c for c in plan.get("echo_columns") or [] if isinstance(c, str)]
    if sample is not None:
        # Targets the plan calls values (two counts, say) are no probabilities, whatever the sample shows.
        probabilities = False if plan.get("task_type") in ("regression", "mask") else None
        return validate_submission(submission, sample_path=sample, id_column=plan.get("id_column"), echoed=echoed,
                                   probabilities=probabilities, **_mask_rules(plan))
    columns = plan.get("submission_columns")
    if not isinstance(columns, list) or not columns or "..." in columns:
        return ["there is no sample submission and plan.json names no complete submission_columns"]
    try:
        mapped = test_ids(workspace.setup)
    except MapError as exc:
        return [str(exc)]
    ids = mapped if mapped is not None else ids
    if ids is None:
        return ["there is no sample submission and no test input map to take the ids from"]
    return validate_submission(submission, sample_path=None, expected_ids=ids, expected_columns=columns,
                               id_column=plan.get("id_column"), echoed=echoed)


def _has_rows(sample: Path) -> bool:
    try:
        return not read_table(sample, nrows=1).empty
    except (UnreadableTable, OSError, ValueError):
        return False


def _mask_rules(plan: dict) -> dict:
    """A segmentation plan's submission holds run-length masks, maybe one row per object; a
    detection plan's, one cell of boxes per picture."""
    if plan.get("task_type") != "mask":
        return {}
    masks = (plan.get("facts") or {}).get("masks") or {}
    encoded = [c for c in plan.get("target_columns") or [] if isinstance(c, str)]
    if masks.get("output") == "boxes":
        return {"encoded": encoded, "encoding": "boxes"}
    return {"encoded": encoded, "repeated_ids": bool(masks.get("per_object"))}
