"""The campaign's task memory (RAG⁺ / RAG⁻): a real lancedb database on disk, the real bundled
MiniLM embedder, and the shared competitions' real descriptions and trees."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from agentk.core.records.results import FamilyOutcome, SolvedSummary
from agentk.sources import load_competition
from curriculum.embedding import MiniLMEmbedder
from curriculum.task_memory import TaskMemory, TaskText, description_for_embedding
from curriculum.tree_description import describe_tree

SHARED = Path(__file__).resolve().parents[2] / "shared" / "competitions"


class CountingEmbedder:
    """The real MiniLM, counting the texts it is asked to embed (what a resume must not repeat)."""

    def __init__(self) -> None:
        self.inner = MiniLMEmbedder()
        self.dim = self.inner.dim
        self.texts: list[str] = []

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.texts.extend(texts)
        return self.inner.embed(texts)


@pytest.fixture(scope="module")
def tasks(tmp_path_factory: pytest.TempPathFactory) -> dict[str, TaskText]:
    root = tmp_path_factory.mktemp("raw")
    found = {}
    for name in ("titanic", "spaceship-titanic", "spooky-author-identification", "house-prices-advanced-regression-techniques"):
        raw = root / name
        load_competition(SHARED / name).prepare(raw)
        tree = describe_tree(raw)
        found[name] = TaskText(name, (raw / "description.md").read_text(encoding="utf-8"), tree.text, tree.complexity)
    return found


SOLVED = SolvedSummary(
    metric="accuracy",
    higher_is_better=True,
    validation_score=0.83,
    families=[FamilyOutcome(family="lightgbm", score=0.83, params={"num_leaves": 31, "learning_rate": 0.05}, tuned=True),
              FamilyOutcome(family="linear", score=0.79)],
    timeline=[(1.5, 0.79), (12.0, 0.83)],
    time_budget_s=60.0,
)


def test_vectors_are_embedded_once_and_read_back_on_resume(tmp_path: Path, tasks: dict[str, TaskText]) -> None:
    embedder = CountingEmbedder()
    memory = TaskMemory(tmp_path / "memory", embedder=embedder)
    first = memory.vectors(list(tasks.values()))
    assert set(first) == set(tasks) and len(embedder.texts) == 2 * len(tasks)
    assert len(first["titanic"].description) == embedder.dim == 384

    resumed_embedder = CountingEmbedder()
    resumed = TaskMemory(tmp_path / "memory", embedder=resumed_embedder)  # a new process, same campaign
    again = resumed.vectors(list(tasks.values()))
    assert resumed_embedder.texts == [] and resumed.embedded_texts == 2 * len(tasks)
    assert again["titanic"].tree == pytest.approx(first["titanic"].tree, abs=1e-6)

    edited = TaskText("titanic", "# Titanic\n\n## Evaluation\nNow scored by log loss.", tasks["titanic"].tree, 1.0)
    resumed.vectors([edited, tasks["spaceship-titanic"]])
    assert len(resumed_embedder.texts) == 1 and "log loss" in resumed_embedder.texts[0]  # only the changed text


def test_success_replaces_its_entry_and_removes_the_tasks_failures(tmp_path: Path, tasks: dict[str, TaskText]) -> None:
    memory = TaskMemory(tmp_path / "memory", embedder=CountingEmbedder())
    titanic, spooky = tasks["titanic"], tasks["spooky-author-identification"]
    memory.add_failure(titanic, 0, "metric stage failed")
    memory.add_failure(titanic, 2, "solver timed out")
    memory.add_failure(titanic, 2, "solver timed out")  # a resume replaying round 2
    memory.add_failure(spooky, 1, "no test rows found")
    assert memory.negative_count == 3 and [(e.task_id, e.round) for e in memory.negatives()] == [("titanic", 0), ("spooky-author-identification", 1), ("titanic", 2)]

    memory.add_success(titanic, 3, None)
    memory.add_success(titanic, 4, SOLVED)  # a second success replaces the first
    reopened = TaskMemory(tmp_path / "memory", embedder=CountingEmbedder())
    assert [(e.task_id, e.round) for e in reopened.negatives()] == [("spooky-author-identification", 1)]
    [positive] = reopened.positives()
    assert (positive.task_id, positive.kind, positive.round, positive.solved) == ("titanic", "positive", 4, SOLVED)
    assert positive.complexity == titanic.complexity and reopened.positive_count == 1 and reopened.negative_count == 1
    assert reopened.negatives()[0].reason == "no test rows found"


def test_nearest_solved_ranks_the_similar_competition_first(tmp_path: Path, tasks: dict[str, TaskText]) -> None:
    memory = TaskMemory(tmp_path / "memory", embedder=CountingEmbedder())
    for i, name in enumerate(("titanic", "spooky-author-identification", "house-prices-advanced-regression-techniques")):
        memory.add_success(tasks[name], i, SOLVED)
    hits = memory.nearest_solved(tasks["spaceship-titanic"], k=3, exclude=None)
    assert [e.task_id for e, _ in hits][0] == "titanic"
    assert all(-1.0 <= s <= 1.0 for _, s in hits) and [s for _, s in hits] == sorted((s for _, s in hits), reverse=True)
    assert hits[0][1] > hits[-1][1] + 0.05
    without = memory.nearest_solved(tasks["titanic"], k=5, exclude="titanic")
    assert "titanic" not in [e.task_id for e, _ in without] and len(without) == 2
    assert memory.nearest_solved(tasks["titanic"], k=0, exclude=None) == []
    # the solved task itself is its own nearest, at similarity 1
    assert memory.nearest_solved(tasks["titanic"], k=1, exclude=None)[0][1] == pytest.approx(1.0, abs=1e-5)


def test_the_embedded_description_keeps_the_task_and_drops_the_boilerplate() -> None:
    page = (
        "# Forecast Widgets\n\n## Overview\nPredict weekly widget sales per store.\n\n"
        "### Acknowledgments\nThanks to the Widget Institute.\n\n## Evaluation\nScored by RMSE.\n\n"
        "### Submission format\nid,sales\n\n## Prizes\n1st place: $10,000\n\n## Citation\nWidgets et al., 2020\n"
    )
    text = description_for_embedding(page)
    assert text.startswith("Forecast Widgets Overview Predict weekly widget sales per store.")
    assert "Scored by RMSE" in text and "Submission format id,sales" in text
    assert "Widget Institute" not in text and "$10,000" not in text and "Widgets et al." not in text
    long_page = "# T\n\n## Overview\n" + "word " * 2000
    assert len(description_for_embedding(long_page)) == 1200


class Letters:
    """Letter counts: a cheap real embedder for a test about how many rows come back."""

    dim = 26

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [[float(t.lower().count(chr(97 + i))) + 1e-3 for i in range(26)] for t in texts]


def test_every_entry_comes_back_not_a_default_page_of_them(tmp_path: Path) -> None:
    memory = TaskMemory(tmp_path / "memory", embedder=Letters())
    for i in range(25):
        memory.add_failure(TaskText(f"task{i}", f"description {i}", "Modalities: tabular.", 1.0), i, "setup failed")
    assert len(memory.negatives()) == memory.negative_count == 25 and memory.positives() == []
