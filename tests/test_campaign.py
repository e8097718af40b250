"""`agentk campaign` end to end: real runs of tiny competitions in real subprocesses, the real
task memory in lancedb, a kill -9 of the driver and its resume, and the one-line refusals."""

from __future__ import annotations

import json
import shutil
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from click.testing import Result
from typer.testing import CliRunner

from agentk.cli import app
from curriculum.task_memory import TaskMemory
from llm_server import Reply, ScriptedLLMServer
from tiny_campaign import TinyCampaign, agentk, decisions_of, state_of

pytestmark = pytest.mark.integration
pytest_plugins = ["kaggle_server", "tiny_campaign"]
# These tests' runs need only a valid solve (the linear pace-setter's, within a second or two);
# each second of budget is a second of wall time per run.
SHORT_RUN_ARGS = ["--time-budget", "3", "--folds", "2"]


def in_process(*args: str) -> Result:
    """The CLI in this process: for commands that start no run, where a fresh interpreter would
    cost ~5 s for one line."""
    return CliRunner().invoke(app, list(args))


def test_a_campaign_over_a_folder_survives_kill_9_and_remembers_both_kinds(tiny_campaign: TinyCampaign,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    campaign, third, args = tiny_campaign.folder, tiny_campaign.third, tiny_campaign.args
    monkeypatch.chdir(tiny_campaign.root)  # where the campaign's commands ran
    assert tiny_campaign.status_at_kill[third] == "running"
    state = state_of(campaign)
    status = {key: task["status"] for key, task in state["tasks"].items()}
    assert status == {"tumours-a": "solved", "tumours-b": "solved", "notes": "gave_up"}
    assert state["round"] == 3
    for key in ("tumours-a", "tumours-b"):
        [attempt] = state["tasks"][key]["attempts"]
        assert attempt["ok"] and attempt["validation_score"] > 0.8 and attempt["test_score"] > 0.8

    # Nothing redone: one start for each finished run, two for the killed one, which resumed from
    # its workspace rather than starting over.
    def run_starts(key: str) -> list[dict]:
        lines = (campaign / "workspaces" / key / "logs" / "events.jsonl").read_text().splitlines()
        return [json.loads(line) for line in lines if '"run_start"' in line]

    for key in status:
        starts = run_starts(key)
        assert len(starts) == (2 if key == third else 1), key
    assert run_starts(third)[1]["resumed_phase"] != "new"

    # Every choice is logged with every candidate's terms; with no success yet the simplest tree
    # goes first, and the near-copy of a solved task is preferred to a task like a failed one.
    decisions = decisions_of(campaign)
    assert [d["round"] for d in decisions] == [1, 2, 3]
    assert all(len(d["ranking"]) >= 1 and d["reason"] for d in decisions)
    assert decisions[0]["chosen"] == "notes"  # one tiny file: the simplest tree
    assert {d["chosen"] for d in decisions[1:]} == {"tumours-a", "tumours-b"}

    # The second tumour task started warm from the first one's winners.
    config = json.loads((campaign / "configs" / f"{third}.json").read_text())
    assert config["solve"]["warm_start"]["sources"] == [decisions[1]["chosen"]]
    assert config["solve"]["warm_start"]["families"]

    memory = TaskMemory(campaign / "workspaces" / "_memory" / "tasks.lance")
    assert {e.task_id for e in memory.positives()} == {"tumours-a", "tumours-b"}
    assert {e.task_id for e in memory.negatives()} == {"notes"}

    shown = in_process("campaign", "status", str(campaign))
    assert shown.exit_code == 0, shown.output
    for key in ("tumours-a", "tumours-b", "notes", "solved", "gave_up"):
        assert key in shown.stdout
    assert "next: nothing" in shown.stdout
    # The workspace root lists its campaigns, with their counts.
    listed = in_process("campaign", "status", str(campaign.parent.parent))
    assert listed.exit_code == 0, listed.output
    row = next(line for line in listed.stdout.splitlines() if campaign.name in line)
    assert [cell.strip() for cell in row.split("│") if cell.strip()] == [campaign.name, "3", "2", "1", "0", "3"], row

    # Run again: everything has ended, nothing is redone.
    again = in_process(*args)
    assert again.exit_code == 0, again.output[-2000:]
    assert state_of(campaign)["round"] == 3 and len(decisions_of(campaign)) == 3


def test_bad_input_gets_one_clear_line(tmp_path: Path, tiny_pool: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pool = tiny_pool
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.chdir(tmp_path)
    result = in_process("campaign", str(empty), "-w", str(tmp_path / "ws"))
    assert result.exit_code == 2 and result.stderr.startswith("error:") and len(result.stderr.strip().splitlines()) == 1, result.output
    assert "no competitions" in result.stderr

    # A real process: Ray's own start-up must not leak a traceback past the one line (and no Ray
    # client is left behind in the test process, beside the Ray tests of this worker).
    proc = agentk("campaign", str(pool / "tumours-a"), "-w", str(tmp_path / "ws"), "--ray-address", "127.0.0.1:1", cwd=tmp_path, timeout=120)
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert proc.returncode == 2 and len(errors) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "Ray" in errors[0] and "127.0.0.1:1" in errors[0]

    result = in_process("campaign", "status", str(tmp_path / "nowhere"))
    assert result.exit_code == 2 and "no campaign" in result.stderr


def test_a_task_folder_that_vanishes_mid_campaign_is_left_out_with_one_line(tiny_pool: Path, tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    pool = tiny_pool
    folder = tmp_path / "competitions"
    shutil.copytree(pool / "notes", folder / "notes")
    # A budget spent before the first task starts: the pool is described, nothing runs.
    monkeypatch.chdir(tmp_path)
    first = in_process("campaign", str(folder), "-w", str(tmp_path / "ws"), "--total-budget", "0.001")
    assert first.exit_code == 1  # nothing solved
    shutil.rmtree(folder / "notes")
    result = in_process("campaign", str(folder), "-w", str(tmp_path / "ws"), "--total-budget", "1h")
    assert result.exit_code == 1
    output = result.output
    lines = [line for line in output.splitlines() if "notes" in line and "gone" in line]
    assert len(lines) == 1 and "Traceback" not in output, output
    state = state_of(tmp_path / "ws" / "_campaigns" / "competitions")
    assert state["tasks"]["notes"]["status"] == "vanished"


def test_a_task_list_of_kaggle_slugs_submits_within_each_daily_limit(fake_kaggle_many, tmp_path: Path) -> None:
    # playground's allowance for today is used up before the campaign starts: solved, not sent.
    fake_kaggle_many.daily_limits["playground-series-s3e5"] = 0
    tasks = tmp_path / "tasks.txt"
    tasks.write_text("https://www.kaggle.com/competitions/titanic\nplayground-series-s3e5\n")
    proc = agentk("campaign", str(tasks), "-w", str(tmp_path / "ws"), "--submit", "--submit-poll", "0.05",
                  "--order", "fixed", *SHORT_RUN_ARGS, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    campaign = tmp_path / "ws" / "_campaigns" / "tasks"
    state = state_of(campaign)
    assert {k: t["status"] for k, t in state["tasks"].items()} == {"titanic": "solved", "playground-series-s3e5": "solved"}
    assert [s.slug for s in fake_kaggle_many.submissions] == ["titanic"]
    titanic = json.loads((campaign / "workspaces" / "titanic" / "result.json").read_text())
    assert titanic["kaggle"]["submissions"][0]["public_score"] > 0.6
    playground = json.loads((campaign / "configs" / "playground-series-s3e5.json").read_text())
    assert playground["submit"] is False
    assert "daily limit" in proc.stderr + proc.stdout


def test_a_campaign_on_a_local_ray_cluster_starts_with_the_llms_pick(tiny_pool: Path, tmp_path: Path) -> None:
    pool = tiny_pool
    tasks = tmp_path / "tasks.txt"
    tasks.write_text(f"{pool / 'notes'}\n{pool / 'tumours-a'}\n")
    # The LLM only picks the first task here (the runs use the expert): it names the tumours, where
    # the simplest tree would have been the notes folder.
    reply = Reply(content="tumours-a", completion_tokens=3)
    with ScriptedLLMServer([reply]) as llm:
        proc = agentk("campaign", str(tasks), "-w", str(tmp_path / "ws"), "--ray-address", "local", "--workers", "2", "--max-attempts", "1",
                      "--policy", "expert", "--llm", llm.base_url, "--model", "qwen2.5-coder-7b", *SHORT_RUN_ARGS, cwd=tmp_path)
        assert len(llm.chat_requests) == 1
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    campaign = tmp_path / "ws" / "_campaigns" / "tasks"
    state = state_of(campaign)
    assert {k: t["status"] for k, t in state["tasks"].items()} == {"tumours-a": "solved", "notes": "gave_up"}
    assert state["tasks"]["tumours-a"]["attempts"][0]["validation_score"] > 0.8
    first = decisions_of(campaign)[0]
    assert first["chosen"] == "tumours-a" and "LLM" in first["reason"]
    assert state["tokens"] > 0  # the pick's tokens, counted by the campaign
    # Two workers: the second task started while the first was still running.
    a, notes = state["tasks"]["tumours-a"]["attempts"][0], state["tasks"]["notes"]["attempts"][0]
    a_end = datetime.fromisoformat(a["started"]) + timedelta(seconds=a["elapsed_s"])
    assert datetime.fromisoformat(a["started"]) <= datetime.fromisoformat(notes["started"]) < a_end


def test_seeds_run_each_task_independently_and_give_table_4(tiny_pool: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`--seeds 2`: each pool task runs under two seeds, in two workspaces, neither warm-started
    from the other; the report's Table 4 estimates Pass@k from them."""
    from agentk.report.campaign_data import pass_at_k
    from agentk.report.campaign_report import campaign_context

    pool = tmp_path / "pool"
    pool.mkdir()
    shutil.copytree(tiny_pool / "tumours-a", pool / "tumours-a")
    args = ["campaign", str(pool), "-w", str(tmp_path / "ws"), "--seeds", "2", "--max-attempts", "1", *SHORT_RUN_ARGS]
    proc = agentk(*args, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "1 task × 2 seeds" in proc.stdout + proc.stderr
    campaign = tmp_path / "ws" / "_campaigns" / "pool"
    state = state_of(campaign)
    assert {k: (t["family"], t["seed"], t["status"]) for k, t in state["tasks"].items()} == {
        "tumours-a-seed1": ("tumours-a", 1, "solved"), "tumours-a-seed2": ("tumours-a", 2, "solved")}
    workspaces = {state["tasks"][f"tumours-a-seed{s}"]["workspace"] for s in (1, 2)}
    assert workspaces == {str(campaign / "workspaces" / f"_seed{s}" / "tumours-a") for s in (1, 2)}
    assert all((Path(w) / "result.json").is_file() for w in workspaces)
    configs = [json.loads((campaign / "configs" / f"tumours-a-seed{s}.json").read_text())["solve"] for s in (1, 2)]
    assert configs[0]["seed"] != configs[1]["seed"]
    assert all(not (c["warm_start"] or {}).get("sources") for c in configs)  # no seed learns from its sibling
    assert [state["tasks"][f"tumours-a-seed{s}"]["attempts"][0]["setup_ok"] for s in (1, 2)] == [True, True]

    table = {p.modality: p for p in pass_at_k(campaign_context(campaign)["rows"])}
    assert list(table) == ["tabular"]  # a failing family's 0% is the estimator's unit test
    assert (table["tabular"].at[1], table["tabular"].at[3], table["tabular"].runs) == (1.0, None, 2)
    html = (campaign / "report.html").read_text()
    assert "Pass@k per modality (Table 4)" in html and "100%" in html and "--seeds 3" not in html

    monkeypatch.chdir(tmp_path)
    again = in_process(*args[:-len(SHORT_RUN_ARGS)], "--seeds", "3")  # resumes as it started; nothing left to run
    assert again.exit_code == 0 and "runs 2 seed(s) per task, as it started" in again.output
