"""The solver's end of the decision exchange (agentk/core/records/solve_decisions.py): write a request, print
one short line, wait for the parent's reply file.

The request goes in a file, not on the line: the sandbox hands stdout over in 64 KiB pieces, and a
race table with long reasons can pass that. A reply that never comes (no parent listening, a slow
model) costs at most the wait, then the expert decides.
"""

from __future__ import annotations

import json
import secrets
import shutil
import time
from pathlib import Path

from pydantic import ValidationError

from agentk.core.records.solve_decisions import DecisionReply, DecisionRequest, llm_dir, reply_path, request_path
from agentk.core.records.workspace import atomic_write_json
from solve_pipeline.base.cv import emit

POLL_S = 0.1


class DecisionChannel:
    def __init__(self, solve_dir: Path) -> None:
        self.solve_dir = Path(solve_dir)
        self.token = secrets.token_hex(8)
        self.asked = 0
        # An earlier solve's requests and replies would only confuse the parent and this solve.
        shutil.rmtree(llm_dir(self.solve_dir), ignore_errors=True)
        llm_dir(self.solve_dir).mkdir(parents=True, exist_ok=True)

    def next_number(self) -> int:
        return self.asked + 1

    def ask(self, request: DecisionRequest, wait_s: float) -> tuple[DecisionReply | None, float]:
        """The parent's reply and the seconds waited; None when none came in `wait_s`."""
        self.asked = request.n
        started = time.monotonic()
        atomic_write_json(request_path(self.solve_dir, request.n), request.model_dump(mode="json"))
        emit("decision_request", n=request.n, path=str(request_path(self.solve_dir, request.n)),
             wait_s=round(wait_s, 1))
        path = reply_path(self.solve_dir, request.n)
        deadline = started + wait_s
        while time.monotonic() < deadline:
            reply = _read(path, request)
            if reply is not None:
                return reply, time.monotonic() - started
            time.sleep(POLL_S)
        return _read(path, request), time.monotonic() - started


def _read(path: Path, request: DecisionRequest) -> DecisionReply | None:
    if not path.is_file():
        return None
    try:
        reply = DecisionReply.model_validate(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, ValidationError):
        return None  # written atomically, so a bad file is a bad reply, not a half-written one
    if reply.n != request.n or reply.token != request.token:
        return None
    return reply
