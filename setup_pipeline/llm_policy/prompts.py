"""Prompts of the LLM setup policy, one class per role: template, build (messages) and parse.

Every prompt is rebuilt from working memory (Agent K, section 3.1.2): no chat history is kept
between stages or attempts; the entries that matter (summary, data view, plan, the last code and
its error) are rendered afresh each time. Building a prompt reads nothing and writes nothing:
the policy gathers the facts (`memory.py`) and passes them in. The previous code, its output and
its error are what generated code printed, so every prompt is redacted (agentk/core/secrets.py).
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from agentk.core.artifacts import Modality, SetupLayout, Task
from agentk.core.reading.markdown import fences
from agentk.llm import Message, WorkingMemory, system, user
from agentk.llm.parsing import fenced_blocks
from agentk.core.secrets import redact

SYSTEM = (
    "You are a Kaggle grandmaster setting up a competition so that a generic solver can train on it. "
    "You work one stage at a time; a framework runs your output and checks it. Be exact about file "
    "names and column names: copy them from the DATA-VIEW, never guess."
)

# The cross-stage contracts (docs/architecture.md), shown to the stages they concern.
CONTRACT_MAPS = (
    "Every map is a table whose FIRST column is named `id` (string ids, one row per example, no "
    "duplicates); train maps and the target map share the same ids in the same order; test maps "
    "have the same columns as the train map of their modality. Drop train rows whose target is missing "
    "from every train map."
)
CONTRACT_TARGETS = (
    f"`{SetupLayout.TARGET_MAP}` holds `id` + the raw target columns (original values). forward(df) "
    "maps classes to integers 0..K-1 (regression: floats, optionally rescaled) keeping `id`, columns "
    "and row order; inverse(df) gives back the original labels/values; target_info(df) returns "
    '{"targets": [{"column": c, "task": "binary|multiclass|regression", "classes": [labels in index order] or null}]}.'
)
CONTRACT_PREDICTION = (
    "The prediction frame: column `id`, then per target `t`: regression -> `t` (float, original "
    "scale); classification -> `t` (predicted original label) and `f\"{t}__proba__{label}\"` for each "
    "label of target_info's classes (label rendered with str). y_true for the metric is "
    f"{SetupLayout.TARGET_MAP}'s format (`id` + raw targets); match rows by `id`."
)
_CONTRACTS = {
    "input_map.py.tmpl": (CONTRACT_MAPS,),
    "target_transform.py.tmpl": (CONTRACT_TARGETS,),
    "submission_format.py.tmpl": (CONTRACT_PREDICTION, "The submission's id column and values must match the sample submission's (same ids, same order when a sample exists)."),
    "metric.py.tmpl": (CONTRACT_PREDICTION, CONTRACT_TARGETS),
}
HOLE_MARK = "# >>>>>> YOUR CODE GOES HERE <<<<<<"


def _prompt(body: str) -> list[Message]:
    return [system(SYSTEM), user(redact(body))]


def contracts_for(template: str | None) -> tuple[str, ...]:
    return _CONTRACTS.get(template or "", ())


# ---- reasoning stage: summarise ---------------------------------------------------------------


class SummarisePrompt:
    """description.md -> task_summary.md (markdown)."""

    TEMPLATE = (
        "Summarise this Kaggle competition for the engineers who will set it up. Keep: the task and "
        "the prediction target(s), the data files and what they hold, the evaluation metric (name "
        "it exactly), and the submission format (columns, one example row). Drop the story, prizes, "
        "timelines and rules. Answer in markdown, at most 60 lines.\n\n{memory}\n## DESCRIPTION\n\n{description}"
    )

    @classmethod
    def build(cls, memory: WorkingMemory, description: str, max_chars: int = 20000) -> list[Message]:
        text = description if len(description) <= max_chars else description[:max_chars] + "\n… [description truncated]"
        body = cls.TEMPLATE.format(memory=memory.render(only=("DATA-VIEW", "ERROR")), description=text)
        return _prompt(body)

    @staticmethod
    def parse(reply: str) -> str:
        """The markdown itself: a reply wholly wrapped in a ```markdown fence is unwrapped."""
        blocks = fenced_blocks(reply)
        stripped = reply.strip()
        if len(blocks) == 1 and blocks[0][0] in {"markdown", "md"} and stripped.startswith(("```", "~~~")):
            return blocks[0][1].strip()
        return stripped


# ---- reasoning stages: modalities and plan (JSON, pydantic-validated) ----------------------------


class ModalitiesModel(BaseModel):
    model_config = ConfigDict(extra="forbid")
    input_modalities: list[Modality] = Field(min_length=1)
    target_modality: Literal["tabular"] = "tabular"

    @field_validator("input_modalities")
    @classmethod
    def _unique(cls, value: list[str]) -> list[str]:
        if len(set(value)) != len(value):
            raise ValueError("input_modalities has duplicates")
        return value


