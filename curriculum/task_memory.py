"""The campaign's task memory (Agent K, section 3.3): RAG⁺ holds the tasks set up and solved,
RAG⁻ one entry per failed attempt. Each entry keeps two MiniLM vectors, one of the task's
description and one of its directory tree in words (`curriculum/tree_description.py`), which the
curriculum's selection (`curriculum/selection.py`) and the solver's warm start
(`curriculum/warm_start.py`) compare.

Storage is lancedb on disk, beside the experience memory and in its style: one table of entries,
one table of vectors keyed by a hash of the text embedded, so a resumed campaign never embeds a
text twice. A task that succeeds loses its RAG⁻ entries: it is no longer a failure to steer from.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import numpy as np

from agentk.core.reading.markdown import headings
from agentk.core.records.results import SolvedSummary
from curriculum.lance import connect, sql_literal
from curriculum.embedding import Embedder, MiniLMEmbedder

ENTRIES = "task_memory"
VECTORS = "task_vectors"
POSITIVE = "positive"
NEGATIVE = "negative"
# MiniLM reads 256 word pieces, about 1,000 characters of English: the rest would be cut anyway.
EMBED_CHARS = 1200
# Sections that say what the task is; the tail of a Kaggle page (prizes, citation, FAQ,
# acknowledgements, timeline) reads alike in every competition and would pull all tasks together.
USEFUL_SECTIONS = re.compile(r"overview|description|evaluation|metric|goal|task|problem|objective|summary|data", re.I)
BOILERPLATE = re.compile(r"acknowledg|citation|prize|timeline|faq|frequently|rules|licen[cs]e|kernel|notebook|tutorial|getting started|contact", re.I)
_MARKUP = re.compile(r"!\[[^\]]*\]\([^)]*\)|\[([^\]]*)\]\([^)]*\)|<[^>]+>|[*_`>#|]")

Kind = Literal["positive", "negative"]


@dataclass(frozen=True)
class TaskText:
    task_id: str
    description: str
    tree: str
    complexity: float


@dataclass(frozen=True)
class TaskVectors:
    description: tuple[float, ...]
    tree: tuple[float, ...]


@dataclass(frozen=True)
class MemoryEntry:
    task_id: str
    kind: Kind
    round: int
    vectors: TaskVectors
    complexity: float
    reason: str = ""
    solved: SolvedSummary | None = None
    created: str = ""


def description_for_embedding(description: str) -> str:
    """The page's title and the sections that define the task (overview, evaluation, data),
    without links, images and markup, cut to what MiniLM reads. A page without headings gives
    its head."""
    lines = description.splitlines()
    marks = headings(description)
    kept = lines[: marks[0].line] if marks else lines  # the lead before any heading
    top = min((h.level for h in marks), default=0)
    useful: list[bool] = []
    for i, mark in enumerate(marks):
        parent = next((j for j in range(i - 1, -1, -1) if marks[j].level < mark.level), None)
        # A top-level heading's usefulness is its own: "# Overview" above "## Prizes" says nothing.
        inherited = parent is not None and marks[parent].level > top and useful[parent]
        useful.append(not BOILERPLATE.search(mark.title) and (bool(USEFUL_SECTIONS.search(mark.title)) or inherited))
        end = marks[i + 1].line if i + 1 < len(marks) else len(lines)
        if i == 0:
            kept.append(mark.title)  # the page's title, whatever it says
            if useful[i]:
                kept.extend(lines[mark.line + 1 : end])
        elif useful[i]:
            kept.extend([mark.title, *lines[mark.line + 1 : end]])
    text = " ".join(_MARKUP.sub(lambda m: m.group(1) or " ", " ".join(kept)).split())
    if marks and not any(useful):  # headings named unlike Kaggle's: the page's head is the best guess
        text = " ".join(_MARKUP.sub(lambda m: m.group(1) or " ", description).split())
    return text[:EMBED_CHARS]


def _key(kind: str, text: str, dim: int) -> str:
    return hashlib.sha1(f"{kind}\0{dim}\0{text}".encode()).hexdigest()


class TaskMemory:
    """RAG⁺ and RAG⁻ in a lancedb database directory `path` (created if missing)."""

    def __init__(self, path: Path | str, embedder: Embedder | None = None) -> None:
        self.path = Path(path)
        self.embedder: Embedder = embedder or MiniLMEmbedder()
        self._db = connect(self.path)
        self._entries = self._db.create_table(ENTRIES, schema=self._entry_schema(), exist_ok=True)
        self._vectors = self._db.create_table(VECTORS, schema=self._vector_schema(), exist_ok=True)

    def _vector_schema(self) -> Any:
        import pyarrow as pa

        return pa.schema([pa.field("key", pa.string()), pa.field("vector", pa.list_(pa.float32(), self.embedder.dim))])

    def _entry_schema(self) -> Any:
        import pyarrow as pa

        vector = pa.list_(pa.float32(), self.embedder.dim)
        return pa.schema(
            [
                pa.field("key", pa.string()),
                pa.field("task_id", pa.string()),
                pa.field("kind", pa.string()),
                pa.field("round", pa.int64()),
                pa.field("reason", pa.string()),
                pa.field("solved", pa.string()),  # SolvedSummary as JSON, "" for none
                pa.field("complexity", pa.float64()),
                pa.field("created", pa.string()),
                pa.field("description_vector", vector),
                pa.field("tree_vector", vector),
            ]
        )

    # ---- vectors ---------------------------------------------------------------------------

    def vectors(self, tasks: Sequence[TaskText]) -> dict[str, TaskVectors]:
        """Each task's (description, tree) vectors; texts embedded before are read back, the rest
        embedded in one batch and stored."""
        dim = self.embedder.dim
        texts: dict[str, str] = {}
        wanted: list[tuple[str, str, str]] = []  # task_id, description key, tree key
        for task in tasks:
            description = description_for_embedding(task.description)
            d_key, t_key = _key("description", description, dim), _key("tree", task.tree, dim)
            texts[d_key], texts[t_key] = description, task.tree
            wanted.append((task.task_id, d_key, t_key))
        stored = self._stored_vectors(list(texts))
        missing = [k for k in texts if k not in stored]
        if missing:
            fresh = self.embedder.embed([texts[k] for k in missing])
            rows = [{"key": k, "vector": v} for k, v in zip(missing, fresh, strict=True)]
            self._vectors.merge_insert("key").when_not_matched_insert_all().execute(rows)
            stored.update({k: tuple(float(x) for x in v) for k, v in zip(missing, fresh, strict=True)})
        return {task_id: TaskVectors(stored[d], stored[t]) for task_id, d, t in wanted}

    def _stored_vectors(self, keys: list[str]) -> dict[str, tuple[float, ...]]:
        if not keys:
            return {}
        found = self._vectors.search().where(f"key IN ({', '.join(sql_literal(k) for k in keys)})").limit(len(keys)).to_list()
        return {row["key"]: tuple(float(x) for x in row["vector"]) for row in found}

    @property
    def embedded_texts(self) -> int:
        """How many distinct texts have been embedded (what a resume must not grow)."""
        return self._vectors.count_rows()

    # ---- entries ---------------------------------------------------------------------------

    def add_success(self, task: TaskText, round: int, solved: SolvedSummary | None) -> MemoryEntry:
        """The task joins RAG⁺ (one entry per task: a later success replaces it) and leaves RAG⁻."""
        entry = self._entry(task, POSITIVE, round, "", solved)
        self._entries.merge_insert("key").when_matched_update_all().when_not_matched_insert_all().execute(
            [_row(f"{POSITIVE}:{task.task_id}", entry)]
        )
        self._entries.delete(f"task_id = {sql_literal(task.task_id)} AND kind = '{NEGATIVE}'")
        return entry

    def add_failure(self, task: TaskText, round: int, reason: str) -> MemoryEntry:
        """One RAG⁻ entry per failed attempt; recording the same round again (a resumed campaign
        replaying its last step) keeps one."""
        entry = self._entry(task, NEGATIVE, round, reason, None)
        self._entries.merge_insert("key").when_matched_update_all().when_not_matched_insert_all().execute(
            [_row(f"{NEGATIVE}:{task.task_id}:{round}", entry)]
        )
        return entry

    def _entry(self, task: TaskText, kind: Kind, round: int, reason: str, solved: SolvedSummary | None) -> MemoryEntry:
        vectors = self.vectors([task])[task.task_id]
        return MemoryEntry(task.task_id, kind, round, vectors, task.complexity, reason, solved, datetime.now(UTC).isoformat())

    def positives(self) -> list[MemoryEntry]:
        return self._kind(POSITIVE)

    def negatives(self) -> list[MemoryEntry]:
        return self._kind(NEGATIVE)

    def _kind(self, kind: Kind) -> list[MemoryEntry]:
        rows = self._entries.search().where(f"kind = '{kind}'").limit(None).to_list()
        return sorted((_entry(row) for row in rows), key=lambda e: (e.round, e.task_id))

    @property
    def positive_count(self) -> int:
        return self._entries.count_rows(f"kind = '{POSITIVE}'")

    @property
    def negative_count(self) -> int:
        return self._entries.count_rows(f"kind = '{NEGATIVE}'")

    def nearest_solved(
        self, task: TaskText, k: int, exclude: str | Collection[str] | None = None, *, tree_weight: float = 1.0
    ) -> list[tuple[MemoryEntry, float]]:
        """The k RAG⁺ entries most like `task`, nearest first. Similarity is the weighted mean of
        the two cosines, (cos(description) + w·cos(tree)) / (1 + w), so it stays in [-1, 1]: what
        the task is about and what its data looks like both count (w = 1: equally). Computed
        exactly over every positive: a campaign's memory holds tens to thousands of tasks."""
        if k <= 0:
            return []
        left_out = {exclude} if isinstance(exclude, str) else set(exclude or ())
        entries = [e for e in self.positives() if e.task_id not in left_out]
        if not entries:
            return []
        mine = self.vectors([task])[task.task_id]
        scored = [(e, similarity(mine, e.vectors, tree_weight)) for e in entries]
        scored.sort(key=lambda pair: (-pair[1], pair[0].task_id))
        return scored[:k]


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    norm = float(np.linalg.norm(x) * np.linalg.norm(y))
    return float(np.clip(x @ y / norm, -1.0, 1.0)) if norm > 0 else 0.0


def similarity(a: TaskVectors, b: TaskVectors, tree_weight: float = 1.0) -> float:
    return (cosine(a.description, b.description) + tree_weight * cosine(a.tree, b.tree)) / (1.0 + tree_weight)


def _row(key: str, entry: MemoryEntry) -> dict[str, Any]:
    return {
        "key": key,
        "task_id": entry.task_id,
        "kind": entry.kind,
        "round": entry.round,
        "reason": entry.reason,
        "solved": entry.solved.model_dump_json() if entry.solved is not None else "",
        "complexity": entry.complexity,
        "created": entry.created,
        "description_vector": list(entry.vectors.description),
        "tree_vector": list(entry.vectors.tree),
    }


def _entry(row: dict[str, Any]) -> MemoryEntry:
    solved = SolvedSummary.model_validate(json.loads(row["solved"])) if row["solved"] else None
    vectors = TaskVectors(tuple(float(x) for x in row["description_vector"]), tuple(float(x) for x in row["tree_vector"]))
    return MemoryEntry(row["task_id"], row["kind"], int(row["round"]), vectors, float(row["complexity"]),
                       row["reason"], solved, row["created"])
