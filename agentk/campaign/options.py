"""A campaign's options: how tasks are ordered, retried, run and budgeted. Every default lives here."""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from agentk.core.records.config import RunConfig
from agentk.core.errors import AgentKError
from curriculum.selection import CurriculumParams, Order

CAMPAIGNS_DIR = "_campaigns"  # under the workspace root


class CampaignOptions(BaseModel):
    model_config = ConfigDict(frozen=True)

    order: Order = Order.CURRICULUM
    curriculum: CurriculumParams = CurriculumParams()
    seed: int = 0  # the random order's, and each run's solver seed
    max_attempts: int = Field(2, ge=1, description="tries per task before it leaves the pool")
    seeds: int = Field(1, ge=1, le=100, description="independent runs of each task, each with its own seed (Pass@k)")
    workers: int = Field(1, ge=1, description="tasks run at once")
    ray_address: str | None = None  # run tasks on this Ray cluster ("auto", "ray://host:10001", "local")
    total_budget_s: float | None = Field(None, gt=0, description="no task starts after this much wall time")
    limit: int | None = Field(None, ge=1, description="most tasks taken into the pool")
    warm_start: bool = True  # solvers start from the nearest solved tasks' winners
    # The base of every task's run: solver budget, folds, policy, LLM, --submit and its top-k.
    run: RunConfig = RunConfig(quiet=True)


_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*$", re.IGNORECASE)
_UNIT_S = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_duration(text: str) -> float:
    """'8h', '90m', '600' or '600s' -> seconds."""
    match = _DURATION.match(text)
    if not match:
        raise AgentKError(f"not a duration: {text!r} (say 600, 600s, 90m or 8h)")
    value = float(match.group(1)) * _UNIT_S[match.group(2).lower()]
    if value <= 0:
        raise AgentKError(f"a duration must be positive: {text!r}")
    return value


def default_name(specs: list[str]) -> str:
    """A readable campaign name from what it was pointed at: a folder's or file's name, a search."""
    if not specs:
        return "campaign"
    first = specs[0].rstrip("/")
    if first.startswith("kaggle:"):
        name = "kaggle-" + (first[len("kaggle:"):].replace(":", "-") or "all")
    else:
        name = Path(first).stem or "campaign"
    if len(specs) > 1:
        name += f"-and-{len(specs) - 1}-more"
    return re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-._") or "campaign"
