"""A competition the expert declines, set up end to end by the LLM policy through the real CLI.

The digits data from the shared generator is re-laid the awkward way: training scans under
`data/train/digit_<d>/scans/<name>.png` (an extra level, so no folder of per-class image folders),
test scans split over `data/test/batch_1/` and `batch_2/`, no train or test CSV, and a sample
submission whose ids are file names *with* `.png`. The expert declines it (asserted first, so the
test proves the LLM path is needed); scripted replies of a competent model, served over real HTTP on
127.0.0.1, fill every stage; the run solves, writes a valid submission and is graded on held-out answers.
"""

from __future__ import annotations

import csv
import json
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from llm_server import Reply, ScriptedLLMServer
from test_llm_policy import MODEL

from agentk.sources import load_competition
from setup_pipeline.expert.facts import ExpertDeclined
from setup_pipeline.expert.inspect import inspect_competition

pytestmark = pytest.mark.integration

SHARED = Path(__file__).resolve().parents[2] / "shared"
SCRIPTS = Path(__file__).resolve().parent / "llm_scripts" / "digits_nested"
AGENTK = [sys.executable, "-m", "agentk.cli"]
# Every LLM query of the run, in stage order (no meta check fails, so no credit assignment).
REPLIES = ("summarise", "modalities", "plan", "train_input_map_img", "train_target_map", "target_transform",
           "test_input_map_img", "submission_format", "metric")
STAGES = {"summarise", "modalities", "plan", "train_input_map_img", "train_target_map", "target_transform",
          "test_input_map_img", "submission_format", "metric"}
N_TRAIN = 600  # a subsample keeps the run fast; a linear model still reads digits well from it

DESCRIPTION = """# Digit Scans

## Overview
Each scan is a handwritten digit (0-9), a 32x32 grey-scale PNG. Predict the digit shown in each test scan.

## Evaluation
Submissions are scored by classification accuracy.

### Submission format
```
file,digit
img_0003.png,7
img_0010.png,1
etc.
```

## Data
- **train/**: one folder `digit_<d>` per digit; inside it a `scans/` folder holds that digit's training scans.
- **test/**: the test scans, delivered in two batch folders (`batch_1/`, `batch_2/`).
- **sample_submission.csv**: every test scan (`file` is the image's file name, extension included) with a placeholder digit.
"""


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


def _write_csv(path: Path, header: list[str], rows: list[list[object]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)


def make_awkward_digits(tmp_path: Path) -> Path:
    """The shared digits generator's folder layout, re-laid with nesting the expert cannot follow."""
    plain = tmp_path / "digits-plain"
    subprocess.run([sys.executable, str(SHARED / "tools" / "make_digits_competition.py"), str(plain), "--layout", "folders"],
                   check=True, capture_output=True, text=True, timeout=120)
    out = tmp_path / "digit-scans-nested"
    rng = random.Random(0)
    train = sorted((plain / "data" / "train").glob("*/*.png"))
    for path in sorted(rng.sample(train, N_TRAIN)):
        target = out / "data" / "train" / f"digit_{path.parent.name}" / "scans" / path.name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, target)
    answers = _rows(plain / "private" / "answers.csv")  # image_id,label (ids without extension)
    order = [row["image_id"] for row in _rows(plain / "data" / "sample_submission.csv")]
    for i, image_id in enumerate(sorted(order)):
        target = out / "data" / "test" / f"batch_{1 + i % 2}" / f"{image_id}.png"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(plain / "data" / "test" / f"{image_id}.png", target)
    _write_csv(out / "data" / "sample_submission.csv", ["file", "digit"], [[f"{i}.png", 0] for i in order])
    _write_csv(out / "private" / "answers.csv", ["file", "digit"], [[f"{r['image_id']}.png", r["label"]] for r in answers])
    (out / "description.md").write_text(DESCRIPTION, encoding="utf-8")
    (out / "competition.toml").write_text(
        '[competition]\nid = "digit-scans-nested"\ntitle = "Digit Scans"\ninput_modalities = ["image"]\n'
        'task_type = "multiclass"\n\n[grading]\nmetric = "accuracy"\nhigher_is_better = true\n'
        'id_column = "file"\ntarget_columns = ["digit"]\nanswers = "private/answers.csv"\n', encoding="utf-8")
    return out


