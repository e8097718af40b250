"""A tiny real table whose target a ratio of two columns defines, model-like replies for the LLM
solve policy, and a solver run answered by the real advisor over the scripted HTTP server."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
from llm_server import Reply, ScriptedLLMServer
from solver_workspaces import ACCURACY_METRIC, LABEL_FORMAT, PYTHON, REPO, write_workspace

from agentk.core.records.config import CONFIG_FILE, RunConfig, SolveSettings
from agentk.core.records.events import EventLog
from agentk.core.records.solve_decisions import DecisionRequest, request_path
from agentk.llm import LLMConfig, make_client
from agentk.solve_advisor import SolveAdvisor

MODEL = "qwen2.5-coder-7b"

RATIO_FEATURE = '''
def add_features(train, test):
    # The two measurements matter through their ratio, which trees only approximate with steps.
    for frame in (train, test):
        frame["a_over_b"] = frame["a"] / frame["b"]
    return train, test
'''
LEAKING_FEATURE = '''
def add_features(train, test):
    mean = train["y"].mean()
    train["y_copy"] = train["y"]
    test["y_copy"] = mean
    return train, test
'''
SLOW_FEATURE = '''
import time

def add_features(train, test):
    time.sleep(600)
    return train, test
'''
USELESS_FEATURE = '''
def add_features(train, test):
    train["one"] = 1.0
    test["one"] = 1.0
    return train, test
'''


def ratio_frames(n: int = 300, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(train with target y, test): y is 1 where a / b > 1, with a little label noise. Signed values:
    no monotone transform of a and b makes the boundary linear, and trees only staircase it."""
    rng = np.random.default_rng(seed)
    a = rng.uniform(-3.0, 3.0, n)
    b = rng.choice([-1.0, 1.0], n) * rng.uniform(0.2, 3.0, n)
    y = (a / b > 1.0).astype(int)
    flip = rng.random(n) < 0.02
    y[flip] = 1 - y[flip]
    frame = pd.DataFrame({"id": [f"r{i:04d}" for i in range(n)], "a": a.round(4), "b": b.round(4),
                          "noise": rng.normal(size=n).round(4), "y": y})
    return frame.iloc[: int(0.8 * n)].reset_index(drop=True), frame.iloc[int(0.8 * n):].reset_index(drop=True)


def ratio_workspace(root: Path, settings: SolveSettings) -> Path:
    train, test = ratio_frames()
    features = ["id", "a", "b", "noise"]
    workspace = write_workspace(
        root, inputs={"tab": (train[features], test[features])}, targets=train[["id", "y"]],
        test_ids=test["id"].tolist(), spec={"column": "y", "task": "binary", "classes": [0, 1]}, id_name="id",
        metric=ACCURACY_METRIC, formatter=LABEL_FORMAT,
        sample=pd.DataFrame({"id": test["id"], "y": 0}))
    (workspace / CONFIG_FILE).write_text(RunConfig(solve=settings).model_dump_json(), encoding="utf-8")
    return workspace


def model_reply(action: str, reason: str, family: str | None = None, code: str | None = None) -> str:
    """A reply as an instruction-tuned model writes one: prose, a JSON block, maybe a Python block."""
    body = json.dumps({"action": action, "family": family, "reason": reason}, indent=2)
    text = (f"Looking at the race table and the time left, the most useful next step is to {action}"
            f"{' ' + family if family else ''}. {reason}\n\n```json\n{body}\n```\n")
    if code is not None:
        text += f"\nHere is the feature function:\n\n```python\n{code.strip()}\n```\n\nIt only adds columns.\n"
    return text


Scripted = Callable[[DecisionRequest], Reply]


def solve_with_llm(workspace: Path, server: ScriptedLLMServer, replies: list[Scripted],
                   token_budget: int | None = None) -> tuple[dict, list[dict], list[DecisionRequest]]:
    """Run the solver as a subprocess; each decision request is answered by the real advisor, whose
    model (the scripted server) gets the next reply, built from the request it is about to read."""
    config = LLMConfig(base_url=server.base_url, model=MODEL, timeout_s=10, max_retries=0, token_budget=token_budget,
                       cache=False)
    client = make_client(config, workspace)
    events = EventLog(workspace / "logs" / "events.jsonl", quiet=True)
    advisor = SolveAdvisor(client, workspace / "solve", events)
    requests: list[DecisionRequest] = []
    lines: list[dict] = []
    proc = subprocess.Popen([PYTHON, "-m", "solve_pipeline.solver", str(workspace)], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    for line in proc.stdout:
        if not line.startswith("{"):
            continue
        event = json.loads(line)
        lines.append(event)
        if event["event"] == "decision_request":
            request = DecisionRequest.model_validate_json(request_path(workspace / "solve", event["n"]).read_text())
            requests.append(request)
            if replies:
                server.push(replies.pop(0)(request))
            advisor.on_request(event)
    stderr = proc.stderr.read() if proc.stderr is not None else ""
    assert proc.wait(timeout=300) == 0, stderr[-3000:]
    advisor.close()
    result = json.loads((workspace / "solve" / "solve_result.json").read_text())
    return result, lines, requests
