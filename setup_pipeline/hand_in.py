"""What the run hands in when setup ends without a model, and the one line that says so.

Two ways setup ends early: its deadline passes (SetupDeadline), or a stage or meta check fails
after its retries (SetupFailed). Either way a run that can still make a valid submission makes one
(deadline.hand_in_without_model: the sample submission when the run's own check accepts it, else a
constant one) and says in one line what it handed in; one that cannot fails as before.
"""

from __future__ import annotations

import re

from rich.markup import escape

from agentk.core.errors import SetupFailed
from agentk.core.records.events import EventLog
from agentk.core.records.workspace import Workspace
from setup_pipeline.deadline import SAMPLE_MODEL, HandedIn, SetupDeadline, hand_in_without_model

# The MDP's messages name the step that failed: "setup stage 'x' failed after 3 attempts: why",
# "setup stage 'x': policy declined: why", "meta check 'x' failed after 2 rounds: why".
_FAILED_STEP = re.compile(r"^(setup stage|meta check) '([^']+)'(?: failed after \d+ \w+)?: (.*)$", re.DOTALL)


def hand_in_at_deadline(workspace: Workspace, events: EventLog, reached: SetupDeadline) -> None:
    """The setup deadline passed: the sample submission is the run's answer when it is a valid
    one, else a constant one (said in one line); when setup knows too little for either, the run
    fails as a setup that ran out of budget."""
    handed = hand_in_without_model(workspace)
    if handed is None:
        raise SetupFailed(f"{reached}, and setup knew too little by then to write a submission without a model "
                          "(no valid sample submission, nor the test's ids and the target)")
    _announce(events, "setup_deadline_submission", f"[yellow]{reached}[/]:", handed)


def hand_in_after_failure(workspace: Workspace, events: EventLog, failed: SetupFailed) -> bool:
    """A stage or meta check failed after its retries: hand in what hand_in_without_model can and
    say so in one warning line; False (nothing written, nothing said) when it can hand in nothing,
    and the run then fails with `failed` as before."""
    handed = hand_in_without_model(workspace)
    if handed is None:
        return False
    # Escaped: a reason quoting a list ("['label']") is not console markup.
    _announce(events, "setup_failed_submission", f"[yellow]warning: {escape(failure_summary(str(failed)))}[/];", handed,
              reason=str(failed))
    return True


def _announce(events: EventLog, event: str, lead: str, handed: HandedIn, **extra: str) -> None:
    """The hand-in's event and its one line: `lead` (with its separator), then what was handed in."""
    if handed.source == SAMPLE_MODEL:
        events.emit(event, source=SAMPLE_MODEL, file=handed.described, **extra)
        events.say(f"  {lead} handed in the sample submission {escape(handed.described)} as it is (no model trained)")
    else:
        events.emit(event, source=handed.source, values=handed.described, **extra)
        events.say(f"  {lead} no valid sample submission; handed in a constant one, {handed.described} "
                   "(no model trained)")


def failure_summary(message: str) -> str:
    """`setup failed at stage 'x' (why)` from the MDP's message."""
    found = _FAILED_STEP.match(message.strip())
    where, reason = (f" at {'stage' if found.group(1) == 'setup stage' else 'meta check'} '{found.group(2)}'",
                     found.group(3)) if found else ("", message)
    # Whole, as the `error:` line it replaces showed it, but on one line.
    reason = " ".join(line.strip() for line in reason.strip().splitlines())
    return f"setup failed{where} ({reason})"
