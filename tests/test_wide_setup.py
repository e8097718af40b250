"""A wide table and a short budget: setup has a deadline derived from the run's budget, and a run
that reaches it still ends with a valid submission (the sample's), said in one line and recorded.
Wide maps and split files are written by Arrow byte for byte as pandas and the csv module write
them, and a header is read from its first record. Tables are made here. A wide table's whole run at
a short budget, its deadline recorded once and met, is test_odd_inputs'
test_a_wide_table_of_constants_and_noise_takes_the_wide_path (the suite's one wide run)."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from agentk.core.records.config import SetupBudget
from agentk.core.records.events import EventLog
from agentk.core.maps import WIDE_MAP_COLUMNS, read_map, write_map
from agentk.core.readers import read_table, table_columns
from agentk.core.reading.record_bounds import read_csv_header
from agentk.core.records.workspace import Workspace
from agentk.sources import load_competition
from agentk.sources.common import write_csv_exact
from setup_pipeline.deadline import Deadline, SetupDeadline, setup_deadline_s
from setup_pipeline.expert.expert_policy import ExpertPolicy
from setup_pipeline.mdp import SetupMDP

AGENTK = [sys.executable, "-m", "agentk.cli"]
PAGE = "# Wide\n\n## Evaluation\n\nSubmissions are evaluated on accuracy.\n"


def test_a_wide_map_is_written_as_pandas_writes_it(tmp_path: Path) -> None:
    """Cells holding commas, quotes, line breaks, blanks and missing values, names that need
    quotes, Arrow- and Python-backed text columns: the same bytes as `to_csv`."""
    cells = ["a", "", "b,c", 'say "hi"', "x\ny", "r\rs", "  pad ", "é漢", None, "1.0", '"', ",", "\r\n", "NA"]
    rng = np.random.default_rng(0)
    width = WIDE_MAP_COLUMNS + 20
    frame = pd.DataFrame({f"c{j}": [cells[i] for i in rng.integers(0, len(cells), 30)] for j in range(width)})
    frame = frame.astype("string[pyarrow]")
    frame["named, with a comma"] = pd.array(['q"1'] * 30, dtype="string[python]")
    frame.insert(0, "id", pd.array([str(i) for i in range(30)], dtype="str"))
    write_map(frame, tmp_path / "fast.csv")
    frame.to_csv(tmp_path / "pandas.csv", index=False, lineterminator="\r\n")
    assert (tmp_path / "fast.csv").read_bytes() == (tmp_path / "pandas.csv").read_bytes()
    assert read_map(tmp_path / "fast.csv", text=True).shape == frame.shape


def test_a_wide_split_file_is_written_as_the_csv_module_writes_it(tmp_path: Path) -> None:
    """With newline records a lone carriage return needs no quotes (the csv module's rule)."""
    cells = ["a", "", "b,c", 'say "hi"', "x\ny", "r\rs", None, "1.0"]
    rng = np.random.default_rng(1)
    columns = {f"c{j}": [cells[i] for i in rng.integers(0, len(cells), 20)] for j in range(WIDE_MAP_COLUMNS + 5)}
    frame = pd.DataFrame(columns).astype("string[pyarrow]")
    write_csv_exact(frame, tmp_path / "fast.csv")
    with open(tmp_path / "module.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(frame.columns)
        writer.writerows(frame.astype(object).where(frame.notna(), None).itertuples(index=False))
    assert (tmp_path / "fast.csv").read_bytes() == (tmp_path / "module.csv").read_bytes()


@pytest.mark.parametrize("head", ['\ufeffid,"a, b","line\nbreak",c\n1,2,3,4\n', "x,y\r\n1,2\r\n", "\nlate,header\n1,2\n",
                                  "a,a,,b\n1,2,3,4\n"])
def test_a_header_is_named_as_pandas_names_it(tmp_path: Path, head: str) -> None:
    path = tmp_path / "t.csv"
    path.write_text(head, encoding="utf-8", newline="")
    assert read_csv_header(path) == list(pd.read_csv(path, dtype=str, nrows=0).columns)


def test_the_deadline_caps_every_step_and_stops_setup_between_stages(tmp_path: Path) -> None:
    """Twice the solver's budget, at least the floor, or the run's own; each sandboxed step gets
    at most the time left; setup stops before the next stage once the deadline has passed, having
    recorded where, and keeps what passed."""
    assert setup_deadline_s(SetupBudget(), 20) == 180 and setup_deadline_s(SetupBudget(), 600) == 1200
    assert setup_deadline_s(SetupBudget(setup_deadline_s=7), 600) == 7
    capped = Deadline.starting(30).capped(SetupBudget())
    assert 25 < capped.stage_timeout_s <= 30 and 25 < capped.light_solve_timeout_s <= 30
    assert Deadline.starting(1, started=0).capped(SetupBudget()).probe_timeout_s == 5  # a step's least

    source = _wide_competition(tmp_path / "wide-mdp", 10)
    workspace = Workspace(tmp_path / "ws")
    workspace.create()
    load_competition(source).prepare(workspace.raw)
    events = EventLog(workspace.logs / "events.jsonl", quiet=True)

    class LateAfterSummary(ExpertPolicy):
        """The expert, whose first stage takes the rest of setup's time."""

        def act(self, spec, ctx):  # type: ignore[no-untyped-def]
            action = super().act(spec, ctx)
            if spec.name == "summarise":
                mdp.deadline = Deadline.starting(0.0, started=0)  # spent: the next step is past it
            return action

    mdp = SetupMDP(workspace, LateAfterSummary(), events, deadline=Deadline.starting(3600))
    state = workspace.load_state()
    with pytest.raises(SetupDeadline, match="before 'modalities'"):
        mdp.run(state, workspace.save_state)
    assert state.stages["summarise"].passed and state.stage("modalities").attempts == 0
    recorded = [json.loads(line) for line in (workspace.logs / "events.jsonl").read_text().splitlines()]
    assert [(e["outcome"], e["before"]) for e in recorded if e["event"] == "setup_deadline"] == [("reached", "modalities")]


def test_the_deadline_stops_perception_between_its_own_steps(tmp_path: Path) -> None:
    """Perception runs inside a stage: past the deadline it stops at its next step (before the
    next table is read, the roles decided, ...), the stage neither passes nor is blamed, and the
    event says during which step."""
    source = _wide_competition(tmp_path / "wide-perception", 10)
    workspace = Workspace(tmp_path / "ws")
    workspace.create()
    load_competition(source).prepare(workspace.raw)
    events = EventLog(workspace.logs / "events.jsonl", quiet=True)

    class SpentInPerception(ExpertPolicy):
        """The expert, whose perception starts just as setup's time runs out."""

        def act(self, spec, ctx):  # type: ignore[no-untyped-def]
            if spec.name == "modalities":
                mdp.deadline = Deadline.starting(0.0, started=0)
            return super().act(spec, ctx)

    mdp = SetupMDP(workspace, SpentInPerception(), events, deadline=Deadline.starting(3600))
    state = workspace.load_state()
    with pytest.raises(SetupDeadline, match="during 'modalities'"):
        mdp.run(state, workspace.save_state)
    assert state.stages["summarise"].passed and not state.stage("modalities").passed
    assert not (workspace.logs / "expert_errors.log").exists()  # the deadline is no error of the rules
    recorded = [json.loads(line) for line in (workspace.logs / "events.jsonl").read_text().splitlines()]
    reached = [e for e in recorded if e["event"] == "setup_deadline"]
    assert len(reached) == 1 and reached[0]["before"] == "modalities" and reached[0]["during"].startswith("reading data/")


@pytest.mark.parametrize("content", ['\ufeffid, name ,"a, b"\n1,x,2\n2,y,3\n', "a;b;c\n1,5;2;3\n4;5,5;6\n",
                                     "a\tb\n1\t2\n3\t4\n", "a,a,b\n1,2,3\n4,5,6\n", ",x,y\n1,2,3\n4,5,6\n",
                                     "only\n1\n2\n", '"q ""w""",e\n1,2\n3,4\n'])
def test_a_tables_columns_are_read_from_its_header_as_read_table_names_them(tmp_path: Path, content: str) -> None:
    path = tmp_path / "t.csv"
    path.write_text(content, encoding="utf-8", newline="")
    assert table_columns(path) == list(read_table(path).columns)


def _wide_competition(root: Path, extra: int) -> Path:
    """A binary task whose answer follows two columns, with `extra` more columns in train and
    test, half constant, half noise."""
    rng = np.random.default_rng(5)
    n_train, n_test = 160, 60
    x = rng.normal(size=(n_train + n_test, 2))
    y = (x[:, 0] + x[:, 1] > 0).astype(int)
    ids = np.arange(1, n_train + n_test + 1)
    base = pd.DataFrame({"row_id": ids, "f_a": x[:, 0].round(3), "f_b": x[:, 1].round(3)})
    half = extra // 2
    constant = pd.DataFrame(7, index=base.index, columns=[f"flag_{j}" for j in range(half)])
    noise = pd.DataFrame(rng.integers(0, 50, size=(len(base), extra - half)), columns=[f"noise_{j}" for j in range(extra - half)])
    table = pd.concat([base, constant, noise], axis=1)
    (root / "data").mkdir(parents=True)
    (root / "description.md").write_text(PAGE)
    train = table.iloc[:n_train].copy()
    train.insert(3, "label", y[:n_train])
    train.to_csv(root / "data" / "train.csv", index=False)
    table.iloc[n_train:].to_csv(root / "data" / "test.csv", index=False)
    pd.DataFrame({"row_id": ids[n_train:], "label": 0}).to_csv(root / "data" / "sample_submission.csv", index=False)
    return root


def _run(source: Path, tmp_path: Path, *flags: str) -> tuple[dict, list[dict], str]:
    proc = subprocess.run([*AGENTK, "run", str(source), "-w", str(tmp_path / "ws"), "--folds", "2", *flags],
                          cwd=tmp_path, capture_output=True, text=True, timeout=900)
    assert "Traceback" not in proc.stderr + proc.stdout, proc.stderr[-3000:]
    assert proc.returncode == 0, proc.stderr[-3000:]
    workspace = tmp_path / "ws" / source.name
    result = json.loads((workspace / "result.json").read_text())
    events = [json.loads(line) for line in (workspace / "logs" / "events.jsonl").read_text().splitlines()]
    return result, events, proc.stdout + proc.stderr


@pytest.mark.integration
def test_a_setup_past_its_deadline_hands_in_the_sample(tmp_path: Path) -> None:
    """A deadline already passed when setup starts: no stage runs, the sample is the submission,
    the run says so in one line and records it (the event and the submission's record)."""
    source = _wide_competition(tmp_path / "wide-deadline", 3000)
    result, events, out = _run(source, tmp_path, "--time-budget", "15", "--setup-deadline", "0.001")
    assert result["valid_submission"] and result["error"] is None and result["phase"] == "done", result
    assert result["model"] == "sample_submission"
    reached = [e for e in events if e["event"] == "setup_deadline"]
    assert [e["outcome"] for e in reached] == ["reached"] and reached[0]["before"] == "summarise"
    assert [e["file"] for e in events if e["event"] == "setup_deadline_submission"] == ["data/sample_submission.csv"]
    assert not any(e["event"] == "stage" for e in events)  # no stage ran past the deadline
    assert " ".join(out.split()).count("handed in the sample submission data/sample_submission.csv") == 1
    submitted = (tmp_path / "ws" / source.name / "submissions" / "submission.csv").read_bytes()
    assert submitted == (source / "data" / "sample_submission.csv").read_bytes()
