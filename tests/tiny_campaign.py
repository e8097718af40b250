"""One tiny real campaign for the whole test session, shared by the campaign, report and browser
tests (each real run costs tens of seconds on two cores, and the suite has a 30-minute budget).

The pool: the demo competition under two ids (near-copies the curriculum should find alike, each
with a leaderboard the grader places its test score on) and a folder with nothing to predict (its
setup fails at once). The driver is killed with -9 while the
third task's run is in its setup, then the same command resumes it. Tests that change files work
on copies. Test files load it with `pytest_plugins = ["tiny_campaign"]`.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from agentk.sources.demo import make_demo_competition

AGENTK = [sys.executable, "-m", "agentk.cli"]
# Tiny runs: the demo table has 569 rows, the linear model finishes in a second or two.
RUN_ARGS = ["--time-budget", "5", "--folds", "2"]


def agentk(*args: str, cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*AGENTK, *args], cwd=cwd, capture_output=True, text=True, timeout=timeout)


def tumour_competition(demo: Path, out: Path, competition_id: str, title: str) -> Path:
    """The demo competition under another id: a near-copy the curriculum should find similar."""
    shutil.copytree(demo, out)
    toml = out / "competition.toml"
    text = re.sub(r'id = ".*"', f'id = "{competition_id}"', toml.read_text())
    toml.write_text(re.sub(r'title = ".*"', f'title = "{title}"', text))
    return out


def add_leaderboard(competition: Path, teams: int = 120) -> Path:
    """A Kaggle-style leaderboard beside the competition (MLE-bench keeps one): accuracies spread
    from 0.90 to 0.99, so a good tiny run lands among the teams and Figure 9 has a field to rate."""
    rows = [f"{i},team {i},{0.99 - 0.09 * i / (teams - 1):.4f}" for i in range(teams)]
    path = competition / "leaderboard.csv"
    path.write_text("TeamId,TeamName,Score\n" + "\n".join(rows) + "\n")
    return path


def broken_competition(out: Path) -> Path:
    """A folder with nothing to predict: its setup fails at once, on every attempt."""
    (out / "data").mkdir(parents=True)
    (out / "description.md").write_text("# Notes\n\nA few numbers.\n")
    (out / "data" / "notes.csv").write_text("a,b\n1,2\n3,4\n")
    return out


def state_of(campaign: Path) -> dict:
    return json.loads((campaign / "state.json").read_text())


def decisions_of(campaign: Path) -> list[dict]:
    return [json.loads(line) for line in (campaign / "decisions.jsonl").read_text().splitlines()]


def wait_for(condition: Callable[[], bool], what: str, driver: subprocess.Popen, timeout_s: float = 300) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert driver.poll() is None, f"the campaign ended before {what}"
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


@pytest.fixture(scope="session")
def tiny_pool(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("pool")
    demo = make_demo_competition(root / "_demo")
    pool = root / "competitions"
    pool.mkdir()
    tumour_competition(demo, pool / "tumours-a", "tumours-a", "Tumour diagnosis A")
    tumour_competition(demo, pool / "tumours-b", "tumours-b", "Tumour diagnosis B")
    for name in ("tumours-a", "tumours-b"):
        add_leaderboard(pool / name)
    broken_competition(pool / "notes")
    shutil.rmtree(demo)
    return pool


@dataclass(frozen=True)
class TinyCampaign:
    root: Path  # where the commands ran
    pool: Path
    folder: Path  # the campaign folder
    args: list[str]  # the command; run again, it resumes
    third: str  # the task whose run was killed with the driver
    status_at_kill: dict[str, str]
    resume: subprocess.CompletedProcess[str]

    def workspace(self, key: str) -> Path:
        return self.folder / "workspaces" / key


@pytest.fixture(scope="session")
def tiny_campaign(tiny_pool: Path, tmp_path_factory: pytest.TempPathFactory) -> TinyCampaign:
    root = tmp_path_factory.mktemp("campaign")
    args = ["campaign", str(tiny_pool), "-w", str(root / "ws"), "--max-attempts", "1", *RUN_ARGS]
    folder = root / "ws" / "_campaigns" / "competitions"
    driver = subprocess.Popen([*AGENTK, *args], cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        # Kill the driver while the third task's run is in its setup: the first two have ended by then.
        wait_for(lambda: (folder / "decisions.jsonl").is_file() and len(decisions_of(folder)) == 3, "the third choice", driver)
        third = decisions_of(folder)[2]["chosen"]
        wait_for(lambda: (folder / "workspaces" / third / "logs" / "attempts.jsonl").is_file(), "the third run's setup", driver)
        os.kill(driver.pid, signal.SIGKILL)
    finally:
        if driver.poll() is None:
            driver.kill()
        driver.wait()
    status_at_kill = {key: task["status"] for key, task in state_of(folder)["tasks"].items()}
    # The run died with its driver, so its workspace is free for the resume at once.
    resume = agentk(*args, cwd=root)
    assert resume.returncode == 0, resume.stdout[-3000:] + resume.stderr[-3000:]
    return TinyCampaign(root, tiny_pool, folder, args, third, status_at_kill, resume)
