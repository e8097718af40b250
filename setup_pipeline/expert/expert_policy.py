"""The deterministic expert policy: fills every setup stage by inspecting the files, no LLM.

It inspects once (at the modalities stage), records its facts in plan.json, and writes each later
stage's code from those facts. Where it cannot decide it declines with a reason.
"""

from __future__ import annotations

import json
import traceback
from types import ModuleType

from agentk.core.records.config import PolicyName
from agentk.core.metrics import get_metric, normalise_labels
from setup_pipeline.expert import box_codegen, codegen, lookup_codegen, mask_codegen, pixel_codegen, window_codegen
from setup_pipeline.deadline import SetupDeadline
from setup_pipeline.expert.description import summarise
from setup_pipeline.expert.facts import DataFacts, ExpertDeclined
from setup_pipeline.expert.inspect import inspect_competition
from setup_pipeline.expert.targets import default_positive
from setup_pipeline.policy import Action, Decline, Fill, StageContext
from setup_pipeline.stages import StageSpec
from agentk.core.artifacts import MODALITY_OF_CODE, TEXT_TASK, SetupLayout
from agentk.core.maps import MapError, read_map

class ExpertPolicy:
    name = PolicyName.EXPERT

    def __init__(self) -> None:
        self._facts: DataFacts | None = None

    def act(self, stage: StageSpec, ctx: StageContext) -> Action:
        try:
            return self._act(stage, ctx)
        except ExpertDeclined as exc:
            return Decline(exc.reason)
        except SetupDeadline:
            raise  # the run's deadline, not the data: the run hands in what it has
        except Exception as exc:  # noqa: BLE001 - data the rules never met: say so in one line, keep the trace
            trace = ctx.workspace.logs / "expert_errors.log"
            trace.parent.mkdir(parents=True, exist_ok=True)
            with trace.open("a", encoding="utf-8") as fh:
                fh.write(f"--- stage {stage.name}\n{traceback.format_exc()}\n")
            return Decline(f"the expert's rules failed on this data ({type(exc).__name__}: "
                           f"{' '.join(str(exc).split())[:200]}); details in logs/expert_errors.log")

    # ---- facts ----------------------------------------------------------------------------

    def facts(self, ctx: StageContext) -> DataFacts:
        if self._facts is None:
            plan_path = SetupLayout(ctx.workspace.setup).plan
            saved = json.loads(plan_path.read_text(encoding="utf-8")).get("facts") if plan_path.exists() else None
            self._facts = DataFacts.model_validate(saved) if saved else inspect_competition(ctx.workspace.raw, ctx.checkpoint)
        return self._facts

    # ---- stages ---------------------------------------------------------------------------

    def _act(self, stage: StageSpec, ctx: StageContext) -> Action:
        name = stage.name
        if name == "summarise":
            text = (ctx.workspace.raw / "description.md").read_text(encoding="utf-8", errors="replace")
            return Fill(summarise(text), plan="keep overview, evaluation, submission format and data sections")
        facts = self.facts(ctx)
        if facts.pixels is not None and name not in ("modalities", "plan"):
            return _picture_stage(facts, name, pixel_codegen, "pixels")
        if facts.masks is not None and name not in ("modalities", "plan"):
            if facts.masks.output == "boxes":
                return _picture_stage(facts, name, box_codegen, "boxes")
            return _picture_stage(facts, name, mask_codegen, "mask")
        if name == "modalities":
            picture_target = facts.pixels is not None or facts.masks is not None
            content = {"input_modalities": facts.input_modalities,
                       "target_modality": "image" if picture_target else "tabular"}
            return Fill(json.dumps(content, indent=2), plan="modalities from column types, image files and sound clips")
        if name == "plan":
            return Fill(json.dumps(_plan(facts), indent=2), plan="inspect files, ids, targets, metric")
        if name.startswith(("train_input_map_", "test_input_map_")):
            split, code = name.split("_")[0], name.rsplit("_", 1)[1]
            return Fill(self._input_map(facts, split, MODALITY_OF_CODE[code]), plan=f"{split} {MODALITY_OF_CODE[code]} columns keyed by id")
        if name == "train_target_map" and facts.windows is not None:
            return Fill(window_codegen.target_map(facts), plan="each training window labelled by its clip's class")
        if name == "train_target_map":
            return Fill(codegen.target_map(facts), plan="raw targets keyed by id")
        if name == "target_transform":
            return Fill(self._target_transform(facts, ctx), plan="label-encode classes; rescale regression targets for log metrics")
        if name == "submission_format":
            sources = _submission_sources(facts, _frame_classes(ctx))
            if facts.windows is not None:
                return Fill(window_codegen.submission_format(facts, sources), plan="a probability per class for every window of the sample")
            if facts.lookup is not None:
                return Fill(lookup_codegen.submission_format(facts, sources),
                            plan="the wide predictions written through the lookup table, for its listed pairs only")
            return Fill(codegen.submission_format(facts, sources), plan="rename prediction columns to the submission's")
        if name == "metric":
            return Fill(codegen.metric(facts), plan=f"score with {facts.metric}")
        return Decline(f"the expert policy has no rule for stage {name!r}")

    def _input_map(self, facts: DataFacts, split: str, modality: str) -> str:
        if modality == "image":
            return codegen.image_map(facts, split)
        if modality == "audio" and facts.windows is not None:
            return window_codegen.audio_map(facts, split)
        if modality == "audio":
            return codegen.audio_map(facts, split)
        if _split_file_missing(facts, split):
            raise ExpertDeclined(f"no {split} table to read {modality} columns from")
        columns = facts.tabular_columns if modality == "tabular" else facts.text_columns
        return codegen.table_map(facts, split, columns, fill_text=modality == "text")

    def _target_transform(self, facts: DataFacts, ctx: StageContext) -> str:
        try:
            targets = read_map(SetupLayout(ctx.workspace.setup).target_map)
        except MapError as exc:
            raise ExpertDeclined(f"cannot read the target map to list the classes: {exc}") from exc
        classes: dict[str, list] = {}
        scales: dict[str, str] = {}
        for fact in facts.targets:
            if fact.column not in targets.columns:
                raise ExpertDeclined(f"target {fact.column!r} is not in the target map")
            if fact.task == TEXT_TASK:
                continue  # learnt as text: no classes, no scale
            if fact.task == "regression":
                values = targets[fact.column].astype(float)
                if facts.metric == "rmsle":
                    scales[fact.column] = "log1p"
                elif facts.metric == "rmse_log":
                    scales[fact.column] = "log" if (values > 0).all() else "log1p"
            else:
                labels = sorted(targets[fact.column].dropna().unique().tolist(), key=_sort_key)
                classes[fact.column] = [_native(v) for v in labels]
        return codegen.target_transform(facts, classes, scales)


