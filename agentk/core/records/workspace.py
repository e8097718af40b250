"""A competition's workspace: its folders, and state written atomically so a killed run resumes."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from agentk.core.errors import WorkspaceError

# A readable, portable folder name: starts with a letter or digit (no ".", "..", hidden or
# option-like names, and none of the root's own "_kaggle", "_memory" ... folders).
_SAFE_COMPONENT = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_UNSAFE_RUN = re.compile(r"[^A-Za-z0-9._-]+")
_MAX_COMPONENT = 100
# What our own atomic writers leave behind when killed mid-write: `.<name>.<random>.tmp` files
# (atomic_write_text, the solver's outputs) and the `.<name>.building`/`.old` folders of
# sources.common.build_atomically.
_TEMP_FILE = re.compile(r"\..+\.tmp")
_TEMP_DIR = re.compile(r"\..+\.(building|old)")
# The agent's copy of the competition data: its names are the competition's, never ours.
_DATA_FOLDERS = ("raw",)


def safe_component(text: str) -> str:
    """`text` (a competition id from data) as one folder name that cannot leave its parent.

    Readable ids (titanic, spaceship-titanic, playground-series-s3e5) come back unchanged; any
    other text is reduced to its safe characters plus a hash of the original, so two different
    ids never share a folder and the result is a fixed point.
    """
    text = str(text)
    if len(text) <= _MAX_COMPONENT and _SAFE_COMPONENT.fullmatch(text):
        return text
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    readable = _UNSAFE_RUN.sub("-", text).lstrip("._-")[: _MAX_COMPONENT - len(digest) - 1].rstrip("-")
    return f"{readable}-{digest}" if readable else f"competition-{digest}"


def contained_path(root: str | Path, name: str) -> Path:
    """`root/<safe name>`, checked to resolve strictly inside `root` (a symlinked entry that
    points elsewhere is refused), so nothing outside the root is ever written or deleted."""
    base = Path(root).expanduser().resolve()
    path = (base / safe_component(name)).resolve()
    if path.parent != base:
        raise WorkspaceError(f"workspace for {name!r} would be {path}, outside {base}; refusing to use it")
    return path


def workspace_for(root: str | Path, competition_id: str) -> Workspace:
    """The workspace of a competition under --workspace-root."""
    return Workspace(contained_path(root, competition_id))


def remove_temp_files(root: Path) -> list[Path]:
    """Delete what our atomic writers leave when killed mid-write; the agent's data copy
    (raw/) is never searched, so files named like ours in the competition's data survive.
    Call it only while holding the workspace lock: another run's writes in flight look the same."""
    removed: list[Path] = []
    if not root.is_dir():
        return removed
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        if here == root:
            dirnames[:] = [d for d in dirnames if d not in _DATA_FOLDERS]
        for name in list(dirnames):
            if _TEMP_DIR.fullmatch(name) and not (here / name).is_symlink():
                shutil.rmtree(here / name, ignore_errors=True)
                dirnames.remove(name)
                removed.append(here / name)
        for name in filenames:
            if _TEMP_FILE.fullmatch(name):
                (here / name).unlink(missing_ok=True)
                removed.append(here / name)
    return removed


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


@contextmanager
def replacing(path: Path) -> Iterator[Path]:
    """The one way every file of a run is written: the caller fills the yielded temp file (in the
    same folder, named `.<name>.<random>.tmp`, which a resumed run clears); on a normal exit it is
    flushed to disk and renamed over `path`, so readers and a kill see the old file or the new one,
    never half of one. On an error the temp file goes and `path` is untouched."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        with open(tmp, "rb") as handle:
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def atomic_write_bytes(path: Path, data: bytes) -> None:
    with replacing(path) as tmp:
        tmp.write_bytes(data)


def read_json_object(path: Path) -> dict[str, Any]:
    """A JSON object from a file the agent wrote; {} when it is missing or not an object."""
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def json_lines(path: Path) -> Iterator[dict[str, Any]]:
    """The JSON objects of a .jsonl log, in order; nothing when the file is missing. A line that is
    not an object, or one torn by a writer killed mid-line, is skipped."""
    if not Path(path).is_file():
        return
    with Path(path).open(encoding="utf-8", errors="replace") as handle:
        for line in handle:
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if isinstance(record, dict):
                yield record


def atomic_write_json(path: Path, data: Any) -> None:
    atomic_write_text(path, json.dumps(data, indent=2, default=str) + "\n")


@dataclass(frozen=True)
class Workspace:
    """Paths of one competition's workspace; creating the object touches nothing on disk."""

    root: Path

    @property
    def raw(self) -> Path:
        return self.root / "raw"

    @property
    def setup(self) -> Path:
        return self.root / "setup"

    @property
    def solve(self) -> Path:
        return self.root / "solve"

    @property
    def submissions(self) -> Path:
        return self.root / "submissions"

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    @property
    def attempts_log(self) -> Path:
        """One line per setup attempt (setup_pipeline/mdp.py writes it)."""
        return self.logs / "attempts.jsonl"

    @property
    def state_path(self) -> Path:
        return self.root / "state.json"

    @property
    def result_path(self) -> Path:
        return self.root / "result.json"

    @property
    def submission_path(self) -> Path:
        return self.submissions / "submission.csv"

    def create(self) -> list[Path]:
        """Make the folders and clear a killed run's temp files; returns the files removed."""
        removed = remove_temp_files(self.root)
        for folder in (self.raw, self.setup, self.solve, self.submissions, self.logs):
            folder.mkdir(parents=True, exist_ok=True)
        return removed

    def load_state(self) -> RunState:
        if not self.state_path.exists():
            return RunState()
        return RunState.model_validate_json(self.state_path.read_text(encoding="utf-8"))

    def save_state(self, state: RunState) -> None:
        atomic_write_text(self.state_path, state.model_dump_json(indent=2) + "\n")


class StageState(BaseModel):
    attempts: int = 0
    passed: bool = False
    last_error: str | None = None


class MetaState(BaseModel):
    rounds: int = 0
    passed: bool = False


class RunState(BaseModel):
    """Everything needed to resume: which phase, and which setup stages already passed."""

    phase: str = "new"  # new → setup → solve → done
    policy: str | None = None
    stages: dict[str, StageState] = Field(default_factory=dict)
    meta: dict[str, MetaState] = Field(default_factory=dict)
    elapsed_s: float = 0.0
    error: str | None = None
    # Why setup failed when the run then handed in a submission without a model (phase "done"); a
    # resumed run tries setup again, and clears it once setup passes.
    setup_failure: str | None = None

    def stage(self, name: str) -> StageState:
        return self.stages.setdefault(name, StageState())

    def meta_check(self, name: str) -> MetaState:
        return self.meta.setdefault(name, MetaState())
