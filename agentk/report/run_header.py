"""The run report's header: the competition, its metric and scores, the leaderboard place, the
LLM's tokens and the submission, from result.json (`RunResult`, written by `agentk.runner`); while
the run has not finished, what state.json says of it."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from agentk.core.records.results import RunResult, llm_tokens
from agentk.core.records.workspace import Workspace
from agentk.report.page import NotAvailable
from agentk.report.run_section import Record, json_or_empty, section

USAGE_FILE = "llm_usage.json"


class Leaderboard(Record):
    rank: int | None = None
    n_teams: int | None = None
    percentile: float | None = None  # fraction of teams strictly worse
    medal: str | None = None
    public_score: float | None = None  # the score placed: Kaggle's public score, or the test score
    basis: str = "public score"  # which score that is
    submissions: int = 0


class Header(Record):
    competition: str
    source: str | None = None
    metric: str | None = None
    direction: str = "direction not recorded"
    higher_is_better: bool | None = None
    validation_score: float | None = None
    test_score: float | NotAvailable = NotAvailable("not graded")
    test_metric: str | None = None
    model: str | None = None
    leaderboard: Leaderboard | NotAvailable = NotAvailable("not submitted to Kaggle (run with --submit)")
    elapsed_s: float | None = None
    policy: str | None = None
    tokens: int | NotAvailable = NotAvailable("no LLM was used")
    phase: str | None = None
    error: str | None = None
    submission: str | NotAvailable = NotAvailable("no validated submission")  # a link relative to the workspace
    result: NotAvailable | None = None  # set when result.json is missing: the run has not finished


def read_header(root: Path) -> Header:
    workspace = Workspace(root)
    result = RunResult.read(workspace.result_path)
    if result is None:
        state = json_or_empty(workspace.state_path)
        unfinished = NotAvailable("result.json is missing: the run has not finished (or was stopped)")
        return Header(competition=root.name, phase=state.get("phase"), policy=state.get("policy"),
                      elapsed_s=state.get("elapsed_s"), error=state.get("error"),
                      submission=_submission_link(root, None), result=unfinished, test_score=unfinished,
                      leaderboard=unfinished, tokens=section("the LLM usage", lambda: _tokens(None, workspace.logs / USAGE_FILE)))
    direction = result.direction
    header = Header(
        competition=result.competition_id, source=_source(result), metric=result.metric,
        higher_is_better=result.higher_is_better,
        direction="direction not recorded" if direction is None else ("higher is better" if direction.higher_is_better else "lower is better"),
        validation_score=result.validation_score, model=result.model, test_metric=result.test_metric,
        elapsed_s=result.elapsed_s, policy=result.policy, phase=result.phase,
        # A setup that failed before a submission was handed in without a model is shown as the error it was.
        error=result.error or (f"setup failed; the submission was handed in without a model: {result.setup_failure}"
                               if result.setup_failure else None),
        submission=_submission_link(root, result),
    )
    if result.test_score is not None:
        header.test_score = result.test_score
    elif result.test_score_note:
        header.test_score = NotAvailable(result.test_score_note)
    header.leaderboard = section("the leaderboard place", lambda: _leaderboard(result))
    header.tokens = section("the LLM usage", lambda: _tokens(result.llm_usage, workspace.logs / USAGE_FILE))
    return header


def _source(result: RunResult) -> str | None:
    """Where the competition came from; a Kaggle code competition says so (its leaderboard is a
    kernel's rerun on a hidden test set, so --submit sends a kernel, not a file)."""
    if getattr(result, "code_competition", False):
        return "Kaggle code competition (--submit sends a kernel that runs the exported predictor)"
    return result.source


def _leaderboard(result: RunResult) -> Leaderboard | NotAvailable:
    """Kaggle's place for a submitted run; else the grader's place of the test score on the
    competition's leaderboard file."""
    kaggle = result.kaggle or {}
    board = kaggle.get("leaderboard")
    sent = len(kaggle.get("submissions") or [])
    if board:
        return Leaderboard(rank=board.get("rank"), n_teams=board.get("n_teams"), percentile=board.get("percentile"),
                           medal=board.get("medal"), public_score=kaggle.get("best_public"), submissions=sent)
    local = result.test_leaderboard
    if local is not None:
        return Leaderboard(rank=local.rank, n_teams=local.n_teams, percentile=local.percentile, medal=local.medal,
                           public_score=result.test_score, basis="test score")
    if not kaggle:
        return NotAvailable("not submitted to Kaggle (run with --submit), and the competition has no leaderboard.csv")
    reason = kaggle.get("stop_reason") or ("Kaggle has not scored the submission" if sent else "nothing was sent to Kaggle")
    return NotAvailable(f"no leaderboard place: {reason}")


def _tokens(usage: dict[str, Any] | None, usage_file: Path) -> int | NotAvailable:
    usage = usage or json_or_empty(usage_file)
    if not usage:
        return NotAvailable("no LLM was used (no logs/llm_usage.json)")
    return llm_tokens(usage)


def _submission_link(root: Path, result: RunResult | None) -> str | NotAvailable:
    """The submission as a link relative to the workspace, so the page works wherever it is opened
    from (result.json keeps the absolute path of the machine that ran it)."""
    workspace = Workspace(root)
    if result is not None and not result.valid_submission:
        return NotAvailable("the run has no validated submission" + ("; its error is below" if result.error else ""))
    if workspace.submission_path.is_file():
        return workspace.submission_path.relative_to(root).as_posix()
    if result is not None and result.submission_path and Path(result.submission_path).is_file():
        return Path(os.path.relpath(result.submission_path, root)).as_posix()
    return NotAvailable("submissions/submission.csv is missing")
