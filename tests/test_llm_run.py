"""`agentk run SRC --llm URL --model NAME` through the real CLI: the hybrid policy (the default when
an LLM is configured) sets up a competition whose page names no metric (the LLM checks the stage the
expert filled on an assumption), the run solves and grades it, token use lands in result.json, and a
re-run replays from the response cache with zero calls."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from llm_server import ScriptedLLMServer
from helpers import handed_in_after_failed_setup
from test_llm_policy import MODEL, _without_evaluation, script

pytestmark = pytest.mark.integration

AGENTK = [sys.executable, "-m", "agentk.cli"]
REPLIES = ("metric",)
# Titanic's linear model (the race's pace-setter, never skipped) clears 0.7 within seconds; these
# tests are about the policy, the cache and the messages, not about tuning.
BUDGET_S = "3"
# These tests are about the setup policy and its cache: the solve stays the expert's (--no-llm-solve),
# whose decisions would ask the scripted server again.


def run(source: Path, ws: Path, base_url: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*AGENTK, "run", str(source), "-w", str(ws), "--llm", base_url, "--model", MODEL, "--time-budget", BUDGET_S, "--folds", "2", "--json",
                           "--no-llm-solve"],
                          capture_output=True, text=True, timeout=600, cwd=ws.parent)


def test_hybrid_run_through_the_cli_and_cache_replay(tmp_path: Path) -> None:
    source = _without_evaluation(tmp_path)
    ws = tmp_path / "ws"
    with ScriptedLLMServer(script(*REPLIES)) as server:
        first = run(source, ws, server.base_url)
        assert first.returncode == 0, first.stderr[-2000:]
        assert len(server.chat_requests) == len(REPLIES)
    result = json.loads(first.stdout)
    assert result["policy"] == "hybrid" and result["valid_submission"] and result["metric"] == "accuracy"
    assert result["test_score"] > 0.7
    assert result["llm_usage"] and json.dumps(result["llm_usage"]).count("tokens") > 0

    # A fresh workspace with the same cache replays every answer: the server gets no call.
    (tmp_path / "ws2").mkdir()
    cached = ws / result["competition_id"] / "llm_cache"
    assert cached.is_dir()
    shutil.copytree(cached, tmp_path / "ws2" / result["competition_id"] / "llm_cache")
    with ScriptedLLMServer([]) as server:
        second = run(source, tmp_path / "ws2", server.base_url)
        assert second.returncode == 0, second.stderr[-2000:]
        assert server.chat_requests == []
    assert json.loads(second.stdout)["valid_submission"]


def test_unreachable_llm_server_is_one_clear_line(tmp_path: Path) -> None:
    """The stage that needs the LLM fails for want of it: the run still hands in the valid sample,
    in one warning line that names the LLM and its address."""
    source = _without_evaluation(tmp_path)
    proc = run(source, tmp_path / "ws", "http://127.0.0.1:9/v1")
    handed_in_after_failed_setup(proc, tmp_path / "ws" / json.loads(proc.stdout)["competition_id"],
                                 source / "data" / "gender_submission.csv", "the LLM cannot be used", "127.0.0.1:9")
