"""`agentk predict WORKSPACE TEST_DIR`: the run's predictor on new test files, from the workspace.

The same predictor as `agentk export` writes, run the same way (`predict.py`), so both give one
file for one folder. It runs the setup's generated code and loads a pickle a sandboxed solve
wrote, so it runs in the sandbox too: it reads the test folder and writes only its own folder.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

from agentk.core.sandbox.isolation import Mounts
from agentk.core.predictor_layout import ExportLayout
from agentk.core.sandbox.sandbox import Limits, run_python
from solve_pipeline.export.bundle import ExportError, export

PREDICT_TIMEOUT_S = 3600.0


def predict_workspace(workspace: Path, test_dir: Path, out: Path, timeout_s: float = PREDICT_TIMEOUT_S) -> Path:
    """Write the submission for `test_dir`'s files to `out`; ExportError says why it could not."""
    test_dir, out = Path(test_dir).resolve(), Path(out).resolve()
    if not test_dir.is_dir():
        raise ExportError(f"{test_dir} is no folder")
    with tempfile.TemporaryDirectory(prefix="agentk-predict-") as tmp:
        room = Path(tmp)
        bundle = export(workspace, room / "predictor")
        written = room / "submission.csv"
        result = run_python([str(ExportLayout(bundle.out).script), str(test_dir), str(written)], cwd=room,
                            limits=Limits(timeout_s=timeout_s), mounts=Mounts.of(read=[test_dir]))
        if not result.ok or not written.is_file():
            lines = [line for line in result.error_summary().splitlines() if line.strip()]
            raise ExportError(lines[-1].removeprefix("error: ") if lines else "the predictor wrote no submission")
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(written, out)
    return out


if __name__ == "__main__":  # pragma: no cover - a debugging entry
    print(predict_workspace(Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])))
