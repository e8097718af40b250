"""The campaign driver: pool → describe → choose → run → remember, until the pool is done.

One driver per campaign folder (a lock says so). It keeps the state and both memories; the runs
themselves are `agentk run` processes on this machine or Ray tasks on a cluster. Every decision is
written before it is acted on, and every outcome before the next decision, so a kill -9 at any
moment loses at most the runs in flight, which resume through their own workspaces.
"""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agentk.campaign.describe import TaskDescriber
from agentk.campaign.executors import Executor, TaskJob, TaskOutcome, make_executor
from agentk.campaign.options import CampaignOptions
from agentk.campaign.pool import PoolTask, expand_pool
from agentk.campaign.status import fmt_score
from agentk.campaign.state import TaskAttempt, CampaignFolder, CampaignState, TaskState, TaskStatus
from agentk.core.records.campaign_record import seed_workspaces, seeded_key
from agentk.core.records.config import RunConfig, WarmStart
from agentk.core.errors import AgentKError
from agentk.core.records.events import EventLog
from agentk.core.records.results import RunResult, SolvedSummary, llm_tokens
from agentk.publish import ledger_for, remaining_today
from agentk.report.campaign_report import write_campaign_report
from agentk.core.records.workspace import Workspace, atomic_write_json
from agentk.core.records.workspace_lock import workspace_lock
from agentk.kaggle.client import KaggleClient
from agentk.llm import LLMConfig, make_client
from agentk.llm.config import llm_configured
from curriculum.selection import Choice, Order, TaskCandidate, choose, pick_first_with_llm
from curriculum.task_memory import TaskMemory, TaskText
from curriculum.warm_start import warm_start_from

WAIT_S = 5.0  # how long the driver sleeps between looks at its running tasks
NEIGHBOURS = 3  # solved tasks a warm start draws on


