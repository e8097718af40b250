"""Setup's own deadline, derived from the run's budget, and what the run hands in when it passes.

Setup usually costs a fraction of the solver's budget, but a table can make it slow (20,000
columns took minutes), and setup must not take the run's budget with it. The MDP looks at the
deadline before every stage, attempt and meta check, and gives each sandboxed step no more than
the time left; once it has passed, the run ends with the best submission it has without a model:
the competition's sample submission, handed in only when the run's own submission check accepts it.
The perception inside a stage is not cut short (interrupting it mid-way would leave nothing to
read), so the deadline holds to within one stage.
"""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from agentk.core.artifacts import SetupLayout
from agentk.core.records.config import SetupBudget
from agentk.core.errors import SetupFailed
from agentk.core.maps import MapError, read_map
from agentk.core.readers import UnreadableTable, read_table
from agentk.core.records.workspace import Workspace, read_json_object
from setup_pipeline.constant_submission import constant_submission
from solve_pipeline.base.submission_record import SubmissionRecord, adopt_submission
from unit_tests_setup.context import CheckContext
from unit_tests_setup.files import find_sample_submission
from unit_tests_setup.meta_checks import sample_id_problems
from unit_tests_setup.submission_rules import validate_against_setup

# Without --setup-deadline, setup may take twice the solver's budget, and never less than this:
# an ordinary setup on a busy machine fits it, so only a pathological table meets the deadline.
SETUP_FLOOR_S = 180.0
SETUP_SHARE = 2.0
# A sandboxed step started near the deadline still gets enough time to start Python and read.
_LEAST_STEP_S = 5.0
# The record's model names for a submission handed in without a model.
SAMPLE_MODEL = "sample_submission"
CONSTANT_MODEL = "constant"


class SetupDeadline(SetupFailed):
    """The setup deadline passed before every stage and meta check did."""


def setup_deadline_s(budget: SetupBudget, solve_budget_s: float) -> float:
    """The seconds setup may take: the run's own choice, else derived from the solver's budget."""
    if budget.setup_deadline_s is not None:
        return budget.setup_deadline_s
    return max(SETUP_FLOOR_S, SETUP_SHARE * solve_budget_s)


@dataclass(frozen=True)
class Deadline:
    seconds: float
    started: float  # time.monotonic() when the run started

    @classmethod
    def starting(cls, seconds: float, started: float | None = None) -> Deadline:
        return cls(seconds, time.monotonic() if started is None else started)

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def left(self) -> float:
        return self.seconds - self.elapsed()

    def passed(self) -> bool:
        return self.left() <= 0

    def capped(self, budget: SetupBudget) -> SetupBudget:
        """`budget` with every sandboxed step's timeout cut to the time left (never below a few
        seconds), so a slow step ends near the deadline rather than at its own timeout."""
        left = max(self.left(), _LEAST_STEP_S)
        return budget.model_copy(update={name: min(getattr(budget, name), left)
                                         for name in ("stage_timeout_s", "light_solve_timeout_s", "probe_timeout_s")})


@dataclass(frozen=True)
class HandedIn:
    """What the run handed in at the deadline: `source` is the record's model name."""

    source: str
    described: str  # for the run's one line: the sample's file, or the constant's values


def hand_in_without_model(workspace: Workspace) -> HandedIn | None:
    """The sample submission when the run's own check accepts it, else the constant one when it
    does; None when setup knows too little for either."""
    plan = read_json_object(SetupLayout(workspace.setup).plan)
    sample = find_sample_submission(workspace.raw, plan)
    if sample is not None and not _fits_test_maps(workspace, sample):
        # Its ids are not the test's: neither it nor a constant over its ids is an answer, and a
        # constant over the test map's ids fails the check against it.
        return None
    if sample is not None and not validate_against_setup(workspace, sample, plan):
        _adopt(workspace, plan, SAMPLE_MODEL, lambda tmp: shutil.copyfile(sample, tmp))
        shown = sample.relative_to(workspace.raw).as_posix() if sample.is_relative_to(workspace.raw) else sample.name
        return HandedIn(SAMPLE_MODEL, shown)
    constant = constant_submission(workspace, plan)
    if constant is None:
        return None
    # Checked before it replaces anything: a constant the check refuses is no answer either.
    # Named as atomic writers' leftovers are, which a resumed run clears.
    trial = workspace.submission_path.with_name(f".{workspace.submission_path.name}.constant.tmp")
    trial.parent.mkdir(parents=True, exist_ok=True)
    constant.frame.to_csv(trial, index=False)
    try:
        if validate_against_setup(workspace, trial, plan, ids=constant.ids):
            return None
        _adopt(workspace, plan, CONSTANT_MODEL, lambda tmp: shutil.copyfile(trial, tmp))
    finally:
        trial.unlink(missing_ok=True)
    return HandedIn(CONSTANT_MODEL, constant.described)


def _fits_test_maps(workspace: Workspace, sample: Path) -> bool:
    """Whether the sample lists the test rows setup's test map holds, as the maps' meta check asks
    (a sample that lacks some is no submission); true while no readable test map says otherwise,
    and for a sample without rows, which shows no ids. A wrong map then costs the hand-in, never
    puts a short sample in: the run fails as before."""
    maps = SetupLayout(workspace.setup).input_maps("test")
    if not maps:
        return True
    try:
        if read_table(sample, nrows=1).empty:
            return True
        ids = set(read_map(maps[0])["id"].tolist())
    except (MapError, UnreadableTable, OSError, ValueError):
        return True
    return not sample_id_problems(CheckContext(workspace=workspace), ids)


def _adopt(workspace: Workspace, plan: dict, model: str, write: Callable[[Path], None]) -> None:
    metric = plan.get("metric")
    record = SubmissionRecord(model=model, validation_score=None,
                              metric=metric if isinstance(metric, str) else "unknown",
                              higher_is_better=bool(plan.get("higher_is_better", True)),
                              setup_fingerprint="setup-deadline")
    adopt_submission(workspace.submission_path, write, record, force=True)
