"""One competition, end to end: source → workspace → setup → solve → submission → grade → result.json.

Each phase is recorded in state.json as it completes, so running the same command again after a
kill resumes where the run stopped.
"""

from __future__ import annotations

import json
import time
from contextlib import nullcontext
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentk.core.artifacts import SetupLayout
from agentk.core.records.config import CONFIG_FILE, PolicyName, RunConfig
from agentk.core.errors import AgentKError, SetupFailed, SolveFailed
from agentk.core.records.events import EventLog
from agentk.core.sandbox.isolation import isolation_status
from agentk.core.records.results import LeaderboardPlace, MetaRecord, RunResult, SolveResult, StageRecord, run_direction
from agentk.core.sandbox.stage_host import StageHost
from agentk.core.records.workspace import RunState, Workspace, atomic_write_json, read_json_object, workspace_for
from agentk.core.records.workspace_lock import workspace_lock
from agentk.grading import LeaderboardPosition, grade_run
from agentk.solve_sandbox import open_solve_host, solver_command, solver_limits
from agentk.llm.config import llm_configured
from agentk.sources import load_competition
from agentk.sources.base import Competition
from agentk.sources.kaggle import kaggle_slug
from curriculum.embedding import EmbeddingUnavailable
from curriculum.experience import ExperienceStore, ingest_attempts
from setup_pipeline.deadline import Deadline, SetupDeadline, setup_deadline_s
from setup_pipeline.expert.expert_policy import ExpertPolicy
from setup_pipeline.hand_in import hand_in_after_failure, hand_in_at_deadline
from setup_pipeline.mdp import Blame, SetupMDP
from setup_pipeline.policy import Policy
from solve_pipeline.base.submission_record import read_record
from unit_tests_setup.submission_rules import validate_against_setup

if TYPE_CHECKING:
    from agentk.solve_advisor import SolveAdvisor

# Kaggle's fetch and submit, the export bundle and the LLM's clients are imported where they are
# used: a local run with the expert needs none of them, and they cost it a second of CPU to import.


@dataclass(frozen=True)
class RunOutcome:
    workspace: Workspace
    result: RunResult


def run_competition(source: str | Path, config: RunConfig) -> RunOutcome:
    """Run one competition; raises AgentKError (after writing result.json) when it cannot finish."""

    slug = kaggle_slug(str(source))
    if config.submit and slug is None:
        raise AgentKError("--submit needs a Kaggle competition (a URL or slug), not a local folder")
    if slug is not None:
        from agentk.sources.kaggle import fetch_source

        source = fetch_source(slug, Path(config.workspace_root).resolve() / "_kaggle", quiet=config.quiet)
    competition = load_competition(source, metric=config.metric)
    workspace = workspace_for(config.workspace_root, competition.id)
    # One run per workspace from setup to submit: a second one would mix its files into ours.
    with workspace_lock(workspace.root):
        return _run_locked(competition, workspace, source, slug, config)