@pytest.fixture(scope="module")
def awkward(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_awkward_digits(tmp_path_factory.mktemp("awkward"))


def test_the_expert_declines_the_nested_layout(awkward: Path, tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    load_competition(awkward).prepare(raw)
    assert len(list((raw / "data" / "train").glob("digit_*/scans/*.png"))) == N_TRAIN
    assert {p.parent.name for p in (raw / "data" / "test").rglob("*.png")} == {"batch_1", "batch_2"}
    with pytest.raises(ExpertDeclined) as declined:
        inspect_competition(raw)
    assert "no training data" in declined.value.reason


def test_llm_policy_sets_up_and_solves_the_nested_layout_through_the_cli(awkward: Path, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    replies = [Reply((SCRIPTS / f"{name}.md").read_text(encoding="utf-8")) for name in REPLIES]
    with ScriptedLLMServer(replies, models=(MODEL,)) as server:
        proc = subprocess.run(
            [*AGENTK, "run", str(awkward), "-w", str(ws), "--policy", "llm", "--llm", server.base_url, "--model", MODEL,
             "--time-budget", "8", "--folds", "2", "--json", "--no-llm-solve"],  # a setup test: the solve is the expert's
            capture_output=True, text=True, timeout=300, cwd=tmp_path, check=False)
        requests = server.chat_requests
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert len(requests) == len(REPLIES)  # the script is used up exactly: no retry, no credit assignment
    result = json.loads(proc.stdout)
    assert result["policy"] == "llm"
    assert set(result["setup"]) == STAGES
    assert all(s["passed"] and s["attempts"] == 1 for s in result["setup"].values()), result["setup"]
    workspace = ws / result["competition_id"]
    attempts = [json.loads(line) for line in (workspace / "logs" / "attempts.jsonl").read_text().splitlines()]
    meta = {a["stage"]: a for a in attempts if a["kind"] == "meta"}
    assert set(meta) == {"meta_maps", "meta_light_solve"} and all(m["passed"] for m in meta.values()), meta
    assert all(a["policy"] == "llm" and a["passed"] for a in attempts)
    assert next(a for a in attempts if a["stage"] == "test_input_map_img")["plan"].startswith("1. Test scans are spread over")

    # The plan is the model's (the expert would have added its "facts"), keyed by file names with .png.
    plan = json.loads((workspace / "setup" / "plan.json").read_text())
    assert plan["id_column"] == "file" and plan["target_columns"] == ["digit"] and plan["metric"] == "accuracy"
    assert "facts" not in plan and plan["steps"][0].startswith("Walk data/train/digit_<d>/scans/")
    test_map = _rows(workspace / "setup" / "test_img_input_map.csv")
    assert len(test_map) == 360 and all(r["id"].endswith(".png") for r in test_map)
    assert {Path(r["image_path"]).parent.name for r in test_map} == {"batch_1", "batch_2"}
    target_map = _rows(workspace / "setup" / "train_tab_target_map.csv")
    assert len(target_map) == N_TRAIN and {r["digit"] for r in target_map} == {str(d) for d in range(10)}

    # A valid submission in the sample's shape, graded on the held-out answers.
    assert result["valid_submission"] and result["metric"] == "accuracy"
    submission = _rows(Path(result["submission_path"]))
    sample = _rows(workspace / "raw" / "data" / "sample_submission.csv")
    assert [r["file"] for r in submission] == [r["file"] for r in sample]
    assert result["test_score"] > 0.8, result
    assert result["model"] != "constant"

    # Token use was accounted per stage, every query went over HTTP (no cache replay).
    usage = result["llm_usage"]
    assert usage and json.dumps(usage).count("tokens") > 0
    calls = [json.loads(line) for line in (workspace / "logs" / "llm_calls.jsonl").read_text().splitlines()]
    assert [c["stage"] for c in calls] == list(REPLIES) and not any(c["cached"] for c in calls)
    assert "DATA-VIEW" in "\n".join(m["content"] for m in requests[3].body["messages"])
