"""The predictor's side of the artifact contract: where a solve leaves the fitted predictor of its
submission (`solve/predictor/` in the workspace), and what an exported predictor folder holds
(`agentk export`). The solver writes the first, the export reads it and writes the second, the
exported `predict.py` reads that: each name is spelled here once.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar


@dataclass(frozen=True)
class PredictorLayout:
    """A predictor's folder: the pickled recipe (fold models, fitted maps, blend, decoding) and its
    record (JSON: whether it can be exported, why not, what it was checked against)."""

    FOLDER: ClassVar[str] = "predictor"
    MODEL: ClassVar[str] = "predictor.pkl"
    RECORD: ClassVar[str] = "predictor.json"
    FORMAT: ClassVar[int] = 1

    dir: Path

    @classmethod
    def in_workspace(cls, workspace: Path) -> PredictorLayout:
        return cls(Path(workspace) / "solve" / cls.FOLDER)

    @property
    def model(self) -> Path:
        return self.dir / self.MODEL

    @property
    def record(self) -> Path:
        return self.dir / self.RECORD


@dataclass(frozen=True)
class ExportLayout:
    """An exported predictor: `python OUT/predict.py TEST_DIR SUBMISSION.csv` needs nothing else
    than this folder and the packages of `requirements.txt`."""

    SCRIPT: ClassVar[str] = "predict.py"
    REQUIREMENTS: ClassVar[str] = "requirements.txt"
    README: ClassVar[str] = "README.md"
    SETUP: ClassVar[str] = "setup"  # the setup's generated code that the test rows go through
    LIB: ClassVar[str] = "lib"  # the agentk modules that code and the predictor import
    MANIFEST: ClassVar[str] = "export.json"  # where the data files go, what was exported from where

    dir: Path

    @property
    def script(self) -> Path:
        return self.dir / self.SCRIPT

    @property
    def requirements(self) -> Path:
        return self.dir / self.REQUIREMENTS

    @property
    def setup(self) -> Path:
        return self.dir / self.SETUP

    @property
    def lib(self) -> Path:
        return self.dir / self.LIB

    @property
    def manifest(self) -> Path:
        return self.dir / self.MANIFEST

    @property
    def predictor(self) -> PredictorLayout:
        return PredictorLayout(self.dir / PredictorLayout.FOLDER)