def _run_locked(competition: Competition, workspace: Workspace, source: str | Path, slug: str | None,
                config: RunConfig) -> RunOutcome:
    removed = workspace.create()
    config = _with_llm_solve(config)
    # The solver reads its settings back from here (config.solve).
    atomic_write_json(workspace.root / CONFIG_FILE, json.loads(config.model_dump_json()))
    events = EventLog(workspace.logs / "events.jsonl", quiet=config.quiet)
    state = workspace.load_state()
    started = time.monotonic()
    events.emit("run_start", competition=competition.id, source=str(source), resumed_phase=state.phase)
    if removed:
        events.emit("temp_files_removed", count=len(removed))
    events.say(f"[bold]agentk[/] {competition.id} → {workspace.root}" + (f"  (resuming: {state.phase})" if state.phase != "new" else ""))
    _warn_without_sandbox(events)

    def save(current: RunState) -> None:
        workspace.save_state(current)

    kaggle_report: dict[str, Any] | None = None
    kaggle_facts = _kaggle_facts(workspace, source, slug, events)
    solve_host: StageHost | None = None

    try:
        for warning in competition.prepare(workspace.raw):
            events.emit("source_warning", message=warning)
            events.say(f"  [yellow]warning:[/] {warning}")
        # One warm sandbox for the run's probe, light solve and solve (solve_sandbox.py), closed in
        # the finally below whatever ends the run. Started now, so its imports overlap the setup's
        # first stages instead of delaying the maps probe; not earlier: prepare may put a new raw/
        # in place, and the sandbox binds the folder it found when it started.
        solve_host = open_solve_host(workspace, config)
        if state.phase == "done" and state.setup_failure:
            # An earlier run handed in without a model after setup failed: this one tries setup
            # again (its failed stage gets fresh attempts); the handed-in file stays until a solve
            # replaces it, or is handed in again should setup fail again.
            state.phase = "setup"
        if state.phase in ("new", "setup", "solve"):
            solve_host.start()
        if state.phase == "new":
            state.phase = "setup"
            save(state)
        if state.phase == "setup":
            memory = _experience_store(config, events)
            policy, blame = _policy(config, workspace, memory, competition.id)
            state.policy = policy.name
            events.emit("policy", name=policy.name, credit_assignment=blame is not None)
            # Counted from the run's start: reading and splitting the source is setup's cost too.
            deadline = Deadline.starting(setup_deadline_s(config.setup, config.solve.time_budget_s), started)
            try:
                SetupMDP(workspace, policy, events, config.setup, on_solver_line=_solver_printer(events), blame=blame,
                         deadline=deadline, solve_host=solve_host).run(state, save)
            except SetupDeadline as exc:
                # A step the deadline cut short failed for want of time, not of a fix: nothing the
                # experience memory should learn from (and embedding it costs the run seconds).
                memory = None
                hand_in_at_deadline(workspace, events, exc)
                state.phase = "done"
                save(state)
            except SetupFailed as exc:
                # A stage or meta check failed after its retries: the run still hands in what it
                # can without a model, keeping the failure in its records (result.json's
                # setup_failure), so a campaign counts it as a failed setup; with nothing to hand
                # in it fails as before.
                if not hand_in_after_failure(workspace, events, exc):
                    raise
                state.setup_failure = str(exc)
                state.phase = "done"
                save(state)
            finally:
                _remember(memory, competition.id, workspace, events)
            for line in read_json_object(SetupLayout(workspace.setup).plan).get("assumptions") or []:
                events.say(f"  [yellow]assumed[/] {line}")
            if state.phase == "setup":
                state.setup_failure = None
                state.phase = "solve"
                save(state)
        if state.phase == "solve":
            _solve(workspace, config, events, competition.id, solve_host)
            state.phase = "done"
            save(state)
        state.error = None
        if config.submit and slug is not None:
            atomic_write_json(workspace.result_path, _result(competition, workspace, state, leaderboard=config.leaderboard,
                                                             kaggle=kaggle_facts).to_json())
            from agentk.publish import submit_top_k
            from agentk.publish_code import submit_code_competition

            if kaggle_facts.get("code_competition"):
                kaggle_report = submit_code_competition(workspace, slug, config, events)
            else:
                kaggle_report = submit_top_k(workspace, slug, config, events)
    except AgentKError as exc:
        state.error = str(exc)
        raise
    finally:
        if solve_host is not None:
            solve_host.close()
        state.elapsed_s += time.monotonic() - started
        save(state)
        result = _result(competition, workspace, state, kaggle_report, leaderboard=config.leaderboard,
                         kaggle=kaggle_facts)
        record = result.to_json()
        atomic_write_json(workspace.result_path, record)
        _write_report(workspace, events)
        events.emit("run_end", **{k: v for k, v in record.items() if k != "setup"})
    return RunOutcome(workspace, result)


