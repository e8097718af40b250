"""A solver's warm start from the nearest solved tasks: families by similarity-weighted rank,
their tuned configurations nearest first, and the path from a real task memory on disk."""

from __future__ import annotations

from pathlib import Path

from agentk.core.records.config import SolveSettings, WarmStart
from agentk.core.records.results import FamilyOutcome, SolvedSummary
from curriculum.task_memory import MemoryEntry, TaskMemory, TaskText, TaskVectors
from curriculum.warm_start import warm_start_from

VECTORS = TaskVectors((1.0, 0.0), (1.0, 0.0))


def solved(task_id: str, *families: FamilyOutcome) -> MemoryEntry:
    return MemoryEntry(task_id, "positive", 0, VECTORS, 1.0, solved=SolvedSummary(families=list(families)))


def lgbm(score: float, **params: object) -> FamilyOutcome:
    return FamilyOutcome(family="lightgbm", score=score, params=dict(params), tuned=bool(params))


def test_families_follow_similarity_weighted_rank_and_configs_nearest_first() -> None:
    near = solved("near", lgbm(0.9, num_leaves=15), FamilyOutcome(family="catboost", score=0.88, params={"depth": 6}, tuned=True),
                  FamilyOutcome(family="linear", score=0.8))
    far = solved("far", FamilyOutcome(family="catboost", score=0.7, params={"depth": 8}, tuned=True), lgbm(0.6, num_leaves=63),
                 FamilyOutcome(family="extra_trees", score=None))  # failed: no vote
    opposite = solved("opposite", FamilyOutcome(family="fusion", score=0.99))
    start = warm_start_from([(far, 0.4), (opposite, -0.2), (near, 0.9)])
    # lightgbm: 0.9/1 + 0.4/2 = 1.1; catboost: 0.9/2 + 0.4/1 = 0.85; linear: 0.9/3 = 0.3
    assert start.families == ["lightgbm", "catboost", "linear"]
    assert start.configs == {"lightgbm": [{"num_leaves": 15}, {"num_leaves": 63}], "catboost": [{"depth": 6}, {"depth": 8}]}
    assert start.sources == ["near", "far"]
    limited = warm_start_from([(near, 0.9), (far, 0.4)], max_families=1, max_configs=1)
    assert limited.families == ["lightgbm"] and limited.configs == {"lightgbm": [{"num_leaves": 15}]}


def test_no_similar_neighbour_is_a_cold_start() -> None:
    assert warm_start_from([]) == WarmStart()
    assert warm_start_from([(solved("opposite", lgbm(0.9, a=1)), -0.1), (solved("zero", lgbm(0.9)), 0.0)]) == WarmStart()
    unsolved = MemoryEntry("bare", "positive", 0, VECTORS, 1.0)  # a success recorded without a summary
    assert warm_start_from([(unsolved, 0.8)]) == WarmStart()


def test_a_repeated_configuration_is_offered_once() -> None:
    a, b = solved("a", lgbm(0.9, num_leaves=31)), solved("b", lgbm(0.8, num_leaves=31))
    assert warm_start_from([(a, 0.9), (b, 0.8)]).configs == {"lightgbm": [{"num_leaves": 31}]}


class Bag:
    """A bag-of-words embedder: real vectors for a test that is about storage and ranking, not
    language (the MiniLM tests are in test_task_memory.py and test_selection.py)."""

    dim = 16

    def embed(self, texts: list[str]) -> list[list[float]]:
        out = []
        for text in texts:
            v = [0.0] * self.dim
            for word in text.lower().split():
                v[sum(map(ord, word)) % self.dim] += 1.0
            out.append(v)
        return out


def test_from_a_task_memory_on_disk_to_solver_settings(tmp_path: Path) -> None:
    memory = TaskMemory(tmp_path / "memory", embedder=Bag())
    tabular = TaskText("houses", "predict house prices from tabular features", "Modalities: tabular.", 8.0)
    images = TaskText("leaves", "classify leaf images", "Modalities: image.", 14.0)
    memory.add_success(tabular, 0, SolvedSummary(families=[lgbm(0.9, num_leaves=7)]))
    memory.add_success(images, 1, SolvedSummary(families=[FamilyOutcome(family="fusion", score=0.7)]))
    new = TaskText("flats", "predict flat prices from tabular features", "Modalities: tabular.", 8.0)
    neighbours = TaskMemory(tmp_path / "memory", embedder=Bag()).nearest_solved(new, k=2, exclude=None)
    assert neighbours[0][0].task_id == "houses"
    start = warm_start_from(neighbours)
    assert start.families[0] == "lightgbm" and start.configs["lightgbm"] == [{"num_leaves": 7}] and start.sources[0] == "houses"
    settings = SolveSettings(warm_start=start)
    assert SolveSettings.model_validate_json(settings.model_dump_json()).warm_start == start