# What each picture-target stage's plan says, by target kind: (maps, target map, transform, submission, metric).
_PICTURE_PLANS = {
    "pixels": ("the target pictures keyed by file name", "the target is a picture: kept as its path",
               "every predicted picture spelt out pixel by pixel", "over every pixel"),
    "mask": ("the masks keyed by picture name", "the target is a mask: kept as its path",
             "every predicted mask run-length encoded", "over the masks"),
    "boxes": ("the boxes gathered per picture", "the target is boxes: kept as their path",
              "every picture's predicted boxes in one cell", "over the boxes"),
}


def _picture_stage(facts: DataFacts, name: str, writer: ModuleType, kind: str) -> Action:
    """A picture target's stages (image to image, masks): every map keyed by picture, the target a
    picture; `writer` is the kind's code generator."""
    if name.startswith(("train_input_map_", "test_input_map_")):
        split = name.split("_")[0]
        return Fill(writer.image_map(facts, split), plan=f"{split} pictures keyed by file name")
    target_map, transform, submission, metric = _PICTURE_PLANS[kind]
    writers = {"train_target_map": (writer.target_map, target_map),
               "target_transform": (writer.target_transform, transform),
               "submission_format": (writer.submission_format, submission),
               "metric": (writer.metric, f"{facts.metric} {metric}")}
    if name not in writers:
        return Decline(f"the expert policy has no rule for stage {name!r}")
    write, plan = writers[name]
    return Fill(write(facts), plan=plan)


def _plan(facts: DataFacts) -> dict:
    tasks = {t.task for t in facts.targets}
    task_type = "regression" if tasks == {"regression"} else ("multiclass" if "multiclass" in tasks else "binary")
    if facts.pixels is not None:
        task_type = "pixels"
    if facts.masks is not None:
        task_type = "mask"
    if TEXT_TASK in tasks:
        task_type = TEXT_TASK
    inputs = ", ".join(facts.input_modalities)
    files = "clips" if facts.audio is not None else "images"
    if facts.pixels is not None:
        steps = _pixel_steps(facts)
    elif facts.windows is not None:
        steps = window_codegen.plan_steps(facts)
    elif facts.masks is not None:
        steps = (box_codegen if facts.masks.output == "boxes" else mask_codegen).plan_steps(facts)
    else:
        steps = [
            f"Read {facts.train_file or 'the train ' + files} and {facts.test_file or 'the test ' + files}; inputs are {inputs}.",
            f"Key every map by {facts.id_column!r}; targets {[t.column for t in facts.targets]} ({task_type}).",
            f"Score with {facts.metric}; write {facts.submission_format} submissions with columns {facts.submission_columns[:6]}.",
        ]
    if facts.lookup is not None and facts.sample_submission is not None:
        steps.append(facts.lookup.describe(facts.sample_submission, facts.submission_columns[-1]) + ".")
    if facts.series is not None:
        # The solver reads facts.series itself; the step says what it will make of it.
        steps.append(f"{facts.series.describe()}: features see only targets before each row's forecast origin.")
    return {
        "steps": steps,
        "id_column": facts.id_column,
        "target_columns": [t.column for t in facts.targets],
        "task_type": task_type,
        "metric": facts.metric,
        "higher_is_better": facts.metric_higher_is_better,
        "submission_columns": facts.submission_columns,
        "echo_columns": list(facts.echo_columns),  # repeated test inputs: blank where test is
        "sample_submission": facts.sample_submission,
        "assumptions": facts.assumptions,
        "joins": _side_joins(facts),
        "facts": facts.model_dump(mode="json"),
    }