def _kaggle_facts(workspace: Workspace, source: str | Path, slug: str | None, events: EventLog) -> dict[str, Any]:
    """What Kaggle's metadata says about the competition, kept in the workspace (kaggle.json) and
    in result.json: its slug, and whether it is a code competition (kernel submissions only)."""
    if slug is None:
        return {}
    from agentk.kaggle.fetch import is_code_competition
    from agentk.publish import KAGGLE_FACTS

    facts = {"slug": slug, "code_competition": is_code_competition(Path(source))}
    atomic_write_json(workspace.root / KAGGLE_FACTS, facts)
    events.emit("kaggle_competition", **facts)
    if facts["code_competition"]:
        events.say("  code competition: Kaggle scores a notebook on its hidden test set; with --submit the "
                   "predictor is exported and run by a Kaggle kernel")
    return facts


def _write_report(workspace: Workspace, events: EventLog) -> None:
    """Write or refresh the run's report.html; a report that cannot be written is an event, never a
    failed run (imported here: a broken plotting install must not stop a run either)."""
    try:
        from agentk.report.run_report import write_run_report

        path = write_run_report(workspace.root)
    except Exception as exc:  # noqa: BLE001 - the report is a view of the run, not part of it
        events.emit("report_failed", reason=f"{type(exc).__name__}: {exc}")
        return
    events.emit("report_written", path=str(path))
    events.say(f"  report: {path}")


def _experience_store(config: RunConfig, events: EventLog) -> Any:
    """The experience memory shared by every run under this workspace root (None if unavailable)."""
    try:
        store = ExperienceStore(Path(config.workspace_root).resolve() / "_memory" / "experience.lance")
        # An LLM's prompts read the memory from the first failure on: a broken store turns the
        # memory off here rather than failing a stage. The expert only writes to it, at the end.
        return store if _policy_choice(config) == PolicyName.EXPERT else store.open()
    except (ImportError, EmbeddingUnavailable, OSError) as exc:
        events.emit("memory_unavailable", reason=f"{type(exc).__name__}: {exc}")
        return None


def _remember(memory: Any, competition_id: str, workspace: Workspace, events: EventLog) -> None:
    """Store this run's setup attempts (fixes and failures) for later runs' prompts."""
    if memory is None:
        return

    try:
        added = ingest_attempts(memory, competition_id, workspace.attempts_log)
    except Exception as exc:  # noqa: BLE001 - memory is a help, never a reason to fail a run
        events.emit("memory_unavailable", reason=f"{type(exc).__name__}: {exc}")
        return
    events.emit("memory_ingested", experiences=added)


def _policy_choice(config: RunConfig) -> PolicyName:
    configured = llm_configured(config.llm_base_url, config.llm_model)
    return config.policy or (PolicyName.HYBRID if configured else PolicyName.EXPERT)


def _with_llm_solve(config: RunConfig) -> RunConfig:
    """An LLM policy steers the solve too unless the run said --no-llm-solve; the expert never asks
    (its config stays as it was before the option existed)."""
    if config.solve.llm_solve is None and _policy_choice(config) != PolicyName.EXPERT:
        return config.with_solve(llm_solve=True)
    return config


def _policy(config: RunConfig, workspace: Workspace, memory: Any = None, competition_id: str = "") -> tuple[Policy, Blame | None]:
    """The expert alone, or with an LLM served by vLLM or any OpenAI-compatible server."""

    choice = _policy_choice(config)
    if choice == PolicyName.EXPERT:
        return ExpertPolicy(), None
    _require_sandbox_for_llm_code(config)
    from agentk.llm import LLMConfig, make_client
    from setup_pipeline.llm_policy import HybridPolicy, LLMPolicy, assign_blame

    overrides = {"base_url": config.llm_base_url, "model": config.llm_model, "token_budget": config.llm_token_budget, "seed": config.solve.seed}
    llm_config = LLMConfig.from_env(**{k: v for k, v in overrides.items() if v is not None})
    llm_config.require_model()
    client = make_client(llm_config, workspace.root)
    llm = LLMPolicy(client, experience=memory, competition_id=competition_id)
    policy: Policy = llm if choice == PolicyName.LLM else HybridPolicy(ExpertPolicy(), llm)
    return policy, (partial(assign_blame, client) if config.credit_assignment else None)