class CampaignDriver:
    def __init__(self, folder: CampaignFolder, options: CampaignOptions, events: EventLog) -> None:
        self.folder = folder
        self.options = options
        self.events = events
        self.memory: TaskMemory | None = None
        self.texts: dict[str, TaskText] = {}
        self._started = time.monotonic()
        self._elapsed_before = 0.0
        self._read_only = False  # `status` looks without changing anything

    # ---- the loop ---------------------------------------------------------------------------

    def run(self, specs: list[str], name: str) -> CampaignState:
        self.folder.create()
        with workspace_lock(self.folder.root):
            state = self._load_or_start(specs, name)
            state.options = json.loads(self.options.model_dump_json())
            self._elapsed_before = state.elapsed_s
            try:
                # The executor first: an unreachable cluster is said before minutes of downloads.
                executor = make_executor(self.options.workers, self.options.ray_address)
                try:
                    self._describe_pool(state)
                    self.memory = TaskMemory(self.folder.task_memory_path)
                    self._loop(state, executor)
                finally:
                    executor.shutdown()
            finally:
                state.elapsed_s = self._elapsed_before + (time.monotonic() - self._started)
                self.folder.save(state)
                self._refresh_report(say=True)
        return state

    def _load_or_start(self, specs: list[str], name: str) -> CampaignState:
        state = self.folder.load()
        if state is not None:
            self.events.say(f"[bold]campaign[/] {state.name}: resuming at round {state.round} → {self.folder.root}")
            self.events.emit("campaign_resume", round=state.round)
            if specs and specs != state.specs:
                self.events.say("  [yellow]note:[/] the pool is the one this campaign started with; new sources are ignored")
            started_with = max((t.seed or 1 for t in state.tasks.values()), default=1)
            if self.options.seeds != started_with:
                self.events.say(f"  [yellow]note:[/] this campaign runs {started_with} seed(s) per task, as it started; --seeds is ignored")
            return state
        if not specs:
            raise AgentKError(f"no campaign in {self.folder.root}: give the competitions to run")
        expansion = expand_pool(specs, limit=self.options.limit)
        for warning in expansion.warnings:
            self.events.say(f"  [yellow]skipped:[/] {warning}")
        tasks = [state for t in expansion.tasks for state in _task_states(t, self.options.seeds)]
        state = CampaignState(name=name, specs=list(specs), tasks={t.key: t for t in tasks})
        self.folder.save(state)
        seeds = f" × {self.options.seeds} seeds" if self.options.seeds > 1 else ""
        count = len(expansion.tasks)
        self.events.say(f"[bold]campaign[/] {name}: {count} task{'' if count == 1 else 's'}{seeds} → {self.folder.root}")
        self.events.emit("campaign_start", tasks=list(state.tasks), specs=specs)
        return state

    def _describe_pool(self, state: CampaignState) -> None:
        describer = TaskDescriber(self.folder)
        for task in state.tasks.values():
            if task.status in (TaskStatus.VANISHED,):
                continue
            try:
                described = describer.describe(task)
            except AgentKError as exc:
                task.status, task.note = TaskStatus.VANISHED, str(exc)
                self.events.say(f"  [yellow]warning:[/] {task.key}: {exc}; left out of the campaign")
                self.events.emit("task_unusable", task=task.key, reason=str(exc))
                self.folder.save(state)
                continue
            task.workspace, task.complexity = str(described.workspace), described.text.complexity
            self.texts[task.key] = described.text
        self.folder.save(state)

    def _loop(self, state: CampaignState, executor: Executor) -> None:
        # Tasks a killed driver left running: their runs resume from their workspaces.
        for task in state.by_status(TaskStatus.RUNNING):
            self._start(state, task, executor, resumed=True)
        while True:
            while len(executor.running()) < self.options.workers and not self._out_of_time():
                task = self._next(state, executor.running())
                if task is None:
                    break
                self._start(state, task, executor)
            if not executor.running():
                break
            for outcome in executor.wait(WAIT_S):
                self._record(state, outcome)
        self._say_summary(state)

    def _out_of_time(self) -> bool:
        budget = self.options.total_budget_s
        if budget is None:
            return False
        spent = self._elapsed_before + (time.monotonic() - self._started)
        if spent >= budget:
            self.events.emit("campaign_budget_spent", spent_s=round(spent, 1), budget_s=budget)
            return True
        return False

    # ---- choosing -----------------------------------------------------------------------------

    def _eligible(self, state: CampaignState, running: set[str]) -> list[TaskState]:
        eligible = []
        for task in state.tasks.values():
            if task.key in running or task.status not in (TaskStatus.PENDING, TaskStatus.FAILED):
                continue
            if task.kind == "folder" and not Path(task.source).exists():
                self._vanish(state, task, f"its folder {task.source} is gone")
                continue
            if task.key in self.texts:
                eligible.append(task)
        return eligible

    def _vanish(self, state: CampaignState, task: TaskState, why: str) -> None:
        if self._read_only:
            return
        task.status, task.note = TaskStatus.VANISHED, why
        self.events.say(f"  [yellow]warning:[/] {task.key}: {why}; left out of the campaign")
        self.events.emit("task_vanished", task=task.key, reason=why)
        self.folder.save(state)

    def preview(self, state: CampaignState) -> Choice | str:
        """What the next choice would be (nothing dispatched, logged or asked of an LLM), or why
        there is none; for `agentk campaign status`."""
        self._read_only = True
        describer = TaskDescriber(self.folder)
        for task in state.tasks.values():
            saved = describer.saved(task)
            if saved is not None:
                self.texts[task.key] = saved.text
        self.memory = TaskMemory(self.folder.task_memory_path)
        choice = self._choose(state, set(), ask_llm=False)
        return choice if choice is not None else "nothing: every task has ended"

    def _choose(self, state: CampaignState, running: set[str], ask_llm: bool = True) -> Choice | str | None:
        eligible = self._eligible(state, running)
        if not eligible:
            return None
        assert self.memory is not None
        texts = [self.texts[t.key] for t in eligible]
        positives, negatives = self.memory.positives(), self.memory.negatives()
        # The paper's first task: the LLM's pick, asked once, before anything has run.
        run = self.options.run
        if self.options.order == Order.CURRICULUM and state.round == 0 and not positives and llm_configured(run.llm_base_url, run.llm_model):
            if not ask_llm:
                return "the configured LLM picks the first task from the tree descriptions"
            picked, llm_note = self._llm_first_pick(state, texts)
            if picked is not None:
                return Choice(task_id=picked, order=Order.CURRICULUM, score=None, terms={}, ranking=[],
                              reason=f"curriculum: the LLM's pick of a first task from the tree descriptions ({llm_note})")
        vectors = self.memory.vectors(texts) if self.options.order == Order.CURRICULUM else {}
        candidates = [TaskCandidate(t.task_id, t.complexity, vectors.get(t.task_id)) for t in texts]
        return choose(self.options.order, candidates, positives, negatives, self.options.curriculum,
                      seed=self.options.seed, round_number=state.round + 1)

    def _next(self, state: CampaignState, running: set[str]) -> TaskState | None:
        choice = self._choose(state, running)
        if not isinstance(choice, Choice):
            return None
        assert self.memory is not None
        record = {"time": datetime.now(UTC).isoformat(), "round": state.round + 1, "chosen": choice.task_id,
                  "order": str(choice.order), "score": choice.score, "terms": choice.terms,
                  "reason": choice.reason, "ranking": [r.model_dump(mode="json") for r in choice.ranking],
                  "memory": {"positive": self.memory.positive_count, "negative": self.memory.negative_count}}
        self.folder.log_decision(record)
        self.events.emit("campaign_choice", **{k: v for k, v in record.items() if k != "ranking"})
        return state.tasks[choice.task_id]

    def _llm_first_pick(self, state: CampaignState, texts: list[TaskText]) -> tuple[str | None, str]:
        run = self.options.run
        overrides = {"base_url": run.llm_base_url, "model": run.llm_model, "token_budget": run.llm_token_budget}
        try:
            config = LLMConfig.from_env(**{k: v for k, v in overrides.items() if v is not None})
            client = make_client(config, self.folder.root)
            picked = pick_first_with_llm(client, texts)
        except Exception as exc:  # noqa: BLE001 - an LLM failure falls back on the simplest tree
            self.events.emit("campaign_llm_pick_failed", reason=f"{type(exc).__name__}: {exc}")
            return None, f"failed: {exc}"
        tokens = llm_tokens(client.usage())
        state.tokens += tokens
        return picked, f"{tokens} tokens"

    # ---- running --------------------------------------------------------------------------------

    def _start(self, state: CampaignState, task: TaskState, executor: Executor,
               resumed: bool = False) -> None:
        warm = self._warm_start(state, task) if self.options.warm_start else None
        config, submit_note = self._run_config(state, task, warm)
        config_path = self.folder.config_path(task.key)
        atomic_write_json(config_path, json.loads(config.model_dump_json()))
        if not resumed:
            state.round += 1
            task.attempts.append(TaskAttempt(round=state.round, started=datetime.now(UTC),
                                         warm_start_from=list(warm.sources) if warm else []))
        task.status = TaskStatus.RUNNING
        self.folder.save(state)
        root = seed_workspaces(self.folder.workspaces, task.seed)
        job = TaskJob(key=task.key, source=task.source, workspace_root=root,
                      workspace=Path(task.workspace or root / task.key),
                      run_args=[], config_json=str(config_path), cpus=executor.cpus_per_task,
                      memory_gb=None, log_path=self.folder.log_path(task.key))
        executor.submit(job)
        how = "resumed" if resumed else f"round {state.round}"
        warm_note = f", warm start from {', '.join(warm.sources)}" if warm and warm.sources else ""
        self.events.say(f"  {how}: [bold]{task.key}[/] (attempt {len(task.attempts)}{warm_note}){submit_note}")
        self.events.emit("task_start", task=task.key, round=state.round, resumed=resumed,
                         warm_start=warm.model_dump() if warm else None)

    def _warm_start(self, state: CampaignState, task: TaskState) -> WarmStart | None:
        assert self.memory is not None
        text = self.texts.get(task.key)
        if text is None:
            return None
        # The task itself and, with --seeds, its siblings: Pass@k needs the seeds' runs independent.
        siblings = {t.key for t in state.tasks.values() if t.pool_key == task.pool_key}
        neighbours = self.memory.nearest_solved(text, k=NEIGHBOURS, exclude=siblings)
        warm = warm_start_from(neighbours)
        return warm if warm.sources else None

    def _run_config(self, state: CampaignState, task: TaskState, warm: WarmStart | None) -> tuple[RunConfig, str]:
        base = self.options.run
        updates: dict[str, Any] = {"workspace_root": seed_workspaces(self.folder.workspaces, task.seed), "quiet": True}
        note = ""
        if base.submit and task.kind == "kaggle" and task.slug:
            remaining = self._sends_left(task)
            if remaining <= 0:
                updates["submit"] = False
                note = " (Kaggle's daily limit is used up: not submitting this time)"
            else:
                updates["submit_top_k"] = min(base.submit_top_k, remaining)
        elif base.submit:
            updates["submit"] = False
        config = base.model_copy(update=updates)
        # Every run of the campaign has its own seed: seed k's attempts follow seed k-1's.
        offset = ((task.seed or 1) - 1) * self.options.max_attempts + len(task.attempts)
        solve = config.solve.model_copy(update={"warm_start": warm, "seed": base.solve.seed + offset})
        return config.model_copy(update={"solve": solve}), note

    def _sends_left(self, task: TaskState) -> int:
        """Kaggle's daily allowance left for the task's competition, over every earlier run of it."""
        assert task.slug is not None
        entries = ledger_for(Workspace(Path(task.workspace))).entries() if task.workspace else []
        try:
            return remaining_today(KaggleClient(), task.slug, entries)
        except AgentKError as exc:  # unknown: the run's own submit still stops at Kaggle's refusal
            self.events.emit("kaggle_limit_unknown", task=task.key, reason=str(exc))
            return self.options.run.submit_top_k

    def _record(self, state: CampaignState, outcome: TaskOutcome) -> None:
        task = state.tasks[outcome.key]
        attempt = task.last
        assert attempt is not None and self.memory is not None
        result = outcome.result or {}
        ok, attempt.error = run_verdict(result, outcome.error, outcome.returncode)
        attempt.ok = ok
        attempt.setup_ok = _setup_passed(result)
        attempt.validation_score = result.get("validation_score")
        attempt.test_score = result.get("test_score")
        attempt.elapsed_s = round(outcome.elapsed_s, 1)
        attempt.tokens = llm_tokens(result.get("llm_usage"))
        state.tokens += attempt.tokens
        text = self.texts[task.key]
        if ok:
            summary = SolvedSummary.from_solve(Path(task.workspace or "") / "solve") if task.workspace else None
            self.memory.add_success(text, attempt.round, summary)
            task.status = TaskStatus.SOLVED
            shown = f"validation {fmt_score(attempt.validation_score)}" + (f", test {fmt_score(attempt.test_score)}" if attempt.test_score is not None else "")
            self.events.say(f"  [green]solved[/] {task.key}: {shown} ({attempt.elapsed_s:.0f} s)")
        else:
            self.memory.add_failure(text, attempt.round, attempt.error or "")
            if task.kind == "folder" and not Path(task.source).exists():
                self._vanish(state, task, f"its folder {task.source} is gone")
            else:
                left = self.options.max_attempts - len(task.attempts)
                task.status = TaskStatus.FAILED if left > 0 else TaskStatus.GAVE_UP
                again = f"; {left} more attempt{'s' if left > 1 else ''} later" if left > 0 else "; giving up"
                self.events.say(f"  [red]failed[/] {task.key}: {attempt.error}{again}")
        self.events.emit("task_end", task=task.key, status=str(task.status), **attempt.model_dump(mode="json"))
        self.folder.save(state)
        self._refresh_report()

    def _refresh_report(self, say: bool = False) -> None:
        """Rewrite the campaign's report.html; a report that cannot be written is an event, never
        the campaign's failure."""
        try:
            path = write_campaign_report(self.folder.root)
        except Exception as exc:  # noqa: BLE001 - the report is a view of the campaign, not part of it
            self.events.emit("campaign_report_failed", reason=f"{type(exc).__name__}: {exc}")
            return
        self.events.emit("campaign_report", path=str(path))
        if say:
            self.events.say(f"  report: {path}")

    def _say_summary(self, state: CampaignState) -> None:
        counts = {s: len(state.by_status(s)) for s in TaskStatus}
        shown = ", ".join(f"{n} {s}" for s, n in counts.items() if n)
        self.events.say(f"[bold]campaign[/] {state.name}: {shown}; {state.round} runs, {state.tokens} LLM tokens")
        self.events.emit("campaign_end", **{str(s): n for s, n in counts.items()}, rounds=state.round, tokens=state.tokens)