def _pixel_steps(facts: DataFacts) -> list[str]:
    task = facts.pixels
    assert task is not None
    first, second = task.order.split("_")
    return [
        f"Learn the pictures of {task.target_dir}/ from those of {task.train_dir}/ ({task.n_pairs} pairs by file name); "
        f"predict the {task.n_test} pictures of {task.test_dir}/.",
        "Key every map by the picture's file name; the target map holds each target picture's path.",
        f"Score with {facts.metric} over every pixel; write one row per pixel to {task.sample}: "
        f"'<picture>_<{first}>_<{second}>' counted from {task.base}, {task.value_column} "
        + ("as stored (0..255)." if task.scale == 1.0 else "in 0..1 (intensity / 255)."),
    ]


def _side_joins(facts: DataFacts) -> list[dict]:
    """What each side table join matched (tables keyed by the id are part of reading the data)."""
    joins = facts.train_table.joins if facts.train_table else []
    return [{"table": " + ".join(j.file), "on": j.keys, "other_on": j.other_keys,
             "kind": "one-to-many" if j.aggregate else "one-to-one", "match": j.match,
             "key_forms": j.key_forms, "prefix": j.prefix, "columns": j.columns, "last_by": j.time_column,
             "via": j.via, "left_out": j.left_out}
            for j in joins if j.prefix]


def _frame_classes(ctx: StageContext) -> dict[str, list[str]]:
    """Each target's classes as the prediction frame names them (target_info.json, written by the
    target transform from the target map: "TRUE" in a raw file may read back as True there)."""
    path = SetupLayout(ctx.workspace.setup).target_info
    info = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {"targets": []}
    return {t["column"]: [str(c) for c in t["classes"]] for t in info["targets"] if t.get("classes")}


def _as_named(label: str, classes: list[str]) -> str:
    """`label` spelled as in `classes` when one of them is the same label."""
    key = normalise_labels([label])[0]
    return next((c for c in classes if normalise_labels([c])[0] == key), label)


def _submission_sources(facts: DataFacts, frame_classes: dict[str, list[str]]) -> dict[str, str]:
    """Submission column → prediction-frame column. Per-target submissions name their columns by
    position: the i-th column after the id holds the i-th target, whatever the train file calls it."""
    # Through a lookup, the wide columns are the names it lists: train's columns, or a label's classes.
    columns = facts.lookup.targets if facts.lookup is not None else \
        [c for c in facts.submission_columns if c != facts.id_column and c not in facts.echo_columns]
    if facts.submission_format == "per_class_proba":
        label = facts.targets[0].column
        classes = frame_classes.get(label, [])
        return {c: f"{label}__proba__{_as_named(c, classes)}" for c in columns}
    kind = get_metric(facts.metric).kind
    sources = {}
    for column, target in zip(columns, facts.targets):
        if kind == "proba" and target.task == "binary" and target.classes:
            classes = frame_classes.get(target.column) or target.classes
            # Facts saved before the inspection decided the class fall back on its default rule.
            positive = target.positive_class or default_positive(target.classes)
            sources[column] = f"{target.column}__proba__{_as_named(positive, classes)}"
        elif kind == "ranking" and target.classes:
            sources[column] = f"{target.column}{codegen.TOP_K_MARK}{facts.top_k or 3}"  # the k likeliest labels
        else:
            sources[column] = target.column
    return sources


def _split_file_missing(facts: DataFacts, split: str) -> bool:
    return (facts.train_file if split == "train" else facts.test_file) is None


def _sort_key(value: object) -> tuple:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return (0, float(value), "")
    return (1, 0.0, str(value))


def _native(value: object) -> object:
    return value.item() if hasattr(value, "item") else value
