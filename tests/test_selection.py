"""The next task of a campaign: equation 7 on a constructed pool whose right answer is known (real
MiniLM vectors of real descriptions and trees), the failure penalty and its decay, the fixed,
random (reproducible on resume, across processes) and heuristic orders, and the LLM's first pick
through a real OpenAI-compatible server on loopback."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from llm_server import Reply, ScriptedLLMServer

from agentk.llm import LLMConfig, make_client
from agentk.sources import load_competition
from curriculum.selection import (
    CurriculumParams,
    Order,
    TaskCandidate,
    choose,
    parse_task_id,
    pick_first_with_llm,
)
from curriculum.task_memory import MemoryEntry, TaskMemory, TaskText, TaskVectors
from curriculum.tree_description import describe_tree

SHARED = Path(__file__).resolve().parents[2] / "shared" / "competitions"
ROOT = Path(__file__).resolve().parents[1]

PLANKTON = """# Plankton Image Classification

## Overview
Identify the species of plankton in microscope photographs. Each image shows one organism,
and there are 12 classes. Build an image classifier that predicts the class of every test image.

## Evaluation
Submissions are scored by multi-class log loss over the predicted class probabilities.
"""


def task_from(raw: Path, task_id: str) -> TaskText:
    tree = describe_tree(raw)
    return TaskText(task_id, (raw / "description.md").read_text(encoding="utf-8"), tree.text, tree.complexity)


@pytest.fixture(scope="module")
def pool(tmp_path_factory: pytest.TempPathFactory) -> dict[str, TaskText]:
    """Titanic (solved), a near-copy of it with fewer rows and a reworded page, and an unrelated
    image task."""
    root = tmp_path_factory.mktemp("pool")
    titanic = root / "titanic"
    load_competition(SHARED / "titanic").prepare(titanic)
    copy = root / "titanic-remix"
    (copy / "data").mkdir(parents=True)
    for name in ("train.csv", "test.csv", "gender_submission.csv"):
        lines = (titanic / "data" / name).read_text(encoding="utf-8").splitlines(keepends=True)
        (copy / "data" / name).write_text("".join(lines[: len(lines) * 2 // 3]), encoding="utf-8")
    page = (titanic / "description.md").read_text(encoding="utf-8")
    (copy / "description.md").write_text(page.replace("Titanic", "Titanic (remix)"), encoding="utf-8")
    images = root / "plankton"
    (images / "data" / "train").mkdir(parents=True)
    (images / "description.md").write_text(PLANKTON, encoding="utf-8")
    for i in range(60):
        (images / "data" / "train" / f"{i:03}.jpg").write_bytes(b"\xff\xd8\xff" + bytes(3000))
    (images / "data" / "train_labels.csv").write_text("image,label\n" + "".join(f"{i:03}.jpg,c{i % 12}\n" for i in range(60)), encoding="utf-8")
    return {"titanic": task_from(titanic, "titanic"), "titanic-remix": task_from(copy, "titanic-remix"), "plankton": task_from(images, "plankton")}


def test_curriculum_picks_the_near_copy_of_a_solved_task(tmp_path: Path, pool: dict[str, TaskText]) -> None:
    memory = TaskMemory(tmp_path / "memory")
    memory.add_success(pool["titanic"], 0, None)
    vectors = memory.vectors([pool["plankton"], pool["titanic-remix"]])
    candidates = [TaskCandidate(t, pool[t].complexity, vectors[t]) for t in ("plankton", "titanic-remix")]
    choice = choose(Order.CURRICULUM, candidates, memory.positives(), memory.negatives(), round_number=1)
    assert choice.task_id == "titanic-remix"
    assert [r.task_id for r in choice.ranking] == ["titanic-remix", "plankton"]
    remix, plankton = choice.ranking
    assert remix.score is not None and plankton.score is not None and remix.score > plankton.score
    assert remix.terms["positive_description"] > plankton.terms["positive_description"]
    assert remix.terms["positive_tree"] > plankton.terms["positive_tree"]
    assert remix.terms["recent_failure"] == 0.0 and "resembling the 1 solved task" in choice.reason
    # the fixed order would have taken the first given; nothing solved yet -> the simplest tree
    assert choose(Order.FIXED, candidates, memory.positives(), [], round_number=1).task_id == "plankton"
    simplest = min(candidates, key=lambda c: c.complexity).task_id
    assert choose(Order.CURRICULUM, candidates, [], [], round_number=0).task_id == simplest


def test_a_failed_task_is_held_back_and_its_failures_go_after_a_success(tmp_path: Path, pool: dict[str, TaskText]) -> None:
    memory = TaskMemory(tmp_path / "memory")
    memory.add_success(pool["titanic"], 0, None)
    vectors = memory.vectors([pool["plankton"], pool["titanic-remix"]])
    candidates = [TaskCandidate(t, pool[t].complexity, vectors[t]) for t in ("plankton", "titanic-remix")]
    memory.add_failure(pool["titanic-remix"], 1, "the metric stage failed")

    held = choose(Order.CURRICULUM, candidates, memory.positives(), memory.negatives(), CurriculumParams(beta=10.0), round_number=2)
    assert held.task_id == "plankton"
    remix = next(r for r in held.ranking if r.task_id == "titanic-remix")
    assert remix.terms["recent_failure"] == pytest.approx(-10.0 * math.exp(-1))
    assert remix.terms["negative_description"] == pytest.approx(-1.0)  # its own failure is in RAG⁻ too
    # The penalty decays, but its own failure keeps it behind a task that has not failed; once it is
    # the only one left, it is retried.
    later = choose(Order.CURRICULUM, candidates, memory.positives(), memory.negatives(), CurriculumParams(beta=10.0), round_number=12)
    assert later.task_id == "plankton"
    remix_later = next(r for r in later.ranking if r.task_id == "titanic-remix")
    assert remix_later.terms["recent_failure"] == pytest.approx(-10.0 * math.exp(-11))
    alone = choose(Order.CURRICULUM, candidates[1:], memory.positives(), memory.negatives(), CurriculumParams(beta=10.0), round_number=12)
    assert alone.task_id == "titanic-remix" and "for its failure 11 round(s) ago" in alone.reason

    memory.add_success(pool["titanic-remix"], 3, None)
    assert memory.negatives() == [] and {e.task_id for e in memory.positives()} == {"titanic", "titanic-remix"}


def vec(*xs: float) -> TaskVectors:
    v = np.asarray(xs, dtype=float)
    return TaskVectors(tuple(v), tuple(v))


def entry(task_id: str, v: TaskVectors, kind: str = "positive", round: int = 0) -> MemoryEntry:
    return MemoryEntry(task_id, kind, round, v, 1.0)  # type: ignore[arg-type]


def test_equation_7_terms_on_hand_made_vectors() -> None:
    positives = [entry("p1", vec(1, 0, 0)), entry("p2", vec(0.8, 0.6, 0)), entry("p3", vec(0, 0, 1))]
    negatives = [entry("n1", vec(0, 1, 0), "negative", 3), entry("c", vec(1, 0, 0), "negative", 4)]
    candidate = TaskCandidate("c", 2.0, vec(1, 0, 0))
    params = CurriculumParams(alpha=0.5, beta=2.0, r=2)
    choice = choose(Order.CURRICULUM, [candidate], positives, negatives, params, round_number=6)
    terms = choice.terms
    assert terms["positive_description"] == pytest.approx((1.0 + 0.8) / 2)  # top-2 of 1, 0.8, 0
    assert terms["positive_tree"] == pytest.approx(0.5 * 0.9)
    assert terms["negative_description"] == pytest.approx(-(1.0 + 0.0) / 2)  # c's own failure (1) and n1 (orthogonal)
    assert terms["recent_failure"] == pytest.approx(-2.0 * math.exp(-2))
    assert choice.score == pytest.approx(sum(terms.values()))
    with pytest.raises(ValueError, match="pool is empty"):
        choose(Order.CURRICULUM, [], positives, negatives)
    with pytest.raises(ValueError, match="no vectors"):
        choose(Order.CURRICULUM, [TaskCandidate("x", 1.0)], positives, negatives)


def test_heuristic_and_fixed_orders_and_ties() -> None:
    candidates = [TaskCandidate("b", 5.0), TaskCandidate("a", 3.0), TaskCandidate("c", 3.0)]
    heuristic = choose("heuristic", candidates, [], [])
    assert heuristic.task_id == "a" and [r.task_id for r in heuristic.ranking] == ["a", "c", "b"]
    assert heuristic.ranking[0].score is None and "complexity 3" in heuristic.reason
    assert choose(Order.FIXED, candidates, [], []).task_id == "b"
    # equal curriculum scores: the simpler tree, then the earlier position
    same = vec(1, 0)
    tied = [TaskCandidate("x", 4.0, same), TaskCandidate("y", 2.0, same), TaskCandidate("z", 2.0, same)]
    assert choose(Order.CURRICULUM, tied, [entry("p", vec(0, 1))], []).task_id == "y"


def test_random_order_is_seeded_by_seed_and_round_and_survives_a_restart() -> None:
    candidates = [TaskCandidate(f"t{i}", float(i)) for i in range(8)]
    picks = [choose(Order.RANDOM, candidates, [], [], seed=7, round_number=r).task_id for r in range(6)]
    assert picks == [choose(Order.RANDOM, candidates, [], [], seed=7, round_number=r).task_id for r in range(6)]
    assert len(set(picks)) > 1  # not the same task every round
    assert picks != [choose(Order.RANDOM, candidates, [], [], seed=8, round_number=r).task_id for r in range(6)]
    code = (
        "import json; from curriculum.selection import TaskCandidate, choose\n"
        "c = [TaskCandidate(f't{i}', float(i)) for i in range(8)]\n"
        "print(json.dumps([choose('random', c, [], [], seed=7, round_number=r).task_id for r in range(6)]))"
    )
    other = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True,
                           env={"PYTHONHASHSEED": "123", "PATH": ""})
    assert json.loads(other.stdout) == picks  # a new process (another hash seed) resumes the same order


def llm_config(server: ScriptedLLMServer) -> LLMConfig:
    return LLMConfig(base_url=server.base_url, model="qwen2.5-coder-7b", api_key="sk-test", timeout_s=2.0,
                     max_retries=1, backoff_base_s=0.01)  # type: ignore[call-arg]


def test_the_llm_picks_the_first_task_from_the_tree_descriptions(pool: dict[str, TaskText]) -> None:
    tasks = [pool["plankton"], pool["titanic-remix"], pool["titanic"]]
    replies = [Reply("titanic"), Reply("I would start with `titanic-remix`."), Reply("plankton or titanic"),
               Reply("mnist"), Reply(status=500, body={"error": "boom"})]
    with ScriptedLLMServer(replies) as server:
        client = make_client(llm_config(server))
        assert pick_first_with_llm(client, tasks) == "titanic"
        assert pick_first_with_llm(client, tasks) == "titanic-remix"  # not read as "titanic"
        assert pick_first_with_llm(client, tasks) is None  # two ids named: ambiguous
        assert pick_first_with_llm(client, tasks) is None  # not a candidate
        assert pick_first_with_llm(client, tasks) is None  # the server failed: the caller falls back
        prompt = server.chat_requests[0].body["messages"][-1]["content"]
    assert "### plankton" in prompt and pool["plankton"].tree in prompt and "### titanic-remix" in prompt
    assert pick_first_with_llm(client, []) is None


def test_parse_task_id_reads_bare_quoted_and_embedded_ids() -> None:
    ids = ["titanic", "spaceship-titanic", "house.prices"]
    assert parse_task_id("`spaceship-titanic`.", ids) == "spaceship-titanic"
    assert parse_task_id("### house.prices", ids) == "house.prices"
    assert parse_task_id("Start with titanic: it is the smallest.", ids) == "titanic"
    assert parse_task_id("spaceship-titanic, because it is tabular", ids) == "spaceship-titanic"
    assert parse_task_id("", ids) is None and parse_task_id("titanics", ids) is None
