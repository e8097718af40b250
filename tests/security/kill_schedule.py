"""A kill -9 schedule for `agentk run`: kill the run's whole process tree at seeded random points,
resume it with the same command, and check after every step that the workspace stayed sound.

    python tests/security/kill_schedule.py --runs 20 --seed 7
    python tests/security/kill_schedule.py --competition ../shared/competitions/titanic --runs 3

Each run starts on a fresh workspace root and is killed 1..--max-kills times, each time at a
random moment within --horizon seconds of that attempt's start; the last attempt runs to its end.
While an attempt runs and after it ends, the checks are:

* every JSON file the agent wrote (state.json, result.json, plan.json, solve_result.json, the
  submission's record, ...; the competition's own data under raw/ excluded) parses;
* once a submission with a recorded CV score existed, a submission still exists, passes the
  setup's validation, and its recorded CV score never went down (polled every 0.2 s);
* the finished run leaves no temp files and a valid result.json.

It prints one row per attempt (run, kill time, phase killed in, score before/after, outcome) and
exits non-zero when any check failed.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from agentk.core.records.workspace import Workspace, read_json_object  # noqa: E402
from solve_pipeline.base.submission_record import read_record  # noqa: E402
from unit_tests_setup.submission_rules import validate_against_setup  # noqa: E402

DEFAULT_COMPETITION = REPO.parent / "shared" / "competitions" / "titanic"
POLL_S = 0.2

# When to kill an attempt: given the workspace, True once the moment has come.
Trigger = Callable[[Workspace, float], bool]


def after_seconds(seconds: float) -> Trigger:
    return lambda _workspace, elapsed: elapsed >= seconds


def once_a_real_model_is_adopted() -> Trigger:
    """The worst moment of the issue: a model better than the constant is on disk, mid-solve."""

    def ready(workspace: Workspace, _elapsed: float) -> bool:
        record = read_record(workspace.submission_path)
        return record is not None and record.model != "constant"

    return ready


def once_the_solver_restarted() -> Trigger:
    """A resumed solve is under way: its first model has been offered to the submission (the
    constant, which must not replace a better file from before the kill)."""
    started: list[float] = []

    def ready(workspace: Workspace, _elapsed: float) -> bool:
        if not started:
            started.append(time.time())
        for event in _events_since(workspace, started[0]):
            if event.get("event") == "solver" and event.get("kind") in ("submission", "submission_kept"):
                return True
        return False

    return ready


def once_in_phase(phase: str) -> Trigger:
    return lambda workspace, _elapsed: read_json_object(workspace.state_path).get("phase") == phase


def in_solve_after(seconds: float) -> Trigger:
    """`seconds` after the attempt reached the solve phase (at once when it resumed there)."""
    reached: list[float] = []

    def ready(workspace: Workspace, elapsed: float) -> bool:
        if not reached:
            if read_json_object(workspace.state_path).get("phase") != "solve":
                return False
            reached.append(elapsed)
        return elapsed - reached[0] >= seconds

    return ready


@dataclass
class Step:
    run: int
    attempt: int
    killed_at_s: float | None  # None: ran to its end
    phase: str
    score_before: float | None
    score_after: float | None
    problems: list[str] = field(default_factory=list)
    exit_code: int | None = None

    @property
    def outcome(self) -> str:
        if self.problems:
            return "FAIL: " + "; ".join(self.problems)
        return "killed" if self.killed_at_s is not None else f"finished (exit {self.exit_code})"


def _events_since(workspace: Workspace, since: float) -> list[dict]:
    path = workspace.logs / "events.jsonl"
    if not path.is_file():
        return []
    events = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue  # a line cut by the kill
        if isinstance(event, dict) and float(event.get("t") or 0) >= since:
            events.append(event)
    return events


def _phase(workspace: Workspace) -> str:
    """Where the run stood: its state.json phase, and in the solve phase the solver's last step."""
    phase = str(read_json_object(workspace.state_path).get("phase", "new"))
    if phase != "solve":
        return phase
    last = None
    path = workspace.logs / "events.jsonl"
    if path.is_file():
        for line in reversed(path.read_text(encoding="utf-8", errors="replace").splitlines()[-50:]):
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if event.get("event") == "solver":
                last = f"{event.get('kind')}:{event.get('model', '')}".rstrip(":")
                break
    return f"solve/{last}" if last else "solve"


