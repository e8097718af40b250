"""Experience memory (Agent K, appendix D.2): errors met in past setup runs and the code that
fixed them, retrieved by embedding similarity when a stage fails in a new competition.

A run's `logs/attempts.jsonl` is turned into experiences after the run (`ingest_attempts`);
while a later run retries a failed stage, `similar_fixes` finds fixes of the nearest past errors
at the same stage in other competitions and `render_tips` writes them as the TIPS entry of the
LLM policy's working memory.

Storage is a lancedb table on disk (one row per experience, with the error's embedding), so the
memory outlives runs and can be shared by every workspace under one root. It is shared, so what
is stored is redacted first (agentk/core/secrets.py): one run's secret never reaches another's prompt.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from functools import cached_property
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from agentk.core.secrets import redact
from agentk.core.records.workspace import json_lines
from curriculum.lance import connect, sql_literal
from curriculum.embedding import Embedder, MiniLMEmbedder

TABLE = "experience"
# MiniLM reads at most 256 word pieces from the start; a traceback's cause is at its end.
EMBED_TAIL_CHARS = 800


class Experience(BaseModel):
    competition: str
    stage: str
    error: str
    fix_code: str = ""  # the passing attempt's content; "" for a negative experience
    fixed: bool
    policy: str = ""
    failed_code: str = ""  # the content that raised `error`, so negatives still say what not to do
    created: datetime = Field(default_factory=lambda: datetime.now(UTC))

    @property
    def key(self) -> str:
        """Content hash: the same failure and fix, ingested twice, is one row."""
        parts = (self.competition, self.stage, self.error, self.fix_code, str(self.fixed))
        return hashlib.sha1("\0".join(parts).encode()).hexdigest()


def embedding_text(stage: str, error: str) -> str:
    # The stage is a filter, not part of the text: a shared prefix would pull every error of a
    # stage together and blur the distance threshold.
    del stage
    return error.strip()[-EMBED_TAIL_CHARS:]


class ExperienceStore:
    """Experiences in a lancedb database. `path` is the database directory, or the table's own
    `<dir>/<name>.lance` path (so `_memory/experience.lance` names both the directory on disk and
    the table)."""

    def __init__(self, path: Path | str, embedder: Embedder | None = None) -> None:
        path = Path(path)
        if path.suffix == ".lance":
            self.db_dir, self.table_name = path.parent, path.stem
        else:
            self.db_dir, self.table_name = path, TABLE
        self.embedder: Embedder = embedder or MiniLMEmbedder()

    @cached_property
    def _table(self) -> Any:
        # Opened on first use: loading lancedb takes seconds, and an expert run whose stages all
        # pass at the first attempt never reads or writes the memory.
        return connect(self.db_dir).create_table(self.table_name, schema=self._schema(), exist_ok=True)

    def open(self) -> ExperienceStore:
        """Open the table now, so that a broken store fails here rather than at first use."""
        _ = self._table
        return self

    def _schema(self) -> Any:
        import pyarrow as pa

        return pa.schema(
            [
                pa.field("key", pa.string()),
                pa.field("competition", pa.string()),
                pa.field("stage", pa.string()),
                pa.field("error", pa.string()),
                pa.field("fix_code", pa.string()),
                pa.field("fixed", pa.bool_()),
                pa.field("policy", pa.string()),
                pa.field("failed_code", pa.string()),
                pa.field("created", pa.string()),
                pa.field("vector", pa.list_(pa.float32(), self.embedder.dim)),
            ]
        )

    def __len__(self) -> int:
        return self._table.count_rows()

    def add(self, experiences: Iterable[Experience]) -> int:
        """Insert the experiences not stored yet; returns how many were new."""
        unique = {e.key: e for e in map(_redacted, experiences)}
        if not unique:
            return 0
        stored = self._existing_keys(list(unique))
        new = [e for k, e in unique.items() if k not in stored]
        if not new:
            return 0
        vectors = self.embedder.embed([embedding_text(e.stage, e.error) for e in new])
        rows = [_row(e, v) for e, v in zip(new, vectors)]
        # merge_insert keeps the key unique even if another process added the same row meanwhile.
        self._table.merge_insert("key").when_not_matched_insert_all().execute(rows)
        return len(rows)

    def _existing_keys(self, keys: list[str]) -> set[str]:
        found = self._table.search().where(f"key IN ({', '.join(sql_literal(k) for k in keys)})").select(["key"]).limit(len(keys)).to_list()
        return {row["key"] for row in found}

    def all(self) -> list[Experience]:
        return [_experience(row) for row in self._table.to_arrow().to_pylist()]

    def nearest(
        self,
        stage: str,
        error: str,
        *,
        k: int = 3,
        fixed: bool | None = True,
        exclude_competition: str | None = None,
        max_distance: float | None = None,
    ) -> list[tuple[Experience, float]]:
        """The k stored experiences of `stage` nearest to `error` (cosine distance, ascending)."""
        if k <= 0 or len(self) == 0:
            return []
        where = [f"stage = {sql_literal(stage)}"]
        if fixed is not None:
            where.append(f"fixed = {'true' if fixed else 'false'}")
        if exclude_competition is not None:
            where.append(f"competition != {sql_literal(exclude_competition)}")
        [vector] = self.embedder.embed([embedding_text(stage, error)])
        query = self._table.search(vector).distance_type("cosine").where(" AND ".join(where), prefilter=True).limit(k)
        hits = [(_experience(row), float(row["_distance"])) for row in query.to_list()]
        return [(e, d) for e, d in hits if max_distance is None or d <= max_distance]


def _redacted(experience: Experience) -> Experience:
    texts = ("competition", "stage", "error", "fix_code", "policy", "failed_code")
    return experience.model_copy(update={name: redact(getattr(experience, name)) for name in texts})


def _row(experience: Experience, vector: list[float]) -> dict[str, Any]:
    row = experience.model_dump()
    row["created"] = experience.created.isoformat()
    row["key"] = experience.key
    row["vector"] = vector
    return row


def _experience(row: dict[str, Any]) -> Experience:
    return Experience.model_validate({name: row[name] for name in Experience.model_fields})


# ---- from a run's attempt log -----------------------------------------------------------------


def _attempt_lines(path: Path) -> Iterator[dict[str, Any]]:
    for record in json_lines(path):
        if record.get("kind", "stage") == "stage" and record.get("stage"):
            yield record


def experiences_from_attempts(competition_id: str, records: Iterable[dict[str, Any]]) -> list[Experience]:
    """Per stage, in log order: the last real failure before a pass becomes (error -> the passing
    content, fixed); a failure no pass followed becomes a negative experience. Declines are not
    errors of the code (the model wrote none), so they neither open nor close a pair."""
    pending: dict[str, dict[str, Any]] = {}
    found: list[Experience] = []
    for record in records:
        stage = record["stage"]
        if record.get("declined"):
            continue
        if not record.get("passed"):
            pending[stage] = record
            continue
        failure = pending.pop(stage, None)
        if failure is not None:
            found.append(_pair(competition_id, failure, record))
    found.extend(_pair(competition_id, failure, None) for failure in pending.values())
    return found


def _pair(competition_id: str, failure: dict[str, Any], success: dict[str, Any] | None) -> Experience:
    error = "; ".join(str(p) for p in failure.get("problems") or []) or "the stage check failed"
    return Experience(
        competition=competition_id,
        stage=failure["stage"],
        error=error,
        fix_code=(success or {}).get("content", ""),
        fixed=success is not None,
        policy=str((success or failure).get("policy", "")),
        failed_code=failure.get("content", ""),
    )


def ingest_attempts(store: ExperienceStore, competition_id: str, attempts_jsonl_path: Path | str) -> int:
    """Add a run's experiences to the store; returns how many were new (0 on a re-ingest)."""
    path = Path(attempts_jsonl_path)
    if not path.is_file():
        return 0
    return store.add(experiences_from_attempts(competition_id, _attempt_lines(path)))


