"""`agentk export WORKSPACE OUT`: the run's chosen submission as a predictor to take away.

OUT holds the solve's pickled predictor (its record says what it was checked against), the
setup's generated code that turns test files into the model's rows and predictions into the
submission, the agentk modules both import (`lib/`, found by code_closure.py), `predict.py`,
`requirements.txt` pinned to the versions installed here, and a README. Nothing of the training
data travels: no map, no raw file, no out-of-fold prediction.

Nothing here runs the workspace's code or loads its pickle (both may come from model-written
code): files are copied and read as text.
"""

from __future__ import annotations

import json
import platform
import shutil
from dataclasses import dataclass
from pathlib import Path

from agentk.core.artifacts import SetupLayout
from agentk.core.errors import AgentKError
from agentk.core.predictor_layout import ExportLayout, PredictorLayout
from solve_pipeline.export.code_closure import closure, pickled_modules, requirements, source_root
from solve_pipeline.base.submission_record import file_sha256
from solve_pipeline.export.saved import read_record

# What the predictor imports to run, besides what the pickle and the setup's code name.
RUNTIME_MODULES = {"solve_pipeline.export.predictor"}
# The setup's files that travel: its generated code and what it writes about the targets. Never
# the maps, which hold the training rows.
SETUP_FILES = (SetupLayout.CODE_GLOB, SetupLayout.TARGET_INFO, SetupLayout.MODALITIES, SetupLayout.PLAN)

SCRIPT = '''#!/usr/bin/env python3
"""The predictor of agentk's run on {competition}: `python predict.py TEST_DIR SUBMISSION.csv`.

TEST_DIR holds the test files as the competition's data folder names them (its test table and,
where the submission follows one, its sample submission). See README.md.
"""
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "{lib}"))

from solve_pipeline.export.predictor import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(HERE, sys.argv[1:]))
'''

README = '''# Predictor of agentk's run on {competition}

    pip install -r requirements.txt    # Python {python}
    python predict.py TEST_DIR SUBMISSION.csv

`TEST_DIR` holds test files laid out as the competition's data folder (the same file names:
{files}). The setup's own code (`setup/`) reads them into the model's rows, the models in
`predictor/` predict ({models}; validation score {score}), and the setup's submission code writes
the file. Rows may be any rows, in any order: each gets the prediction the run would have made.
No internet, no agentk install and no training data are needed: `lib/` holds the modules used.
'''


class ExportError(AgentKError):
    """The workspace cannot be exported; the message says why, in one line."""


@dataclass(frozen=True)
class Exported:
    out: Path
    models: dict[str, str]
    requirements: list[str]
    modules: int


def _data_dir(workspace: Path) -> str:
    """Where the data files sit in the agent's view (raw/): a test folder takes their place."""
    return "data" if (workspace / "raw" / "data").is_dir() else "."


def _test_files(workspace: Path, data_dir: str) -> list[str]:
    folder = workspace / "raw" / data_dir
    names = sorted(p.name for p in folder.iterdir() if p.is_file() and "train" not in p.name.lower()) \
        if folder.is_dir() else []
    return names[:6]


def check_exportable(workspace: Path) -> dict:
    """The predictor's record, when it matches the submission on disk; else ExportError."""
    record = read_record(workspace)
    if record is None:
        raise ExportError(f"{workspace} holds no predictor: run `agentk run` (a full solve, not --light) first")
    if not record.get("exportable"):
        raise ExportError(f"the run's submission cannot be exported: {record.get('reason', 'no reason recorded')}")
    layout = PredictorLayout.in_workspace(workspace)
    submission = workspace / "submissions" / "submission.csv"
    if not submission.is_file() or file_sha256(submission) != record.get("submission_sha256"):
        raise ExportError("submissions/submission.csv is not the file the predictor was saved with")
    if not layout.model.is_file() or file_sha256(layout.model) != record.get("predictor_sha256"):
        raise ExportError(f"{layout.model} is missing or changed since the solve wrote it")
    return record


def _clear(out: Path) -> None:
    """OUT is made anew: empty, missing, or an earlier export (never any other folder)."""
    if out.exists():
        if not out.is_dir() or (any(out.iterdir()) and not ExportLayout(out).manifest.is_file()):
            raise ExportError(f"{out} exists and is no earlier export: choose an empty or new folder")
        shutil.rmtree(out)
    out.mkdir(parents=True)


def export(workspace: Path, out: Path) -> Exported:
    workspace, out = Path(workspace).resolve(), Path(out).resolve()
    record = check_exportable(workspace)
    if out == workspace or workspace in out.parents:
        raise ExportError("OUT must lie outside the workspace")
    _clear(out)
    layout = ExportLayout(out)
    source = PredictorLayout.in_workspace(workspace)
    layout.predictor.dir.mkdir()
    for name in (PredictorLayout.MODEL, PredictorLayout.RECORD):
        shutil.copy2(source.dir / name, layout.predictor.dir / name)
    setup = workspace / "setup"
    layout.setup.mkdir()
    for pattern in SETUP_FILES:
        for path in sorted(setup.glob(pattern)):
            if path.is_file() and not path.is_symlink():
                shutil.copy2(path, layout.setup / path.name)
    scripts = sorted(layout.setup.glob(SetupLayout.CODE_GLOB))
    root = source_root()
    pickled = pickled_modules(layout.predictor.model)
    own, external = closure(root, RUNTIME_MODULES | pickled, scripts)
    for name, path in own.items():
        target = layout.lib / path.relative_to(root)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, target)
    pins = requirements(external | {m.split(".")[0] for m in pickled})
    layout.requirements.write_text(f"# Python {platform.python_version()}\n" + "".join(f"{p}\n" for p in pins),
                                   encoding="utf-8")
    competition = workspace.name
    layout.script.write_text(SCRIPT.format(competition=competition, lib=ExportLayout.LIB), encoding="utf-8")
    layout.script.chmod(0o755)
    data_dir = _data_dir(workspace)
    result = json.loads((workspace / "solve" / "solve_result.json").read_text(encoding="utf-8")) \
        if (workspace / "solve" / "solve_result.json").is_file() else {}
    models = dict(record.get("models") or {})
    (out / ExportLayout.README).write_text(README.format(
        competition=competition, python=platform.python_version(),
        files=", ".join(_test_files(workspace, data_dir)) or "the test files",
        models=", ".join(f"{t}: {m}" for t, m in models.items()),
        score=result.get("validation_score")), encoding="utf-8")
    layout.manifest.write_text(json.dumps({
        "competition": competition, "workspace": str(workspace), "data_dir": data_dir,
        "test_files": _test_files(workspace, data_dir), "models": models,
        "submission_sha256": record.get("submission_sha256"), "requirements": pins,
    }, indent=2), encoding="utf-8")
    return Exported(out, models, pins, len(own))