def _json_problems(workspace: Workspace) -> list[str]:
    problems = []
    for path in workspace.root.rglob("*.json"):
        if path.is_relative_to(workspace.raw) or path.name.endswith(".tmp"):
            continue
        try:
            json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            problems.append(f"{path.relative_to(workspace.root)} does not parse ({type(exc).__name__})")
    return problems


class Watch:
    """The submission's recorded score over time, for one run across all its attempts."""

    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace
        self.best: float | None = None
        self.higher: bool = True
        self.existed = False
        self.problems: list[str] = []

    def score(self) -> float | None:
        record = read_record(self.workspace.submission_path)
        return None if record is None else record.validation_score

    def check(self, validate: bool = False) -> None:
        path = self.workspace.submission_path
        if not path.exists():
            if self.existed:
                self._problem("the submission disappeared")
            return
        record = read_record(path)
        if record is None:
            if self.existed:
                self._problem("the submission lost its score record")
            return
        self.existed = True
        score, self.higher = record.validation_score, record.higher_is_better
        if score is not None and self.best is not None:
            if (score < self.best) if self.higher else (score > self.best):
                self._problem(f"recorded CV went from {self.best:.5f} to {score:.5f} ({record.model})")
        if score is not None and (self.best is None or ((score > self.best) if self.higher else (score < self.best))):
            self.best = score
        if validate:
            plan = read_json_object(self.workspace.setup / "plan.json")
            invalid = validate_against_setup(self.workspace, path, plan) if plan else []
            if invalid:
                self._problem(f"the submission is not valid: {invalid[0]}")

    def _problem(self, text: str) -> None:
        if text not in self.problems:
            self.problems.append(text)


def _descendants(pid: int) -> list[int]:
    """Every process below `pid`, from /proc (children a sandbox put in a new session included)."""
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat[stat.rindex(")") + 2:].split()[1])
        parents.setdefault(ppid, []).append(int(entry.name))
    found, queue = [], [pid]
    while queue:
        for child in parents.get(queue.pop(), []):
            found.append(child)
            queue.append(child)
    return found


def _kill_tree(process: subprocess.Popen) -> None:
    """SIGKILL the run and everything it started, as `kill -9` on the whole tree at once."""
    tree = [process.pid, *_descendants(process.pid)]  # before any dies: orphans lose their parent link
    for pid in tree:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    process.wait(timeout=60)


def attempt(command: list[str], workspace: Workspace, watch: Watch, trigger: Trigger | None,
            timeout_s: float = 900) -> tuple[float | None, str, int | None]:
    """One `agentk run`: killed when `trigger` fires (None: runs to its end). Returns the kill
    time, the phase it was killed in (or "done") and the exit code when it ended by itself."""
    began = time.monotonic()
    process = subprocess.Popen(command, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               start_new_session=True)
    try:
        while process.poll() is None:
            elapsed = time.monotonic() - began
            watch.check()
            if trigger is not None and trigger(workspace, elapsed):
                phase = _phase(workspace)
                _kill_tree(process)
                return round(elapsed, 1), phase, None
            if elapsed > timeout_s:
                _kill_tree(process)
                raise TimeoutError(f"agentk run took longer than {timeout_s} s")
            time.sleep(POLL_S)
        stderr = process.stderr.read().decode(errors="replace") if process.stderr else ""
        if process.returncode != 0:
            watch.problems.append(f"exit {process.returncode}: {stderr.strip().splitlines()[-1:] or ''}")
        return None, str(read_json_object(workspace.state_path).get("phase", "?")), process.returncode
    finally:
        if process.poll() is None:
            _kill_tree(process)


def run_schedule(competition: Path, root: Path, run: int, triggers: list[Trigger], time_budget: float,
                 folds: int = 2, extra: list[str] | None = None, final: bool = True) -> tuple[list[Step], dict]:
    """One run: an attempt killed per trigger, then one that runs to its end; returns the steps
    and the final result.json."""
    from agentk.sources import load_competition

    workspace_root = root / f"run{run}"
    workspace = Workspace(workspace_root / load_competition(competition).id)
    command = [sys.executable, "-m", "agentk.cli", "run", str(competition), "--workspace-root", str(workspace_root),
               "--time-budget", str(time_budget), "--folds", str(folds), "--quiet", *(extra or [])]
    watch = Watch(workspace)
    steps: list[Step] = []
    for number, trigger in enumerate([*triggers, None] if final else triggers, start=1):
        before = watch.score()
        seen = len(watch.problems)
        killed_at, phase, code = attempt(command, workspace, watch, trigger)
        watch.check(validate=watch.existed)
        problems = list(watch.problems[seen:]) + _json_problems(workspace)
        if trigger is None:
            problems += _finish_problems(workspace)
        steps.append(Step(run, number, killed_at, phase, before, watch.score(), problems, code))
    return steps, read_json_object(workspace.result_path)