def _require_sandbox_for_llm_code(config: RunConfig) -> None:
    """LLM-written code runs only isolated, unless the user accepts the risk in so many words."""
    status = isolation_status()
    if status.available:
        return
    if not config.unsafe_no_sandbox:
        raise AgentKError(f"no sandbox for LLM-written code: {status.reason}. Install bubblewrap, use --policy expert, "
                          "or pass --unsafe-no-sandbox to run it with your full rights")


def _warn_without_sandbox(events: EventLog) -> None:
    status = isolation_status()
    events.emit("isolation", available=status.available, reason=status.reason)
    if not status.available:
        events.say(f"[bold red]warning: generated code runs WITHOUT a sandbox[/] ({status.reason}); "
                   "it can read and change whatever you can")


def _solve(workspace: Workspace, config: RunConfig, events: EventLog, competition_id: str = "",
           host: StageHost | None = None) -> None:
    events.say(f"  solve: model race, HEBO tuning, blending; {config.solve.folds}-fold CV, budget {config.solve.time_budget_s:.0f} s")
    advisor = _solve_advisor(config, workspace, events, competition_id)
    try:
        with events.status("solving …") as status:
            result = _run_solver(workspace, config, events, status, advisor, host)
    finally:
        if advisor is not None:
            advisor.close()
            advisor.remember_kept()
    plan = read_json_object(SetupLayout(workspace.setup).plan)
    problems = validate_against_setup(workspace, workspace.submission_path, plan)
    if not result.ok:
        if problems:
            raise SolveFailed(f"the solver failed: {result.error_summary(max_lines=1)}")
        # Each phase writes the best submission so far: a solver cut short still leaves a good one.
        events.say(f"  [yellow]warning:[/] the solver stopped early ({result.error_summary(max_lines=1)}); "
                   "keeping its best submission so far")
    if problems:
        raise SolveFailed(f"the submission is not valid: {problems[0]}")
    events.say(f"  submission: [green]valid[/] → {workspace.submission_path}")


def _solve_advisor(config: RunConfig, workspace: Workspace, events: EventLog, competition_id: str) -> SolveAdvisor | None:
    """The LLM that answers the solver's decision requests, when the run asked for one."""
    if not config.solve.llm_solve:
        return None
    if _policy_choice(config) == PolicyName.EXPERT:
        raise AgentKError("--llm-solve needs an LLM: give --llm URL (and --model), with --policy llm or hybrid")
    _require_sandbox_for_llm_code(config)  # the model's feature code runs inside the solver
    events.say("  solve: the LLM chooses the solver's actions (the expert's schedule is the fallback)")
    from agentk.solve_advisor import SolveAdvisor, llm_client

    return SolveAdvisor(llm_client(config, workspace.root), workspace.solve, events,
                        memory=_experience_store(config, events), competition_id=competition_id)


def _run_solver(workspace: Workspace, config: RunConfig, events: EventLog, status: Any,
                advisor: SolveAdvisor | None = None, host: StageHost | None = None):
    """The solver in the run's solve host (its sandbox: solve_sandbox.py); a caller without one
    gets a host for this solve alone, which is a fresh run_python with a start-up on top."""
    with (nullcontext(host) if host is not None else open_solve_host(workspace, config)) as solver_host:
        return solver_host.run(solver_command(workspace.root), limits=solver_limits(workspace, config),
                               on_stdout_line=_solver_printer(events, status, advisor), log_prefix=workspace.logs / "solve")