def _task_states(task: PoolTask, seeds: int) -> list[TaskState]:
    """The pool task as the campaign runs it: itself, or one task per seed."""
    if seeds == 1:
        return [TaskState(key=task.key, source=task.source, kind=task.kind, slug=task.slug)]
    return [TaskState(key=seeded_key(task.key, seed), source=task.source, kind=task.kind, slug=task.slug,
                      family=task.key, seed=seed) for seed in range(1, seeds + 1)]


def run_verdict(result: dict[str, Any], error: str | None, returncode: int | None) -> tuple[bool, str | None]:
    """Whether a run solved its task, and else why not. A run whose setup failed may still hand in
    a submission without a model (the sample): valid for the competition, but a failed setup for
    the campaign, which remembers it as a failure and tries the task again."""
    handed_in = result.get("setup_failure")
    if result.get("valid_submission") and result.get("phase") == "done" and not handed_in:
        return True, None
    return False, (error or result.get("error")
                   or (f"setup failed, so the run handed in a submission without a model: {handed_in}" if handed_in else None)
                   or f"the run exited with code {returncode}")


def _setup_passed(result: dict[str, Any]) -> bool | None:
    """Whether the run's setup passed every stage test; None when it left no readable record."""
    if not result:
        return None
    try:
        return RunResult.model_validate(result).setup_passed
    except ValueError:
        return None
