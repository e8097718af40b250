"""The setup's side of the artifact contract between the floors: the task's vocabulary and where
each setup artifact lives under `setup/`.

The rest of the contract sits beside it: `maps.py` (how a map is read), `predictions.py` (the
prediction frame) and `results.py` (the records the solver and the run write). Every producer
writes through these and every reader reads through them, so a key or a file name is spelled once.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Literal

# ---- the task's vocabulary -------------------------------------------------------------------

Task = Literal["binary", "multiclass", "regression"]
TASKS: tuple[Task, ...] = ("binary", "multiclass", "regression")
CLASSIFICATION_TASKS: tuple[Task, ...] = ("binary", "multiclass")
# A target that is itself a picture, scored pixel by pixel (agentk/core/pixels.py): maps keep one
# row per image and hold the picture's path; only the submission spells out its pixels. A "mask"
# target is a picture of objects (agentk/core/mask_targets.py), submitted run-length encoded.
DenseTask = Literal["pixels", "mask"]
DENSE_TASKS: tuple[DenseTask, ...] = ("pixels", "mask")
# A text rewritten as another text (token normalisation, transliteration): the target map and
# the prediction frame hold the text itself, untransformed; the solve has its own recipe.
TextTask = Literal["text_to_text"]
TEXT_TASK: TextTask = "text_to_text"
TARGET_MODALITIES = ("tabular", "image")  # "image": the target is a picture (a dense task)
Modality = Literal["tabular", "text", "image", "audio"]
# Each input modality and the code its maps are named by (train_<code>_input_map.csv). Image and
# audio maps hold one file path per row (`image_path`, `audio_path`), relative to setup/.
MODALITY_CODES: dict[Modality, str] = {"tabular": "tab", "text": "txt", "image": "img", "audio": "aud"}
MODALITY_OF_CODE: dict[str, Modality] = {code: modality for modality, code in MODALITY_CODES.items()}
MAP_CODES: tuple[str, ...] = tuple(MODALITY_CODES.values())

# ---- the setup's layout ----------------------------------------------------------------------

# The generated modules the solver imports, by role.
MODULE_FILES = {
    "transform": "code_transform_tab_target_train.py",
    "submission": "code_submission_format.py",
    "metric": "code_metric.py",
}

Split = Literal["train", "test"]


@dataclass(frozen=True)
class SetupLayout:
    """Where each setup artifact lives under a workspace's `setup/` directory.

    The class constants are the bare file names, for those that need a name rather than a path
    (a stage's output, a template's marker, a message); the properties are the paths. The
    generated-code templates spell the same names in their own text: they run in the sandbox,
    where this module cannot be imported.
    """

    SUMMARY: ClassVar[str] = "task_summary.md"
    MODALITIES: ClassVar[str] = "modalities.json"
    PLAN: ClassVar[str] = "plan.json"
    TARGET_INFO: ClassVar[str] = "target_info.json"
    TARGET_MAP: ClassVar[str] = "train_tab_target_map.csv"
    TARGET_MAP_TRANSFORMED: ClassVar[str] = "train_tab_target_map_transformed.csv"
    TARGET_MAP_ROUNDTRIP: ClassVar[str] = "train_tab_target_map_roundtrip.csv"
    TARGET_MAP_CODE: ClassVar[str] = "code_train_tab_target_map.py"
    CODE_GLOB: ClassVar[str] = "code_*.py"  # every generated module
    # What the submission-format and metric stages' templates write for their checks to read.
    SUBMISSION_FORMAT_CHECK: ClassVar[str] = "submission_format_check.csv"
    METRIC_CHECK: ClassVar[str] = "metric_check.json"

    dir: Path

    @staticmethod
    def input_map_name(split: Split, modality: str) -> str:
        """`modality` is a map code: tab, txt, img or aud."""
        return f"{split}_{modality}_input_map.csv"

    @staticmethod
    def input_map_code_name(split: Split, modality: str) -> str:
        """The generated module that writes `input_map_name(split, modality)`."""
        return f"code_{split}_{modality}_input_map.py"

    @staticmethod
    def input_map_glob(split: Split) -> str:
        """A glob pattern matching the split's input maps of every modality."""
        return f"{split}_*_input_map.csv"

    @staticmethod
    def module_name(role: str) -> str:
        """The file name of the generated module the solver imports for `role` (MODULE_FILES)."""
        return MODULE_FILES[role]

    @property
    def summary(self) -> Path:
        return self.dir / self.SUMMARY

    @property
    def modalities(self) -> Path:
        return self.dir / self.MODALITIES

    @property
    def plan(self) -> Path:
        return self.dir / self.PLAN

    @property
    def target_info(self) -> Path:
        return self.dir / self.TARGET_INFO

    @property
    def target_map(self) -> Path:
        return self.dir / self.TARGET_MAP

    @property
    def target_map_transformed(self) -> Path:
        return self.dir / self.TARGET_MAP_TRANSFORMED

    @property
    def target_map_roundtrip(self) -> Path:
        return self.dir / self.TARGET_MAP_ROUNDTRIP

    def input_map(self, split: Split, modality: str) -> Path:
        """`modality` is a map code: tab, txt, img or aud."""
        return self.dir / self.input_map_name(split, modality)

    def input_maps(self, split: Split) -> list[Path]:
        """The split's input maps on disk, sorted by name."""
        return sorted(self.dir.glob(self.input_map_glob(split)))

    def module(self, role: str) -> Path:
        return self.dir / self.module_name(role)

    def fingerprint_files(self) -> list[Path]:
        """What a setup's scores depend on, in a stable order: every generated module, sorted,
        then target_info.json (which may be missing)."""
        return sorted(self.dir.glob(self.CODE_GLOB)) + [self.target_info]