# ---- retrieval for the policy -----------------------------------------------------------------


def similar_fixes(
    store: ExperienceStore,
    stage: str,
    error: str,
    k: int = 3,
    exclude_competition: str | None = None,
    max_distance: float | None = None,
) -> list[Experience]:
    """Fixed experiences of the same stage, from other competitions, nearest first. Several
    rows can carry the same fix (one template solved many errors); it is shown once."""
    hits = store.nearest(stage, error, k=k * 2, fixed=True, exclude_competition=exclude_competition, max_distance=max_distance)
    seen: set[str] = set()
    fixes: list[Experience] = []
    for experience, _ in hits:
        if experience.fix_code.strip() and experience.fix_code not in seen:
            seen.add(experience.fix_code)
            fixes.append(experience)
    return fixes[:k]


def _fence(text: str) -> str:
    stripped = text.lstrip()
    return "json" if stripped.startswith(("{", "[")) else "python"


def render_tips(experiences: Iterable[Experience], max_chars: int = 3000) -> str:
    """A markdown TIPS entry; whole tips while they fit, the first one cut to fit if need be."""
    intro = "Past runs met a similar error at this stage. Adapt the fix to this competition's files and columns; do not copy names blindly."
    parts = [intro]
    used = len(intro)
    for experience in experiences:
        error = experience.error.strip()
        error = error if len(error) <= 300 else "…" + error[-300:]
        head = f"A similar error in {experience.competition} at {experience.stage} (`{error}`) was fixed by:"
        lang = _fence(experience.fix_code)
        room = max_chars - used - len(head) - len(lang) - 16
        code = experience.fix_code.strip("\n")
        if len(code) > room:
            if len(parts) > 1 or room < 200:
                break
            code = code[:room] + "\n# … [truncated]"
        tip = f"{head}\n```{lang}\n{code}\n```"
        parts.append(tip)
        used += len(tip) + 2
    return "\n\n".join(parts) if len(parts) > 1 else ""