class PlanModel(BaseModel):
    model_config = ConfigDict(extra="allow")
    steps: list[str] = Field(min_length=1, max_length=12)
    id_column: str = Field(min_length=1)
    target_columns: list[str] = Field(min_length=1)
    task_type: Task
    metric: str = Field(min_length=1)
    higher_is_better: bool | None = None
    submission_columns: list[str] = Field(min_length=1)
    sample_submission: str | None = None  # path relative to raw/, e.g. "data/sample_submission.csv"

    @field_validator("steps", "target_columns", "submission_columns")
    @classmethod
    def _non_empty_strings(cls, value: list[str]) -> list[str]:
        if not all(isinstance(v, str) and v.strip() for v in value):
            raise ValueError("every entry must be a non-empty string")
        return value


class JsonStagePrompt:
    """A reasoning stage answered with one JSON object, validated by a pydantic model."""

    def __init__(self, model: type[BaseModel], instructions: str, example: str, entries: tuple[str, ...]) -> None:
        self.model = model
        self.instructions = instructions
        self.example = example
        self.entries = entries

    def build(self, memory: WorkingMemory, goal: str) -> list[Message]:
        body = (
            f"{memory.render(only=self.entries)}\n## STAGE GOAL\n\n{goal}\n\n{self.instructions}\n\n"
            f"Answer with one JSON object in a ```json block, matching this example's keys and types:\n"
            f"```json\n{self.example}\n```"
        )
        return _prompt(body)

    def parse(self, value: object) -> BaseModel:
        """The validator for ask_json: raises ValueError (pydantic) on a wrong shape."""
        return self.model.model_validate(value)


_MEMORY_FOR_JSON = ("TASK-SUMMARY", "DATA-VIEW", "MODALITIES", "PREVIOUS-CODE", "ERROR", "META-ERROR-THOUGHT", "TIPS")

MODALITIES_PROMPT = JsonStagePrompt(
    ModalitiesModel,
    "List the input modalities a model needs: 'tabular' (numeric/categorical columns), 'text' "
    "(free-text columns worth a text model), 'image' (image files), 'audio' (sound clips: WAV, FLAC, Ogg, "
    "AIFF, MP3). The target modality is always 'tabular'.",
    '{"input_modalities": ["tabular"], "target_modality": "tabular"}',
    _MEMORY_FOR_JSON,
)
PLAN_PROMPT = JsonStagePrompt(
    PlanModel,
    "Plan the setup. steps: at most 5 short sentences. id_column: the column identifying a row "
    "in test and in the submission. target_columns: the train columns to predict. metric: the "
    "evaluation metric's usual name (accuracy, roc_auc, rmse, rmsle, mae, log_loss, f1, ...). "
    "submission_columns: the submission header, id first. sample_submission: the sample "
    "submission's path relative to raw/ (null if there is none).",
    '{"steps": ["...", "..."], "id_column": "Id", "target_columns": ["target"], "task_type": "binary", '
    '"metric": "roc_auc", "higher_is_better": true, "submission_columns": ["Id", "target"], '
    '"sample_submission": "data/sample_submission.csv"}',
    _MEMORY_FOR_JSON,
)


# ---- code stages --------------------------------------------------------------------------------


class CodePrompt:
    """A code stage: a short plan, then one ```python block that fills the template's hole."""

    ENTRIES = ("TASK-SUMMARY", "DATA-VIEW", "MODALITIES", "PLAN", "PREVIOUS-CODE", "ERROR", "META-ERROR-THOUGHT", "CODE-OUTPUT", "TIPS")
    FORMAT = (
        "Reply in this format:\n"
        "PLAN:\n1. ... (at most 3 steps; if an ERROR is shown, step 1 says in one sentence what caused it and how you fix it)\n\n"
        "```python\n<only the code that replaces the marked hole>\n```\n"
        "Do not repeat the template's code outside the hole; the names it defines before the hole "
        "(imports, HERE, RAW, ...) are available. The block must define: {required}."
    )

    @classmethod
    def build(cls, memory: WorkingMemory, goal: str, template: str, required: tuple[str, ...], contracts: tuple[str, ...]) -> list[Message]:
        rules = "\n".join(f"- {c}" for c in contracts) or "- (none beyond the goal)"
        body = (
            f"{memory.render(only=cls.ENTRIES)}\n## STAGE GOAL\n\n{goal}\n\n## CONTRACTS\n\n{rules}\n\n"
            f"## TEMPLATE (your code replaces the line `{HOLE_MARK}`)\n\n```python\n{template.strip()}\n```\n\n"
            + cls.FORMAT.format(required=", ".join(required))
        )
        return _prompt(body)

    @staticmethod
    def plan_of(reply: str, max_chars: int = 600) -> str:
        """The model's plan: the text before its first fence, without the 'PLAN:' label."""
        found = fences(reply)
        head = "\n".join(reply.splitlines()[:found[0].start]) if found else reply
        head = re.sub(r"^\s*PLAN:?\s*", "", head.strip(), flags=re.IGNORECASE)
        return " ".join(head.split())[:max_chars]
