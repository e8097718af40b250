"""Run configuration: one typed model, saved resolved into each workspace."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field


class RunConfig(BaseModel):
    workspace_root: Path = Path("workspaces")
    # None: hybrid when an LLM is configured (flag or AGENTK_LLM_* environment), else expert.
    policy: Literal["expert", "llm", "hybrid"] | None = None
    llm_base_url: str | None = None
    llm_model: str | None = None
    llm_token_budget: int | None = Field(None, gt=0)
    credit_assignment: bool = True
    # Run LLM-written code even where no sandbox can be made (it then has the user's full power).
    unsafe_no_sandbox: bool = False
    time_budget_s: float = Field(600.0, gt=0, description="solver budget per competition")
    folds: int = Field(5, ge=2, le=20)
    # The late-fusion net: auto = only with text or image inputs; on = tables too.
    fusion: Literal["auto", "on", "off"] = "auto"
    tune: bool = True  # HEBO tuning of the race's best affordable family
    seed: int = 0
    quiet: bool = False
    attempts_per_stage: int = Field(3, ge=1)
    meta_rounds: int = Field(2, ge=0)
    stage_timeout_s: float = Field(300.0, gt=0)
    light_solve_timeout_s: float = Field(600.0, gt=0)
    submit: bool = False  # Kaggle sources only: send the validated submission and report its rank
    force_submit: bool = False
    # How many of the solver's candidates (best validation first) to send with --submit.
    submit_top_k: int = Field(1, ge=1)
    submit_timeout_s: float = Field(600.0, gt=0)
    submit_poll_s: float = Field(10.0, gt=0)
