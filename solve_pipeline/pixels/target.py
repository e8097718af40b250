"""Whether a task's target is a picture (or a mask): read from the setup's target_info alone.

Its own module because the setup's checks ask it of every task, a table's too, and the pixel
solve's imports (scipy.ndimage, the pixel model) cost a second of CPU there for nothing.
"""

from __future__ import annotations

import json
from pathlib import Path

from agentk.core.artifacts import DENSE_TASKS, SetupLayout


def picture_target(setup_dir: Path, tasks: tuple[str, ...] = DENSE_TASKS) -> dict | None:
    """target_info's picture (or mask) target, or None when the task's targets are not pictures."""
    path = SetupLayout(setup_dir).target_info
    try:
        info = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return next((t for t in info.get("targets", []) if isinstance(t, dict) and t.get("task") in tasks), None)