def _finish_problems(workspace: Workspace) -> list[str]:
    result = read_json_object(workspace.result_path)
    problems = []
    if not result.get("valid_submission"):
        problems.append(f"result.json: no valid submission ({result.get('error')})")
    record = read_record(workspace.submission_path)
    if record is not None and result.get("validation_score") != record.validation_score:
        problems.append(f"result.json validation {result.get('validation_score')} is not the file's {record.validation_score}")
    leftovers = [p for p in workspace.root.rglob("*.tmp") if not p.is_relative_to(workspace.raw)]
    if leftovers:
        problems.append(f"{len(leftovers)} temp file(s) left, e.g. {leftovers[0].relative_to(workspace.root)}")
    return problems


def random_triggers(rng: random.Random, max_kills: int, horizon: float) -> list[Trigger]:
    return [after_seconds(round(rng.uniform(1.0, horizon), 1)) for _ in range(rng.randint(1, max_kills))]


def _fmt(value: float | None) -> str:
    return "—" if value is None else f"{value:.5f}"


def render(steps: list[Step]) -> str:
    header = f"{'run':>3} {'try':>3} {'killed at':>9}  {'phase':<28} {'CV before':>9} {'CV after':>9}  outcome"
    lines = [header, "-" * len(header)]
    for s in steps:
        killed = "—" if s.killed_at_s is None else f"{s.killed_at_s:.1f} s"
        lines.append(f"{s.run:>3} {s.attempt:>3} {killed:>9}  {s.phase[:28]:<28} {_fmt(s.score_before):>9} "
                     f"{_fmt(s.score_after):>9}  {s.outcome}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--competition", type=Path, default=DEFAULT_COMPETITION)
    parser.add_argument("--time-budget", type=float, default=6.0, help="the solver's budget per attempt")
    parser.add_argument("--max-kills", type=int, default=3)
    parser.add_argument("--horizon", type=float, default=40.0, help="kills fall within this many seconds of a start")
    parser.add_argument("--keep", type=Path, default=None, help="keep the workspaces under this folder")
    parser.add_argument("--solve-phase", action="store_true",
                        help="set up once, then start every run from that workspace and kill only "
                             "within --horizon seconds of the solve phase (where resumes once downgraded)")
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    root = args.keep or Path(tempfile.mkdtemp(prefix="agentk-kill-"))
    root.mkdir(parents=True, exist_ok=True)
    competition = args.competition.resolve()
    template = root / "template"
    if args.solve_phase:
        steps, _ = run_schedule(competition, template, 0, [once_in_phase("solve")], args.time_budget, final=False)
        print("\n".join(render(steps).splitlines()[2:]) + "   (setup once, the runs' starting point)", flush=True)
    all_steps: list[Step] = []
    for run in range(1, args.runs + 1):
        if args.solve_phase:
            shutil.copytree(template / "run0", root / f"run{run}", symlinks=True)
            triggers = [in_solve_after(round(rng.uniform(0.5, args.horizon), 1))
                        for _ in range(rng.randint(1, args.max_kills))]
        else:
            triggers = random_triggers(rng, args.max_kills, args.horizon)
        steps, result = run_schedule(competition, root, run, triggers, args.time_budget)
        all_steps += steps
        print("\n".join(render(steps).splitlines()[2:]), flush=True)
        print(f"    result: validation {_fmt(result.get('validation_score'))} test {_fmt(result.get('test_score'))}"
              f" ({result.get('model')}; {result.get('test_score_note') or 'graded'})", flush=True)
    print()
    print(render(all_steps))
    failed = [s for s in all_steps if s.problems]
    kills = sum(1 for s in all_steps if s.killed_at_s is not None)
    print(f"\n{args.runs} runs, {kills} kills, {len(failed)} failed step(s); workspaces in {root}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