def _solver_printer(events: EventLog, status: Any = None, advisor: SolveAdvisor | None = None):
    """Turns the solver's JSON lines into events, a line per model and a live fold status; a
    decision request goes to the advisor (only an LLM solve makes them)."""

    def on_line(line: str) -> None:
        if not line.startswith("{"):
            return
        try:
            event = json.loads(line)
        except ValueError:
            return
        kind = event.pop("event", None)
        events.emit("solver", kind=kind, **event)
        if kind == "decision_request" and advisor is not None:
            advisor.on_request(event)
        if kind == "fold" and status is not None:
            status.update(f"solving: {event.get('model')} fold {event.get('fold', 0) + 1} (elapsed {event.get('elapsed_s', 0):.0f} s)")
        if kind == "model" and event.get("score") is not None:
            events.say(f"    model {event.get('model', '?'):<16} CV {event['score']:.5f}")
        elif kind in ("device", "image_backbone", "spectrogram"):
            events.say(f"    [yellow]{event.get('message')}[/]")
        elif kind == "pruned":
            events.say(f"    pruned {event.get('model', '?'):<15} (weaker first fold)")
        elif kind == "trial" and status is not None:
            score = event.get("score")
            shown = "failed" if score is None else f"{score:.5f}"
            status.update(f"tuning {event.get('model')}: last trial CV {shown}")

    return on_line


def _result(competition: Competition, workspace: Workspace, state: RunState,
            kaggle_report: dict[str, Any] | None = None, leaderboard: Path | None = None,
            kaggle: dict[str, Any] | None = None) -> RunResult:
    plan = read_json_object(SetupLayout(workspace.setup).plan)
    solve = SolveResult.read(workspace.solve) if state.phase == "done" else SolveResult()
    direction = run_direction(plan, solve)
    # A file handed in after a failed setup stays the run's answer while a later run retries setup.
    valid = (state.phase == "done" or state.setup_failure is not None) and workspace.submission_path.exists()
    report, test_note = grade_run(workspace.submission_path, competition, finished=state.phase == "done", leaderboard=leaderboard)
    if test_note == "the run did not finish" and state.error:
        test_note = f"the run did not finish: {state.error}"
    extra = {} if kaggle_report is None else {"kaggle": kaggle_report}
    if kaggle:
        extra["code_competition"] = bool(kaggle.get("code_competition"))
    return RunResult(
        competition_id=competition.id,
        source=competition.source_kind,
        valid_submission=valid,
        submission_path=str(workspace.submission_path) if valid else None,
        metric=plan.get("metric"),
        # Recorded once here; the submit, leaderboard and bench readers take it from result.json.
        higher_is_better=None if direction is None else direction.higher_is_better,
        assumptions=plan.get("assumptions") or [],
        validation_score=solve.validation_score,
        # A submission handed in without a solve (the setup deadline's sample) says so in its record.
        model=solve.model or (_recorded_model(workspace) if valid else None),
        test_score=report.score if report else None,
        test_metric=report.metric if report else None,
        test_score_note=test_note,
        test_leaderboard=_place(report.leaderboard) if report else None,
        setup={name: StageRecord(attempts=s.attempts, passed=s.passed) for name, s in state.stages.items()},
        meta={name: MetaRecord(rounds=m.rounds, passed=m.passed) for name, m in state.meta.items()},
        time_to_first_submission_s=solve.time_to_first_submission_s,
        policy=state.policy,
        llm_usage=read_json_object(workspace.logs / "llm_usage.json") or None,
        elapsed_s=round(state.elapsed_s, 2),
        phase=state.phase,
        error=state.error,
        setup_failure=state.setup_failure,
        **extra,
    )


def _recorded_model(workspace: Workspace) -> str | None:
    record = read_record(workspace.submission_path)
    return record.model if record is not None else None


def _place(position: LeaderboardPosition | None) -> LeaderboardPlace | None:
    if position is None:
        return None
    return LeaderboardPlace(rank=position.rank, n_teams=position.n_teams, percentile=position.percentile, medal=position.medal)
