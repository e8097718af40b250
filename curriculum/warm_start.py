"""A new task's solver warm-started from its nearest solved tasks (meta-learning as in
Auto-sklearn): the families that won on similar tasks are raced first, and their tuned
configurations are HEBO's first trials. Works without an LLM: it reads only the task memory.
"""

from __future__ import annotations

from collections.abc import Sequence

from agentk.core.records.config import WarmStart
from curriculum.task_memory import MemoryEntry


def warm_start_from(
    neighbours: Sequence[tuple[MemoryEntry, float]], *, max_families: int = 4, max_configs: int = 3
) -> WarmStart:
    """Families ordered by a similarity-weighted rank vote: a neighbour at similarity s gives its
    k-th best family (k = 0, 1, ...) s / (k + 1), so a family that won on a close task outranks
    one that came third on several. Only neighbours with a positive similarity and a solve
    summary vote; families that produced no score are left out. Configurations: per chosen
    family, the neighbours' tuned parameters, nearest neighbour first, each once."""
    voters = sorted(
        ((entry, sim) for entry, sim in neighbours if sim > 0 and entry.solved is not None),
        key=lambda pair: (-pair[1], pair[0].task_id),
    )
    votes: dict[str, float] = {}
    first_seen: dict[str, int] = {}
    for entry, sim in voters:
        assert entry.solved is not None
        scored = [f for f in entry.solved.families if f.score is not None]
        for rank, outcome in enumerate(scored):
            votes[outcome.family] = votes.get(outcome.family, 0.0) + sim / (rank + 1)
            first_seen.setdefault(outcome.family, len(first_seen))
    families = sorted(votes, key=lambda f: (-votes[f], first_seen[f]))[: max(0, max_families)]

    configs: dict[str, list[dict]] = {}
    for family in families:
        found: list[dict] = []
        for entry, _ in voters:
            assert entry.solved is not None
            for outcome in entry.solved.families:
                if outcome.family == family and outcome.tuned and outcome.params and outcome.params not in found:
                    found.append(dict(outcome.params))
        if found[: max(0, max_configs)]:
            configs[family] = found[: max(0, max_configs)]

    sources = [entry.task_id for entry, _ in voters if any(f.family in families for f in entry.solved.families)]  # type: ignore[union-attr]
    return WarmStart(families=families, configs=configs, sources=sources)
