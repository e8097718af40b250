"""A pool task made ready for the curriculum: its data fetched and copied into its workspace's
raw/ (the agent's view, without answers), its description read and its tree described.

The curriculum compares what an agent sees, so it reads raw/ exactly as a run would; a run started
later finds raw/ up to date and copies nothing again.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from agentk.campaign.state import CampaignFolder, TaskState
from agentk.core.records.campaign_record import seed_workspaces
from agentk.core.errors import AgentKError
from agentk.core.records.workspace import Workspace, atomic_write_json, read_json_object, workspace_for
from agentk.core.records.workspace_lock import workspace_lock
from agentk.sources import load_competition
from agentk.sources.common import DESCRIPTION_NAME
from agentk.sources.kaggle import fetch_source
from curriculum.task_memory import TaskText
from curriculum.tree_description import describe_tree

@dataclass(frozen=True)
class DescribedTask:
    workspace: Path
    text: TaskText


class TaskDescriber:
    """Describes tasks once: the text is kept in the campaign folder and read back on resume."""

    def __init__(self, folder: CampaignFolder) -> None:
        self.folder = folder

    def describe(self, task: TaskState) -> DescribedTask:
        saved = self.saved(task)
        if saved is not None:
            return saved
        workspace = self._prepare(task)
        tree = describe_tree(workspace.raw)
        description_path = workspace.raw / DESCRIPTION_NAME
        description = description_path.read_text(encoding="utf-8", errors="replace") if description_path.is_file() else ""
        text = TaskText(task_id=task.key, description=description or task.key, tree=tree.text, complexity=tree.complexity)
        record = {"workspace": str(workspace.root), "task_id": text.task_id, "description": text.description,
                  "tree": text.tree, "complexity": text.complexity, "stats": tree.stats}
        atomic_write_json(self.folder.task_text_path(task.key), record)
        return DescribedTask(workspace.root, text)

    def saved(self, task: TaskState) -> DescribedTask | None:
        record = read_json_object(self.folder.task_text_path(task.key))
        if not record.get("tree") or not record.get("workspace"):
            return None
        text = TaskText(task_id=task.key, description=str(record.get("description") or task.key),
                        tree=str(record["tree"]), complexity=float(record.get("complexity") or 0.0))
        return DescribedTask(Path(record["workspace"]), text)

    def _prepare(self, task: TaskState) -> Workspace:
        source: str | Path = task.source
        if task.kind == "kaggle":
            if not task.slug:
                raise AgentKError(f"task {task.key} has no Kaggle slug")
            source = fetch_source(task.slug, self.folder.workspaces / "_kaggle", quiet=True)
        elif not Path(task.source).exists():
            raise AgentKError(f"its folder {task.source} is gone")
        competition = load_competition(source)
        workspace = workspace_for(seed_workspaces(self.folder.workspaces, task.seed), competition.id)
        with workspace_lock(workspace.root):
            workspace.create()
            competition.prepare(workspace.raw)
        return workspace
