"""Reading a workspace's setup artifacts inside the solver subprocess.

The generated modules (`code_*.py`) are untrusted code written by a policy. They are imported
here, and this module is only ever imported by the solver process that the orchestrator runs in
its sandbox; the orchestrator itself must never import it on a workspace.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

import pandas as pd

from agentk.core.artifacts import DENSE_TASKS, MAP_CODES, MODULE_FILES, TASKS, TEXT_TASK, SetupLayout
from agentk.core.maps import read_map
from agentk.core.metrics.direction import Direction
from agentk.core.predictions import TargetSpec



def load_setup_module(path: Path, name: str) -> ModuleType:
    """Import a generated module from a file path, registered under `name`."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"setup module not found: {path}")
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    # Registered before exec so that dataclasses/pickling inside the module can find itself.
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


def _read_solver_map(path: Path) -> pd.DataFrame:
    """A map as `read_map` reads it; the solver also needs `id` first, which the map checks ensure."""
    frame = read_map(path)
    if frame.columns.empty or frame.columns[0] != "id":
        raise ValueError(f"{path.name}: the first column must be named 'id'")
    return frame


def parse_target_info(info: dict) -> list[TargetSpec]:
    """Validate target_info.json into TargetSpecs (fails loudly: the solver cannot guess)."""
    specs: list[TargetSpec] = []
    own_solves = 0
    for entry in info.get("targets", []):
        task = str(entry.get("task", "")).lower()
        if task in (*DENSE_TASKS, TEXT_TASK):
            # A picture, mask or text-to-text target is no row target: a solve of its own learns it.
            own_solves += 1
            continue
        if task not in TASKS:
            raise ValueError(f"target {entry.get('column')!r}: unknown task {task!r}")
        classes = entry.get("classes")
        if task != "regression":
            if not classes or len(classes) < 2:
                raise ValueError(f"target {entry.get('column')!r}: a classifier needs >= 2 classes")
        else:
            classes = None
        specs.append(TargetSpec(column=str(entry["column"]), task=task, classes=classes))
    if not specs and not own_solves:
        raise ValueError(f"{SetupLayout.TARGET_INFO} lists no targets")
    return specs


@dataclass
class SetupArtifacts:
    """Everything the solver consumes from `setup/`.

    Setup stages run in order and the maps meta check loads artifacts before the submission
    and metric stages exist, so target files are optional and the generated modules are imported
    on first use (a missing one raises FileNotFoundError then, naming the file).
    """

    workspace: Path
    setup_dir: Path
    train_maps: dict[str, pd.DataFrame]
    test_maps: dict[str, pd.DataFrame]
    target_map: pd.DataFrame | None
    target_map_transformed: pd.DataFrame | None
    targets: list[TargetSpec]
    target_info: dict
    _modules: dict[str, ModuleType] = field(default_factory=dict, repr=False)

    @classmethod
    def load(cls, workspace: Path) -> "SetupArtifacts":
        workspace = Path(workspace).resolve()
        setup = workspace / "setup"
        if not setup.is_dir():
            raise FileNotFoundError(f"no setup/ directory in {workspace}")
        train_maps: dict[str, pd.DataFrame] = {}
        test_maps: dict[str, pd.DataFrame] = {}
        layout = SetupLayout(setup)
        for modality in MAP_CODES:
            train_path, test_path = layout.input_map("train", modality), layout.input_map("test", modality)
            if train_path.is_file() and test_path.is_file():
                train_maps[modality] = _read_solver_map(train_path)
                test_maps[modality] = _read_solver_map(test_path)
        if not test_maps:
            raise FileNotFoundError("setup/ holds no train/test input map pair")
        info = json.loads(layout.target_info.read_text()) if layout.target_info.is_file() else {}
        # Generated code may import its siblings or read files relative to setup/.
        if str(setup) not in sys.path:
            sys.path.insert(0, str(setup))
        return cls(
            workspace=workspace,
            setup_dir=setup,
            train_maps=train_maps,
            test_maps=test_maps,
            target_map=_read_optional(layout.target_map),
            target_map_transformed=_read_optional(layout.target_map_transformed),
            targets=parse_target_info(info) if info else [],
            target_info=info,
        )

    def _module(self, key: str) -> ModuleType:
        if key not in self._modules:
            self._modules[key] = load_setup_module(SetupLayout(self.setup_dir).module(key), f"agentk_setup_{key}")
        return self._modules[key]

    @property
    def transform(self) -> ModuleType:
        """code_transform_tab_target_train.py: forward, inverse, target_info."""
        return self._module("transform")

    @property
    def submission(self) -> ModuleType:
        """code_submission_format.py: format_submission."""
        return self._module("submission")

    @property
    def metric(self) -> ModuleType:
        """code_metric.py: score, HIGHER_IS_BETTER."""
        return self._module("metric")

    def require_solvable(self) -> None:
        """Fail early, with the missing piece named, before any model is trained."""
        if not self.targets:
            raise FileNotFoundError(f"setup/{SetupLayout.TARGET_INFO} is missing or lists no targets")
        if self.target_map is None or self.target_map_transformed is None:
            raise FileNotFoundError("setup/ lacks the train target map or its transformed version")
        for key in MODULE_FILES:
            self._module(key)

    @property
    def direction(self) -> Direction:
        """code_metric.py's HIGHER_IS_BETTER, read as bool() like its metric stage reads it. The
        stage requires the name, so a module without it is an error here, not a guess."""
        if not hasattr(self.metric, "HIGHER_IS_BETTER"):
            raise AttributeError(f"{MODULE_FILES['metric']} defines no HIGHER_IS_BETTER")
        return Direction(bool(self.metric.HIGHER_IS_BETTER))

    @property
    def higher_is_better(self) -> bool:
        return self.direction.higher_is_better

    @property
    def test_ids(self) -> list[str]:
        """Test ids in the order of the first test map present (tab, then txt, then img)."""
        first = next(iter(self.test_maps.values()))
        return list(dict.fromkeys(first["id"].tolist()))

    @property
    def train_ids(self) -> list[str]:
        """Train ids that have every target (rows without a target cannot be fitted or scored).

        Before the target stages have run, the first train map's ids stand in.
        """
        if not self.targets or self.target_map is None or self.target_map_transformed is None:
            first = next(iter(self.train_maps.values()))
            return list(dict.fromkeys(first["id"].tolist()))
        transformed = self.target_map_transformed.drop_duplicates("id")
        columns = [t.column for t in self.targets]
        usable = pd.Index(transformed.loc[transformed[columns].notna().all(axis=1), "id"].to_numpy(dtype=object))
        ordered = self.target_map["id"].drop_duplicates().to_numpy(dtype=object)  # first occurrences, in order
        return ordered[usable.get_indexer(ordered) >= 0].tolist()


def _read_optional(path: Path) -> pd.DataFrame | None:
    return _read_solver_map(path) if path.is_file() else None
