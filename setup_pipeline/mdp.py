"""The setup MDP runtime (Agent K, section 3.1): stages in order, each filled by a policy, run in the
sandbox and judged by its framework check; meta checks send the run back to the earliest stage they
cover. Every attempt is logged; state is saved after every transition so a killed run resumes.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import json
import time
from typing import Callable

from agentk.core.artifacts import SetupLayout
from agentk.core.records.config import SetupBudget
from agentk.core.sandbox.disk_quota import quota_mb
from agentk.core.errors import SetupFailed
from agentk.core.records.events import EventLog
from agentk.core.sandbox.isolation import Mounts
from agentk.core.sandbox.sandbox import Limits
from agentk.core.sandbox.stage_host import StageHost
from agentk.core.secrets import redact, redact_obj
from agentk.core.records.workspace import RunState, Workspace, atomic_write_text
from setup_pipeline.deadline import Deadline, SetupDeadline
from setup_pipeline.policy import Decline, Fill, Policy, StageContext, Verdict
from setup_pipeline.stages import MetaCheckSpec, StageSpec, build_sequence
from unit_tests_setup.context import CheckContext

# What the generated stage code imports (the templates and their policy blocks): the stage host
# imports them once per setup instead of once per stage.
STAGE_PRELOAD = ("numpy", "pandas", "pyarrow", "pyarrow.parquet", "agentk.core.maps", "agentk.core.readers",
                 "agentk.core.metrics", "agentk.core.pictures", "setup_pipeline.perception.recipe")

# (meta error, [(stage, its code)]) -> which stages caused it, and why
Blame = Callable[[str, list[tuple[str, str]]], Verdict]


class SetupMDP:
    def __init__(
        self,
        workspace: Workspace,
        policy: Policy,
        events: EventLog,
        budget: SetupBudget = SetupBudget(),
        on_solver_line: Callable[[str], None] | None = None,
        blame: Blame | None = None,
        deadline: Deadline | None = None,
        solve_host: StageHost | None = None,
    ) -> None:
        self.ws = workspace
        self.deadline = deadline
        # Credit assignment (Agent K 3.1.3): which covered stages caused a meta failure. Without
        # it, every covered stage is rewritten.
        self.blame = blame
        self.policy = policy
        self.events = events
        self.budget = budget
        # The run's solve host (its owner, the runner, closes it) serves the probe and light solve.
        self.check_ctx = CheckContext(workspace=workspace, budget=budget, on_solver_line=on_solver_line,
                                      solve_host=solve_host)
        self._meta_error: str | None = None
        self._meta_thought: str | None = None
        self._last_output = ""  # tail of the last attempt's sandbox output, for the attempt log
        self._host: StageHost | None = None  # the code stages' warm sandbox, for one run()

    # ---- the loop -------------------------------------------------------------------------

    def run(self, state: RunState, save: Callable[[RunState], None]) -> RunState:
        self._host = StageHost(self.ws.setup, Mounts.workspace(self.ws.root, write=["setup"]), STAGE_PRELOAD)
        try:
            return self._run(state, save)
        finally:
            # Also on SetupDeadline, errors and KeyboardInterrupt: its sandbox goes with it.
            self._host.close()
            self._host = None

    def _run(self, state: RunState, save: Callable[[RunState], None]) -> RunState:
        sequence = build_sequence(self._modalities(state))
        index = 0
        while index < len(sequence):
            item = sequence[index]
            self._before(item.name)
            if isinstance(item, StageSpec):
                self._run_stage(item, state, save)
                if item.name == "modalities":
                    sequence = build_sequence(self._modalities(state))
                index += 1
                continue
            back_to = self._run_meta(item, state, save)
            index = index + 1 if back_to is None else next(i for i, s in enumerate(sequence) if s.name == back_to)
        if self.deadline is not None:
            self.events.emit("setup_deadline", outcome="met", elapsed_s=round(self.deadline.elapsed(), 1),
                             deadline_s=self.deadline.seconds)
        return state

    def _modalities(self, state: RunState) -> list[str] | None:
        if not state.stage("modalities").passed:
            return None
        return json.loads(SetupLayout(self.ws.setup).modalities.read_text(encoding="utf-8"))["input_modalities"]

    def _before(self, step: str) -> None:
        """Stop at the setup deadline; else give the next step's sandboxed code no more than the
        time left (deadline.py)."""
        if self.deadline is None:
            return
        if self.deadline.passed():
            self.events.emit("setup_deadline", outcome="reached", before=step, elapsed_s=round(self.deadline.elapsed(), 1),
                             deadline_s=self.deadline.seconds)
            raise SetupDeadline(f"setup's deadline ({self.deadline.seconds:.0f} s) passed before {step!r}")
        self.check_ctx.budget = self.deadline.capped(self.budget)

    def _checkpoint(self, stage: str) -> Callable[[str], None] | None:
        """What a policy calls between the long steps of its own work: past the deadline it stops
        the stage there (recorded as reached during the stage, at that step)."""
        if self.deadline is None:
            return None

        def check(step: str) -> None:
            deadline = self.deadline
            if deadline is not None and deadline.passed():
                self.events.emit("setup_deadline", outcome="reached", before=stage, during=step,
                                 elapsed_s=round(deadline.elapsed(), 1), deadline_s=deadline.seconds)
                raise SetupDeadline(f"setup's deadline ({deadline.seconds:.0f} s) passed during {stage!r} ({step})")

        return check

    # ---- one stage ------------------------------------------------------------------------

    def _run_stage(self, spec: StageSpec, state: RunState, save: Callable[[RunState], None]) -> None:
        record = state.stage(spec.name)
        if record.passed and not spec.check(self.check_ctx):
            self.events.emit("stage_skipped", stage=spec.name, reason="passed in an earlier run")
            return
        record.passed = False
        first = record.attempts
        while record.attempts - first < self.budget.attempts_per_stage:
            if record.attempts > first:
                self._before(spec.name)
            record.attempts += 1
            ctx = StageContext(self.ws, attempt=record.attempts, last_error=record.last_error, meta_error=self._meta_error,
                               meta_thought=self._meta_thought, checkpoint=self._checkpoint(spec.name))
            started = time.monotonic()
            action = self.policy.act(spec, ctx)
            if isinstance(action, Decline):
                self._last_output = ""
                record.last_error = f"{self.policy.name} policy declined: {action.reason}"
                self._log_attempt(spec, record.attempts, None, [record.last_error], time.monotonic() - started, declined=True)
                save(state)
                if action.retryable:
                    continue
                raise SetupFailed(f"setup stage '{spec.name}': {record.last_error}")
            problems = self._execute(spec, action)
            passed = not problems
            record.passed = passed
            record.last_error = None if passed else "; ".join(problems)
            self._log_attempt(spec, record.attempts, action, problems, time.monotonic() - started)
            save(state)
            if passed:
                return
        raise SetupFailed(f"setup stage '{spec.name}' failed after {self.budget.attempts_per_stage} attempts: {record.last_error}")

    def _execute(self, spec: StageSpec, action: Fill) -> list[str]:
        """Materialise the policy's action, run it when it is code, then apply the stage check."""
        target = self.ws.setup / spec.output
        self._last_output = ""
        if spec.kind != "code":
            atomic_write_text(target, action.content.strip() + "\n")
            return spec.check(self.check_ctx)
        problems = _code_problems(action.content, spec.required_names)
        if problems:
            return problems
        atomic_write_text(target, spec.render(action.content))
        assert self._host is not None, "code stages run inside run(), which holds the stage host"
        result = self._host.run(
            [target.name],
            limits=Limits(timeout_s=self.check_ctx.budget.stage_timeout_s, max_written_mb=self.disk_quota_mb),
            log_prefix=self.ws.logs / f"stage_{spec.name}",
        )
        self._last_output = (result.stdout + result.stderr)[-2000:]
        if not result.ok:
            return [f"{target.name} failed: {result.error_summary()}"]
        return spec.check(self.check_ctx)

    @functools.cached_property
    def disk_quota_mb(self) -> int:
        """What one stage's code may write into setup/: from the data's size (disk_quota.py)."""
        return quota_mb(self.ws.raw)

    # ---- meta checks ----------------------------------------------------------------------

    def _run_meta(self, spec: MetaCheckSpec, state: RunState, save: Callable[[RunState], None]) -> str | None:
        """Returns None when the check passes, else the stage to go back to."""
        record = state.meta_check(spec.name)
        if record.passed:
            self.events.emit("meta_skipped", check=spec.name)
            return None
        started = time.monotonic()
        self.events.say(f"  meta  {spec.name:<24} running …")
        problems = spec.check(self.check_ctx)
        record.rounds += 1
        self._log_meta(spec, record.rounds, problems, time.monotonic() - started)
        if not problems:
            record.passed = True
            self._meta_error = self._meta_thought = None
            save(state)
            return None
        if record.rounds > self.budget.meta_rounds:
            save(state)
            raise SetupFailed(f"meta check '{spec.name}' failed after {record.rounds} rounds: {'; '.join(problems)}")
        self._meta_error = f"{spec.name}: {'; '.join(problems)}"
        covered = [name for name in spec.covers if name in state.stages]
        blamed = self._blamed(covered, state) or covered
        earliest = blamed[0] if blamed else spec.covers[0]
        for name in blamed:
            state.stages[name].passed = False
            state.stages[name].last_error = self._meta_error
        # Stages re-run, so every later meta check must pass again too.
        for other in state.meta.values():
            other.passed = False
        save(state)
        self.events.emit("meta_backtrack", check=spec.name, to=earliest)
        return earliest

    def _blamed(self, covered: list[str], state: RunState) -> list[str]:
        """The covered stages judged at fault, in sequence order ([] means: all of them)."""
        if self.blame is None or len(covered) < 2:
            return []
        specs = [s for s in build_sequence(self._modalities(state)) if isinstance(s, StageSpec) and s.name in covered]
        codes = [(s.name, s.last_content(self.ws.setup) or "") for s in specs]
        verdict = self.blame(self._meta_error or "", codes)
        self._meta_thought = verdict.thought or None
        blamed = [name for name in covered if name in set(verdict.stages)]
        self.events.emit("meta_blame", blamed=blamed, covered=covered)
        self.events.say(f"  credit assignment: rewriting {', '.join(blamed) or 'every covered stage'}")
        return blamed

    # ---- records --------------------------------------------------------------------------

    def _log_attempt(self, spec: StageSpec, attempt: int, action: Fill | None, problems: list[str], elapsed: float, declined: bool = False) -> None:
        content = action.content if action is not None else ""
        record = {
            "kind": "stage",
            "stage": spec.name,
            "attempt": attempt,
            "policy": self.policy.name,
            "passed": not problems,
            "declined": declined,
            "problems": problems,
            "plan": action.plan if action is not None else "",
            "content": content,
            "content_sha1": hashlib.sha1(content.encode()).hexdigest(),
            "output": self._last_output,
            "elapsed_s": round(elapsed, 3),
        }
        self._append(record)
        self.events.emit("stage", **{k: v for k, v in record.items() if k != "content"})
        mark = "[green]pass[/]" if not problems else ("[red]declined[/]" if declined else "[yellow]fail[/]")
        detail = "" if not problems else f" — {problems[0][:160]}"
        self.events.say(f"  setup {spec.name:<24} attempt {attempt}: {mark}{detail}")

    def _log_meta(self, spec: MetaCheckSpec, rounds: int, problems: list[str], elapsed: float) -> None:
        record = {"kind": "meta", "stage": spec.name, "attempt": rounds, "policy": self.policy.name, "passed": not problems, "problems": problems, "covers": list(spec.covers), "elapsed_s": round(elapsed, 3)}
        self._append(record)
        self.events.emit("meta", **record)
        mark = "[green]pass[/]" if not problems else "[yellow]fail[/]"
        detail = "" if not problems else f" — {problems[0][:160]}"
        self.events.say(f"  meta  {spec.name:<24} round {rounds}: {mark}{detail}")

    def _append(self, record: dict) -> None:
        path = self.ws.attempts_log
        path.parent.mkdir(parents=True, exist_ok=True)
        # content, output and problems carry what generated code printed: never a secret
        line = json.dumps(redact_obj(record), default=lambda value: redact(str(value)))
        with path.open("a", encoding="utf-8") as handle:
            handle.write(line + "\n")


def _code_problems(code: str, required: tuple[str, ...]) -> list[str]:
    """Check the hole before running it: it parses and defines what the template calls."""
    try:
        tree = ast.parse(code)
    except SyntaxError as exc:
        return [f"the code does not parse: {exc.msg} (line {exc.lineno})"]
    defined: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            defined.add(node.name)
        elif isinstance(node, ast.Assign):
            defined.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            defined.add(node.target.id)
    missing = [name for name in required if name not in defined]
    return [f"the code must define {', '.join(missing)}"] if missing else []
