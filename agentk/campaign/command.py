"""What `agentk campaign` does with its options: find or start the campaign folder, merge the
options with the ones it last ran with, and drive it; or show its status."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from rich.console import RenderableType

from agentk.campaign.driver import CampaignDriver
from agentk.campaign.options import CAMPAIGNS_DIR, CampaignOptions, default_name, parse_duration
from agentk.campaign.state import CampaignFolder, CampaignState
from agentk.core.records.campaign_record import TaskStatus
from agentk.campaign.status import render_status
from agentk.core.records.config import RunConfig, deep_merge
from agentk.core.errors import AgentKError
from agentk.core.records.events import EventLog
from curriculum.selection import Order

CURRICULUM_FIELDS = ("alpha", "beta", "r")


def campaign_folder(specs: list[str], name: str | None, campaign_dir: Path | None, workspace_root: Path) -> tuple[CampaignFolder, str]:
    if campaign_dir is not None:
        return CampaignFolder(Path(campaign_dir).resolve()), name or Path(campaign_dir).name
    name = name or default_name(specs)
    return CampaignFolder((Path(workspace_root) / CAMPAIGNS_DIR / name).resolve()), name


def merged_options(saved: dict[str, Any], run_config: dict[str, Any], given: dict[str, Any]) -> CampaignOptions:
    """The options a campaign last ran with, changed by what this command gives (the same command
    with nothing new resumes exactly as it ran)."""
    base = CampaignOptions.model_validate(saved) if saved else CampaignOptions()
    given = dict(given)
    if "order" in given:
        try:
            given["order"] = Order(given["order"])
        except ValueError:
            raise AgentKError(f"--order must be one of {', '.join(o.value for o in Order)}, not {given['order']!r}") from None
    if "total_budget" in given:
        given["total_budget_s"] = parse_duration(str(given.pop("total_budget")))
    curriculum = {k: given.pop(k) for k in CURRICULUM_FIELDS if k in given}
    run = RunConfig.model_validate(deep_merge(json.loads(base.run.model_dump_json()), _nested(run_config)))
    run = run.model_copy(update={"quiet": True})
    data = {**json.loads(base.model_dump_json()), **given,
            "curriculum": {**base.curriculum.model_dump(), **curriculum}, "run": json.loads(run.model_dump_json())}
    try:
        return CampaignOptions.model_validate(data)
    except ValueError as exc:
        raise AgentKError(f"campaign options: {exc}".splitlines()[0]) from None


def _nested(flat: dict[str, Any]) -> dict[str, Any]:
    """RunConfig's flat option names (time_budget_s, folds, seed) into its nested solve settings."""
    return RunConfig.model_validate(flat).model_dump(mode="json", exclude_unset=True)


def run_campaign_command(specs: list[str], *, name: str | None, campaign_dir: Path | None,
                         run_config: dict[str, Any], given: dict[str, Any]) -> CampaignState:
    workspace_root = Path(run_config.get("workspace_root") or RunConfig().workspace_root)
    folder, name = campaign_folder(specs, name, campaign_dir, workspace_root)
    saved = folder.load()
    if saved is None and not specs:
        raise AgentKError("give the competitions to run: folders, a task file or kaggle:CATEGORY")
    options = merged_options(saved.options if saved else {}, {k: v for k, v in run_config.items() if k != "workspace_root"}, given)
    events = EventLog(folder.root / "events.jsonl")
    return CampaignDriver(folder, options, events).run(specs, saved.name if saved else name)


def campaign_status(path: Path) -> RenderableType:
    """One campaign's tasks, decisions and next pick; given a workspace root (or its _campaigns
    folder), the campaigns under it, one line each."""
    folder = CampaignFolder(Path(path))
    state = folder.load()
    if state is None:
        listed = _campaigns_under(Path(path))
        if listed is not None:
            return listed
        raise AgentKError(f"no campaign in {path} (no state.json, and no campaigns under {path / CAMPAIGNS_DIR})")
    options = CampaignOptions.model_validate(state.options) if state.options else CampaignOptions()
    events = EventLog(None, quiet=True)
    return render_status(folder, state, CampaignDriver(folder, options, events).preview(state))


def _campaigns_under(root: Path) -> RenderableType | None:
    """A table of the campaigns in root/_campaigns (or root itself when it is that folder)."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    base = root if root.name == CAMPAIGNS_DIR else root / CAMPAIGNS_DIR
    found = [(child, CampaignFolder(child).load()) for child in sorted(base.iterdir())] if base.is_dir() else []
    found = [(child, state) for child, state in found if state is not None]
    if not found:
        return None
    table = Table(title=f"{len(found)} campaign(s)")
    for column in ("campaign", "tasks", "solved", "failed", "pending", "rounds"):
        table.add_column(column)
    for child, state in found:
        counts = Counter(task.status for task in state.tasks.values())
        table.add_row(child.name, str(len(state.tasks)), str(counts[TaskStatus.SOLVED]),
                      str(counts[TaskStatus.FAILED] + counts[TaskStatus.GAVE_UP]), str(counts[TaskStatus.PENDING]),
                      str(state.round))
    return Group(table, Text(f"one campaign: agentk campaign status {base}/NAME"))
