"""The Kaggle ends of a run: turn a reference into a local folder, and send a finished run's
validated submission, then place its public score on the leaderboard."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentk.errors import AgentKError
from agentk.grading import leaderboard_position
from agentk.kaggle.client import KaggleClient
from agentk.kaggle.fetch import fetch_competition
from agentk.kaggle.reference import parse_competition_reference
from agentk.kaggle.submit import SubmissionLedger, submission_message, submit_and_score
from agentk.workspace import Workspace, read_json_object


def kaggle_slug(text: str) -> str | None:
    """The competition slug when `text` names a Kaggle competition rather than an existing folder."""
    if Path(text).expanduser().exists():
        return None
    return parse_competition_reference(text)


def fetch_source(slug: str, cache_root: Path, client: KaggleClient | None = None) -> Path:
    """Download (or reuse) the competition as a local folder under cache_root/<slug>."""
    return fetch_competition(client or KaggleClient(), slug, Path(cache_root) / slug).root


def ledger_for(workspace: Workspace) -> SubmissionLedger:
    return SubmissionLedger(workspace.submissions / "kaggle_submissions.jsonl")


def submit_run(
    workspace: Workspace,
    slug: str,
    file: Path | None = None,
    message: str | None = None,
    force: bool = False,
    client: KaggleClient | None = None,
    timeout_s: float = 600.0,
    interval_s: float = 10.0,
) -> dict[str, Any]:
    """Submit a validated file of this workspace (default: its final submission) and report the
    public/private scores and the leaderboard position of the public score."""
    result = read_json_object(workspace.result_path)
    file = Path(file) if file is not None else workspace.submission_path
    if not result.get("valid_submission") or not file.is_file():
        raise AgentKError(f"no validated submission in {workspace.root}: run `agentk run {slug}` first")
    if file.resolve() != workspace.submission_path.resolve():
        _validate_extra_file(workspace, file)
    client = client or KaggleClient()
    text = message or submission_message(str(result.get("model")), str(result.get("metric")), result.get("validation_score"))
    record = submit_and_score(client, slug, file, text, ledger_for(workspace), force=force, timeout_s=timeout_s, interval_s=interval_s)
    report: dict[str, Any] = {
        "slug": slug,
        "ref": record.ref,
        "status": record.status,
        "message": text,
        "public_score": record.public_score,
        "private_score": record.private_score,
        "leaderboard": None,
    }
    higher = result.get("higher_is_better")
    if record.public_score is not None and isinstance(higher, bool):
        board = client.leaderboard(slug, keep_dir=workspace.submissions)
        position = leaderboard_position(record.public_score, board, higher)
        report["leaderboard"] = {"rank": position.rank, "n_teams": position.n_teams, "percentile": position.percentile, "medal": position.medal}
    return report


def _validate_extra_file(workspace: Workspace, file: Path) -> None:
    from unit_tests_setup.submission_rules import validate_against_setup

    problems = validate_against_setup(workspace, file, read_json_object(workspace.setup / "plan.json"))
    if problems:
        raise AgentKError(f"{file} did not pass local validation: {problems[0]}")
