"""The Kaggle end of a run: send a finished run's validated submissions, then place the public
score on the leaderboard (the download end is the Kaggle source, agentk/sources/kaggle.py)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentk.core.artifacts import SetupLayout
from agentk.core.errors import AgentKError
from agentk.core.metrics.direction import Direction
from agentk.core.records.results import RunResult, SolveResult
from agentk.core.records.workspace import Workspace, read_json_object
from agentk.grading import leaderboard_position
from agentk.kaggle.client import KaggleClient
from agentk.kaggle.errors import DailyLimitReached, DuplicateSubmission
from agentk.kaggle.submit import (
    LedgerEntry,
    SubmissionLedger,
    file_digest,
    submission_message,
    submit_and_score,
)
from unit_tests_setup.submission_rules import validate_against_setup

if TYPE_CHECKING:
    from agentk.core.records.config import RunConfig
    from agentk.core.records.events import EventLog


# What Kaggle's metadata says of a run's competition (its slug, whether it is a code competition),
# written by the runner into the workspace.
KAGGLE_FACTS = "kaggle.json"


def kaggle_facts(workspace: Workspace) -> dict[str, Any]:
    return read_json_object(workspace.root / KAGGLE_FACTS)


def ledger_for(workspace: Workspace) -> SubmissionLedger:
    return SubmissionLedger(workspace.submissions / "kaggle_submissions.jsonl")


def remaining_today(client: KaggleClient, slug: str, entries: Iterable[LedgerEntry] = (),
                    now: datetime | None = None) -> int:
    """Submissions `slug` can still take today (UTC), over every run of a campaign.

    Kaggle's own count (its limits call) is the authority: it sees every earlier run, even one
    whose workspace is gone. The ledgers' entries (any runs' workspaces, repeats allowed) bound it
    too, since a submission just sent or cut off mid-upload may not be counted by Kaggle yet:
    the answer is the smaller of the two.
    """
    allowed = client.limits(slug).allowed_now
    daily = client.competition(slug).max_daily_submissions
    if daily <= 0:  # Kaggle states no daily maximum: its count alone decides
        return max(0, allowed)
    day = _utc_naive(now or datetime.now(UTC)).date()
    sent_today = {e.record.ref for e in entries
                  if e.slug == slug and e.record.date is not None and _utc_naive(e.record.date).date() == day}
    return max(0, min(allowed, daily - len(sent_today)))


def _utc_naive(moment: datetime) -> datetime:
    """Kaggle's dates and the ledger's are naive UTC; an aware one is brought to that."""
    return moment.astimezone(UTC).replace(tzinfo=None) if moment.tzinfo else moment


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
    result = RunResult.read(workspace.result_path)
    file = Path(file) if file is not None else workspace.submission_path
    if result is None or not result.valid_submission or not file.is_file():
        raise AgentKError(f"no validated submission in {workspace.root}: run `agentk run {slug}` first")
    if kaggle_facts(workspace).get("code_competition"):
        raise AgentKError(f"{slug} is a code competition: Kaggle takes a kernel, not a file; `agentk run {slug} "
                          "--submit` resumes the finished run and sends its predictor through a kernel")
    if file.resolve() != workspace.submission_path.resolve():
        _validate_extra_file(workspace, file)
    client = client or KaggleClient()
    text = message or submission_message(str(result.model), str(result.metric), result.validation_score)
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
    direction = result.direction
    if record.public_score is not None and direction is not None:
        board = client.leaderboard(slug, keep_dir=workspace.submissions)
        position = leaderboard_position(record.public_score, board, direction.higher_is_better)
        report["leaderboard"] = {"rank": position.rank, "n_teams": position.n_teams, "percentile": position.percentile, "medal": position.medal}
    return report


def _validation_problems(workspace: Workspace, file: Path, plan: dict[str, Any]) -> list[str]:
    return validate_against_setup(workspace, file, plan)


def _validate_extra_file(workspace: Workspace, file: Path) -> None:
    problems = _validation_problems(workspace, file, read_json_object(SetupLayout(workspace.setup).plan))
    if problems:
        raise AgentKError(f"{file} did not pass local validation: {problems[0]}")


# ---- sending a finished run's best k candidates ----------------------------------------


@dataclass(frozen=True)
class SubmissionCandidate:
    model: str
    validation_score: float | None
    path: Path


def _submission_candidates(workspace: Workspace, events: EventLog) -> list[SubmissionCandidate]:
    """The solver's per-model submissions, its pick first, then best first; a solve from before candidates existed
    (a resumed older workspace) offers its single final submission instead."""
    solve = SolveResult.read(workspace.solve)
    if not solve.candidates:
        return [SubmissionCandidate(str(solve.model), solve.validation_score, workspace.submission_path)]
    found: list[SubmissionCandidate] = []
    for entry in solve.candidates:
        path = workspace.root / entry.path
        if not path.is_file():
            events.emit("kaggle_candidate_skipped", model=entry.model, reason=f"missing file {path}")
            continue
        found.append(SubmissionCandidate(str(entry.model), entry.validation_score, path))
    # The solve's own pick leads (its choice rule may take a candidate within noise of the best
    # CV: choice_rule.py); the others follow best first (a stable sort).
    found.sort(key=lambda candidate: candidate.model != solve.model)
    return found


def _valid_candidates(workspace: Workspace, candidates: list[SubmissionCandidate], events: EventLog) -> list[SubmissionCandidate]:
    """Only files that pass the same local validation as the final submission may reach Kaggle."""
    plan = read_json_object(SetupLayout(workspace.setup).plan)
    valid = []
    for candidate in candidates:
        problems = _validation_problems(workspace, candidate.path, plan)
        if problems:
            events.emit("kaggle_candidate_skipped", model=candidate.model, reason=f"invalid: {problems[0]}")
            continue
        valid.append(candidate)
    return valid


def _distinct_files(candidates: list[SubmissionCandidate], events: EventLog) -> list[SubmissionCandidate]:
    """Best first, one candidate per file content: a later copy is dropped and says so."""
    seen: dict[str, str] = {}
    kept = []
    for candidate in candidates:
        digest = file_digest(candidate.path)
        if digest in seen:
            events.emit("kaggle_candidate_skipped", model=candidate.model, reason=f"identical to {seen[digest]}'s file")
            continue
        seen[digest] = candidate.model
        kept.append(candidate)
    return kept


def submit_top_k(workspace: Workspace, slug: str, config: RunConfig, events: EventLog) -> dict[str, Any]:
    """Send the top-k validated candidates best-first; a used-up daily allowance or a file Kaggle
    already has ends or skips a send, never the run (the run itself has succeeded by now)."""
    # K counts the best distinct files: two models predicting the same labels (a bag and its
    # model, often, under accuracy) are one submission, so the copy gives its slot to the next
    # file. An invalid or already-sent file leaves its slot empty rather than pulling in a weaker
    # model the user did not ask for.
    distinct = _distinct_files(_submission_candidates(workspace, events), events)
    chosen = _valid_candidates(workspace, distinct[: config.submit_top_k], events)
    metric = str(read_json_object(SetupLayout(workspace.setup).plan).get("metric"))
    reports: list[dict[str, Any]] = []
    limit_reached: str | None = None
    for candidate in chosen:
        try:
            report = _send(workspace, slug, config, events, candidate, metric)
        except DailyLimitReached as exc:
            limit_reached = str(exc)
            events.emit("kaggle_daily_limit", model=candidate.model, message=limit_reached)
            events.say(f"  kaggle: daily limit reached, {candidate.model} not sent: {limit_reached}")
            break
        if report is not None:
            reports.append(report)
    run = RunResult.read(workspace.result_path)  # written by the runner just before the sends
    return _kaggle_summary(reports, run.direction if run is not None else None, limit_reached)


def _send(workspace: Workspace, slug: str, config: RunConfig, events: EventLog,
          candidate: SubmissionCandidate, metric: str) -> dict[str, Any] | None:
    """One candidate to Kaggle and its scored report; None when the ledger says Kaggle has it."""
    message = submission_message(candidate.model, metric, candidate.validation_score)
    try:
        with events.status(f"submitting {candidate.model} to Kaggle ({slug}) and waiting for the score …"):
            report = submit_run(workspace, slug, file=candidate.path, message=message, force=config.force_submit,
                                timeout_s=config.submit_timeout_s, interval_s=config.submit_poll_s)
    except DuplicateSubmission as exc:
        events.emit("kaggle_candidate_skipped", model=candidate.model, reason=str(exc))
        return None
    report = {**report, "model": candidate.model, "validation_score": candidate.validation_score}
    events.emit("kaggle_submission", **report)
    _say_report(events, report)
    return report


def _kaggle_summary(reports: list[dict[str, Any]], direction: Direction | None, limit_reached: str | None) -> dict[str, Any]:
    """result.json's "kaggle": every report, and the best public score with its leaderboard place."""
    scored = [r for r in reports if r.get("public_score") is not None]
    best: dict[str, Any] | None = None
    if scored:
        if direction is None:  # no known direction, no "best": the best by validation stands in
            best = scored[0]
        else:
            best = direction.best(scored, key=lambda r: r["public_score"]) or scored[0]
    return {
        "submissions": reports,
        "best_public": best["public_score"] if best else None,
        "best_ref": best["ref"] if best else None,
        "best_model": best["model"] if best else None,
        "leaderboard": best["leaderboard"] if best else None,
        "daily_limit_reached": limit_reached is not None,
        "stop_reason": limit_reached,
    }


def _say_report(events: EventLog, report: dict[str, Any]) -> None:
    board = report.get("leaderboard") or {}
    place = f", rank {board['rank']}/{board['n_teams']} ({board.get('medal') or 'no medal'})" if board else ""
    events.say(f"  kaggle: {report['model']} submission {report['ref']} {report['status']}, public score {report['public_score']}{place}")
