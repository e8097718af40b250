"""Run configuration: one typed model, saved resolved into each workspace as config.json.

Every default of a run lives here: the CLI's options default to "not given", the setup MDP takes
`RunConfig.setup`, and the solver reads `RunConfig.solve` back from the saved config.json.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer, model_validator

CONFIG_FILE = "config.json"  # in the workspace root


class Device(StrEnum):
    """Where torch work runs: auto = a CUDA GPU when torch sees one, else the CPU."""

    AUTO = "auto"
    CPU = "cpu"
    CUDA = "cuda"


class Fusion(StrEnum):
    """The late-fusion net: auto = only with text or image inputs; on = tables too."""

    AUTO = "auto"
    ON = "on"
    OFF = "off"


class PolicyName(StrEnum):
    """Who writes the setup stages."""

    EXPERT = "expert"
    LLM = "llm"
    HYBRID = "hybrid"


class SetupBudget(BaseModel):
    """What the setup MDP may spend: attempts, meta rounds and its checks' timeouts."""

    model_config = ConfigDict(frozen=True)

    attempts_per_stage: int = Field(3, ge=1)
    meta_rounds: int = Field(2, ge=0, description="how often each meta check may send the run back")
    stage_timeout_s: float = Field(300.0, gt=0)
    light_solve_timeout_s: float = Field(600.0, gt=0)
    probe_timeout_s: float = Field(120.0, gt=0, description="the batch probe over the maps")
    setup_deadline_s: float | None = Field(None, gt=0, description="seconds setup may take from the run's start "
                                           "(None: twice the solver's budget, at least 180; setup_pipeline/deadline.py)")


class WarmStart(BaseModel):
    """What a campaign's nearest solved tasks suggest to a new task's solver (meta-learning as in
    Auto-sklearn): their winning families are raced first, and their tuned configurations are
    HEBO's first trials. Empty = a cold start."""

    model_config = ConfigDict(frozen=True)

    families: list[str] = Field(default_factory=list, description="model families to race first, best first")
    configs: dict[str, list[dict[str, Any]]] = Field(default_factory=dict, description="family -> configurations to try first")
    sources: list[str] = Field(default_factory=list, description="the solved tasks the suggestions came from")


class SolveSettings(BaseModel):
    """The solver's settings for a run's full solve (the setup's light solve keeps its own)."""

    model_config = ConfigDict(frozen=True)

    folds: int = Field(5, ge=2, le=20)
    seed: int = 0
    time_budget_s: float = Field(600.0, gt=0, description="solver budget per competition")
    fusion: Fusion = Fusion.AUTO
    tune: bool = True  # HEBO tuning of the race's best affordable family
    blend_after: int = Field(3, ge=2, description="fewest complete solutions worth blending")
    device: Device = Device.AUTO  # images, text and the fusion net; tables stay on the CPU
    warm_start: WarmStart | None = None  # set by a campaign from its task memory
    # The LLM solve policy: the solver asks the runner's model at its decision points. None: on when
    # the run's policy is llm or hybrid (the runner decides, agentk/runner.py), off for the expert;
    # --llm-solve / --no-llm-solve set it.
    llm_solve: bool | None = None
    # The user's own image model, used before the bundled EfficientNet-Lite when its timed probe fits
    # the budget: a transformers or timm model's folder (absolute), or a hub repo id in the local
    # cache (solve_pipeline/images/image_backbones_local.py). None: the bundled ones and well-known cached ones.
    image_backbone: str | None = None

    @model_serializer(mode="wrap")
    def _without_unset_options(self, handler: SerializerFunctionWrapHandler) -> Any:
        # A run that sets neither writes the very config.json it wrote before these options existed; a
        # choice made (llm_solve True or False) is kept, so a config read back means what was written.
        data = handler(self)
        if isinstance(data, dict):
            for name in ("llm_solve", "image_backbone"):
                if getattr(self, name) is None:
                    data.pop(name, None)
        return data


class RunConfig(BaseModel):
    workspace_root: Path = Path("workspaces")
    # None: hybrid when an LLM is configured (flag or AGENTK_LLM_* environment), else expert.
    policy: PolicyName | None = None
    llm_base_url: str | None = None
    llm_model: str | None = None
    llm_token_budget: int | None = Field(None, gt=0)
    credit_assignment: bool = True
    # Run LLM-written code even where no sandbox can be made (it then has the user's full power).
    unsafe_no_sandbox: bool = False
    quiet: bool = False
    setup: SetupBudget = SetupBudget()
    solve: SolveSettings = SolveSettings()
    submit: bool = False  # Kaggle sources only: send the validated submission and report its rank
    force_submit: bool = False
    # How many of the solver's candidates (best validation first) to send with --submit.
    submit_top_k: int = Field(1, ge=1)
    submit_timeout_s: float = Field(600.0, gt=0)
    submit_poll_s: float = Field(10.0, gt=0)
    # Code competitions: how long to wait for the kernel that runs the predictor on Kaggle, and a
    # folder of wheels to ship instead of downloading them (None: pip download for Kaggle's image).
    kernel_timeout_s: float = Field(7200.0, gt=0)
    kernel_wheels: Path | None = None
    # A leaderboard CSV the grader places the test score on (None: the competition's own, if any).
    leaderboard: Path | None = None
    # The metric of data that came without a competition page (a folder of files, a zip).
    metric: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _nest_flat_fields(cls, data: Any) -> Any:
        """`RunConfig(folds=3, attempts_per_stage=2)` still works: flat names of the setup budget's
        and the solve settings' fields go into their sub-model (explicit sub-model values win)."""
        if not isinstance(data, dict):
            return data
        data = dict(data)
        for name, model in (("setup", SetupBudget), ("solve", SolveSettings)):
            flat = {key: data.pop(key) for key in list(data) if key in model.model_fields}
            if flat:
                nested = data.get(name)
                given = nested.model_dump(exclude_unset=True) if isinstance(nested, BaseModel) else dict(nested or {})
                data[name] = {**flat, **given}
        return data

    def with_solve(self, **changes: Any) -> RunConfig:
        """A copy with some solve settings changed (validated, unlike a bare model_copy)."""
        return self.model_copy(update={"solve": self.solve.model_validate({**self.solve.model_dump(), **changes})})


def deep_merge(base: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    """`base` with `changes` laid over it, nested dicts merged key by key (a config dump and the
    options given over it)."""
    merged = dict(base)
    for key, value in changes.items():
        merged[key] = deep_merge(merged[key], value) if isinstance(value, dict) and isinstance(merged.get(key), dict) else value
    return merged


def default_of(model: type[BaseModel], field: str) -> Any:
    """A field's default, for help texts that show it without restating it."""
    return model.model_fields[field].get_default(call_default_factory=True)


def saved_config(workspace_root: Path) -> RunConfig | None:
    """The config a run saved into its workspace; None when no run wrote one (a solver started by
    hand on a bare workspace)."""
    path = Path(workspace_root) / CONFIG_FILE
    if not path.is_file():
        return None
    return RunConfig.model_validate_json(path.read_text(encoding="utf-8"))
