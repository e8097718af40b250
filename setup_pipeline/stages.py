"""The stages of the setup MDP (Agent K, section 3.1 and appendix A.1), in order.

A stage is either a reasoning stage whose filled hole is written as it is (text or JSON), or a
code stage whose hole is spliced into a template and run in the sandbox. Each stage has a
framework check in `unit_tests_setup`; meta checks cover several stages at once.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Callable, Literal

from agentk.core.artifacts import MODALITY_CODES, SetupLayout
from unit_tests_setup import meta_checks, stage_checks
from unit_tests_setup.context import CheckContext

Check = Callable[[CheckContext], list[str]]

HOLE = "# <<POLICY CODE>>"
HOLE_START = "# ---- policy code"  # the template lines around the hole
HOLE_END = "# ---- end of policy code"


@dataclass(frozen=True)
class StageSpec:
    name: str
    kind: Literal["text", "json", "code"]
    output: str  # the file the stage writes under setup/ (for code stages: the generated module)
    goal: str  # one sentence for prompts and logs
    check: Check
    template: str | None = None  # template file in setup_pipeline/templates
    required_names: tuple[str, ...] = ()  # what the hole must define
    substitutions: tuple[tuple[str, str], ...] = ()  # template markers

    def last_content(self, setup_dir: Path) -> str | None:
        """What the stage last produced: its hole for code stages, its file otherwise."""
        path = setup_dir / self.output
        if self.kind == "code":
            return read_hole(path)
        return path.read_text(encoding="utf-8", errors="replace") if path.is_file() else None

    def render(self, hole: str) -> str:
        assert self.template is not None
        text = resources.files("setup_pipeline.templates").joinpath(self.template).read_text(encoding="utf-8")
        for marker, value in self.substitutions:
            text = text.replace(marker, value)
        return text.replace(HOLE, hole.strip("\n"))


def read_hole(module: Path) -> str | None:
    """The policy's code inside a generated module (between the template's markers), or None."""
    if not module.is_file():
        return None
    lines = module.read_text(encoding="utf-8", errors="replace").splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith(HOLE_START)), None)
    end = next((i for i, line in enumerate(lines) if line.startswith(HOLE_END)), None)
    if start is None or end is None or end <= start:
        return None
    return "\n".join(lines[start + 1 : end]).strip("\n")


@dataclass(frozen=True)
class MetaCheckSpec:
    name: str
    covers: tuple[str, ...]  # stage names; on failure the MDP returns to the earliest
    goal: str
    check: Check


# What a map holds besides its ids where its check and the solver want a column by name.
_MAP_COLUMNS = {"audio": ": `audio_path`, each sound clip's path relative to setup/ (relative_to_setup)."}


def _map_stage(split: str, modality: str) -> StageSpec:
    code = MODALITY_CODES[modality]
    output = SetupLayout.input_map_name(split, code)
    return StageSpec(
        name=f"{split}_input_map_{code}",
        kind="code",
        output=SetupLayout.input_map_code_name(split, code),
        goal=f"Write {output}: first column `id`, one row per {split} example, the {modality} inputs"
             + _MAP_COLUMNS.get(modality, "."),
        check=stage_checks.input_map_check(split, code),
        template="input_map.py.tmpl",
        required_names=("build_map",),
        substitutions=(("__OUTPUT__", output), ("__STAGE__", f"{split} {modality} input map")),
    )


SUMMARISE = StageSpec(
    name="summarise",
    kind="text",
    output=SetupLayout.SUMMARY,
    goal="Summarise the task, the data files and the evaluation, without noise.",
    check=stage_checks.check_summary,
)
MODALITIES = StageSpec(
    name="modalities",
    kind="json",
    output=SetupLayout.MODALITIES,
    goal='Name the input modalities and the target modality: {"input_modalities": [...], "target_modality": "tabular"}.',
    check=stage_checks.check_modalities,
)
PLAN = StageSpec(
    name="plan",
    kind="json",
    output=SetupLayout.PLAN,
    goal="Plan the setup: steps, id column, target columns, task type, metric, submission columns.",
    check=stage_checks.check_plan,
)
TARGET_MAP = StageSpec(
    name="train_target_map",
    kind="code",
    output=SetupLayout.TARGET_MAP_CODE,
    goal=f"Write {SetupLayout.TARGET_MAP}: first column `id`, then the raw target columns.",
    check=stage_checks.check_target_map,
    template="input_map.py.tmpl",
    required_names=("build_map",),
    substitutions=(("__OUTPUT__", SetupLayout.TARGET_MAP), ("__STAGE__", "train target map")),
)
TARGET_TRANSFORM = StageSpec(
    name="target_transform",
    kind="code",
    output=SetupLayout.module_name("transform"),
    goal="Define forward (raw targets → numbers, classes as 0..K-1), inverse, and target_info.",
    check=stage_checks.check_target_transform,
    template="target_transform.py.tmpl",
    required_names=("forward", "inverse", "target_info"),
)
SUBMISSION_FORMAT = StageSpec(
    name="submission_format",
    kind="code",
    output=SetupLayout.module_name("submission"),
    goal="Define format_submission(pred) turning a prediction frame into the competition's submission.",
    check=stage_checks.check_submission_format,
    template="submission_format.py.tmpl",
    required_names=("format_submission",),
)
METRIC = StageSpec(
    name="metric",
    kind="code",
    output=SetupLayout.module_name("metric"),
    goal="Define score(y_true, y_pred) -> float with the competition's metric, and HIGHER_IS_BETTER.",
    check=stage_checks.check_metric,
    template="metric.py.tmpl",
    required_names=("score", "HIGHER_IS_BETTER"),
)


def build_sequence(modalities: list[str] | None) -> list[StageSpec | MetaCheckSpec]:
    """The ordered stages and meta checks; map stages exist only once modalities are known."""
    head: list[StageSpec | MetaCheckSpec] = [SUMMARISE, MODALITIES, PLAN]
    if modalities is None:
        return head
    ordered = [m for m in MODALITY_CODES if m in modalities]
    train_maps = [_map_stage("train", m) for m in ordered]
    test_maps = [_map_stage("test", m) for m in ordered]
    maps_meta = MetaCheckSpec(
        name="meta_maps",
        covers=tuple(s.name for s in [*train_maps, TARGET_MAP, TARGET_TRANSFORM, *test_maps]),
        goal="Train maps share ids with the target map, test maps share ids, columns agree, a batch of rows stacks as the networks read it.",
        check=meta_checks.check_maps,
    )
    light_solve = MetaCheckSpec(
        name="meta_light_solve",
        covers=(TARGET_TRANSFORM.name, SUBMISSION_FORMAT.name, METRIC.name),
        goal="A light solve on a subsample writes a submission that passes validation.",
        check=meta_checks.check_light_solve,
    )
    return [*head, *train_maps, TARGET_MAP, TARGET_TRANSFORM, *test_maps, maps_meta, SUBMISSION_FORMAT, METRIC, light_solve]
