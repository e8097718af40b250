"""Which task a campaign runs next: Agent K's curriculum (section 3.3, equation 7) and the orders
it is compared with in the paper's Figure 14 (fixed, random, heuristic).

Equation 7 scores a candidate task T against the task memory:

    score(T) =   mean top-r cos(desc_T, desc_j) over RAG⁺  + α · mean top-r cos(tree_T, tree_j) over RAG⁺
               − mean top-r cos(desc_T, desc_j) over RAG⁻  − α · mean top-r cos(tree_T, tree_j) over RAG⁻
               − β · e^(−λ)      (λ = rounds since T last failed; no term if T never failed)

so the next task is the one most like what was solved and least like what failed, in what it is
about (the description) and in how hard its data looks (the tree, weighted by α). A task's own
RAG⁻ entries count in its RAG⁻ terms (at similarity 1), so a task that failed ranks behind the
tasks that have not failed and comes back once they are done; among the failed ones the recency
term (β, decaying with the rounds since the failure) holds back the most recent. A task's own
RAG⁺ entries are left out of its RAG⁺ terms.

Every function here is pure: vectors and counts in, a `Choice` out, with each candidate's score
and terms so the campaign can log why it chose.
"""

from __future__ import annotations

import hashlib
import math
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from agentk.llm import LLMClient, LLMError, system, user
from curriculum.task_memory import TaskText, TaskVectors

LLM_STAGE = "curriculum_first_task"


class Order(StrEnum):
    FIXED = "fixed"  # the order the tasks were given in
    RANDOM = "random"  # a seeded shuffle, the same on resume
    HEURISTIC = "heuristic"  # the simplest directory tree first
    CURRICULUM = "curriculum"  # equation 7 over the task memory


class CurriculumParams(BaseModel):
    """Equation 7's knobs. The paper names α, β and r without publishing values we could find;
    these defaults weigh the two similarities alike, make a failure of the last round cost about
    a third of a perfect match (β·e^(−1) ≈ 0.37) and average the 3 nearest memories."""

    model_config = ConfigDict(frozen=True)

    alpha: float = Field(1.0, ge=0, description="weight of the directory-tree (difficulty) similarity")
    beta: float = Field(1.0, ge=0, description="weight of the penalty on a task that failed recently")
    r: int = Field(3, ge=1, description="how many nearest memories each similarity term averages")


@dataclass(frozen=True)
class TaskCandidate:
    task_id: str
    complexity: float
    vectors: TaskVectors | None = None  # needed by the curriculum order only


class Remembered(Protocol):
    """A task-memory entry as selection reads it (curriculum.task_memory.MemoryEntry is one)."""

    @property
    def task_id(self) -> str: ...

    @property
    def round(self) -> int: ...

    @property
    def vectors(self) -> TaskVectors: ...


class Ranked(BaseModel):
    task_id: str
    position: int  # in the candidate list as given
    complexity: float
    score: float | None = None  # equation 7, when the candidate has vectors
    terms: dict[str, float] = {}
    rank: int  # 0 = chosen


class Choice(BaseModel):
    task_id: str
    order: Order
    score: float | None
    terms: dict[str, float]
    reason: str
    ranking: list[Ranked]


def _top_r_mean(similarities: np.ndarray, r: int) -> float:
    if similarities.size == 0:
        return 0.0
    top = np.sort(similarities)[::-1][:r]
    return float(top.mean())


def _cosines(vector: Sequence[float], matrix: np.ndarray) -> np.ndarray:
    if matrix.size == 0:
        return np.empty(0)
    v = np.asarray(vector, dtype=float)
    norms = np.linalg.norm(matrix, axis=1) * np.linalg.norm(v)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.clip(np.where(norms > 0, matrix @ v / norms, 0.0), -1.0, 1.0)


def equation7_terms(
    candidate: TaskCandidate, positives: Sequence[Remembered], negatives: Sequence[Remembered], params: CurriculumParams, round_number: int
) -> dict[str, float]:
    """Each term of equation 7 for one candidate (already weighted and signed), plus `score`."""
    if candidate.vectors is None:
        raise ValueError(f"task {candidate.task_id} has no vectors: the curriculum order needs the task memory's embeddings")
    mine = candidate.vectors
    pos = [e.vectors for e in positives if e.task_id != candidate.task_id]
    # A failed candidate's own RAG⁻ entries count (similarity 1): it waits behind the tasks that have
    # not failed, as the equation reads, and β·e^(−λ) orders the failed ones among themselves.
    # (Leaving them out, as first written, let a failed task come straight back in a bench: its tree
    # resembled a solved one more than the penalty cost, and it failed again before fresh tasks ran.)
    neg = [e.vectors for e in negatives]

    def term(entries: list[TaskVectors], part: str) -> float:
        matrix = np.asarray([getattr(v, part) for v in entries], dtype=float)
        return _top_r_mean(_cosines(getattr(mine, part), matrix), params.r)

    own_failures = [e.round for e in negatives if e.task_id == candidate.task_id]
    penalty = 0.0
    if own_failures:
        rounds_since = max(0, round_number - max(own_failures))
        penalty = params.beta * math.exp(-rounds_since)
    terms = {
        "positive_description": term(pos, "description"),
        "positive_tree": params.alpha * term(pos, "tree"),
        "negative_description": -term(neg, "description"),
        "negative_tree": -params.alpha * term(neg, "tree"),
        "recent_failure": -penalty,
    }
    terms["score"] = float(sum(terms.values()))
    return terms


def _seeded(seed: int, round_number: int) -> random.Random:
    # Derived, not drawn from a generator that lives across rounds: a resumed campaign at round k
    # makes the same draw as the run that was killed at round k.
    digest = hashlib.sha256(f"{seed}:{round_number}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def choose(
    order: Order | str,
    candidates: Sequence[TaskCandidate],
    positives: Sequence[Remembered],
    negatives: Sequence[Remembered],
    params: CurriculumParams | None = None,
    *,
    seed: int = 0,
    round_number: int = 0,
) -> Choice:
    """The next task under `order`. `candidates` are the tasks still to do, in the campaign's
    order; `round_number` is the number of the step being decided (0 for the first)."""
    order = Order(order)
    params = params or CurriculumParams()
    if not candidates:
        raise ValueError("no task left to choose from: the pool is empty")
    ids = [c.task_id for c in candidates]
    if len(set(ids)) != len(ids):
        raise ValueError("candidate task ids must be unique")
    terms = {
        c.task_id: equation7_terms(c, positives, negatives, params, round_number)
        for c in candidates
        if c.vectors is not None
    }
    if order is Order.CURRICULUM and len(terms) < len(candidates):
        missing = next(c.task_id for c in candidates if c.vectors is None)
        raise ValueError(f"task {missing} has no vectors: the curriculum order needs the task memory's embeddings")
    position = {c.task_id: i for i, c in enumerate(candidates)}

    if order is Order.FIXED:
        ranked = list(candidates)
        reason = "fixed order: the first task not done yet, in the order given"
    elif order is Order.RANDOM:
        ranked = list(candidates)
        _seeded(seed, round_number).shuffle(ranked)
        reason = f"random order: a shuffle seeded by seed {seed} and round {round_number}"
    elif order is Order.HEURISTIC:
        ranked = sorted(candidates, key=lambda c: (c.complexity, position[c.task_id]))
        reason = f"heuristic order: the simplest directory tree (complexity {ranked[0].complexity:g})"
    elif not positives:
        # Nothing solved to resemble yet: the simplest tree that has not just failed.
        ranked = sorted(candidates, key=lambda c: (-terms[c.task_id]["recent_failure"], c.complexity, position[c.task_id]))
        reason = (f"curriculum: nothing solved yet, so the simplest directory tree (complexity {ranked[0].complexity:g})"
                  + (" among the tasks that did not fail recently" if negatives else ""))
    else:
        # Scores are rounded before ties are broken, so float noise never decides between equals.
        ranked = sorted(candidates, key=lambda c: (-round_score(terms[c.task_id]["score"]), c.complexity, position[c.task_id]))
        best = ranked[0].task_id
        failed = [e.round for e in negatives if e.task_id == best]
        since = round_number - max(failed) if failed else None
        reason = _curriculum_reason(best, terms[best], len(positives), len(negatives), since)

    ranking = [
        Ranked(
            task_id=c.task_id,
            position=position[c.task_id],
            complexity=c.complexity,
            score=terms[c.task_id]["score"] if c.task_id in terms else None,
            terms={k: v for k, v in terms.get(c.task_id, {}).items() if k != "score"},
            rank=i,
        )
        for i, c in enumerate(ranked)
    ]
    first = ranking[0]
    return Choice(task_id=first.task_id, order=order, score=first.score, terms=first.terms, reason=reason, ranking=ranking)


def round_score(score: float) -> float:
    return round(score, 9)


def _curriculum_reason(task_id: str, terms: dict[str, float], n_pos: int, n_neg: int, since: int | None) -> str:
    # Rounded, then + 0.0: a negative zero (or -0.0001) prints as 0.000, not -0.000.
    like = round(terms["positive_description"] + terms["positive_tree"], 3) + 0.0
    unlike = round(terms["negative_description"] + terms["negative_tree"], 3) + 0.0
    text = f"curriculum: {task_id} scores {terms['score']:.3f}: {like:.3f} for resembling the {n_pos} solved task(s)"
    if n_neg:
        text += f", {unlike:.3f} for resembling the {n_neg} failed attempt(s)"
    if since is not None:
        text += f", {terms['recent_failure']:.3f} for its failure {since} round(s) ago"
    return text


# ---- the first task, by an LLM ----------------------------------------------------------------

PICK_SYSTEM = (
    "You plan the order in which an automated Kaggle agent works through competitions. It learns "
    "from each task it solves, so it should start with the task that is simplest to set up and solve."
)


def pick_first_with_llm(client: LLMClient, candidates: Sequence[TaskText]) -> str | None:
    """The LLM's pick of the first task from the tree descriptions, or None when the model cannot
    be asked or its reply names no single candidate (the caller then takes the simplest tree)."""
    if not candidates:
        return None
    listing = "\n\n".join(f"### {c.task_id}\n{c.tree}" for c in candidates)
    prompt = (
        f"Here are {len(candidates)} competitions, each with its data folder described.\n\n{listing}\n\n"
        "Which competition should the agent attempt first: the one whose data is simplest to set up? "
        "Reply with its id exactly as written after ###, and nothing else."
    )
    try:
        reply = client.query([system(PICK_SYSTEM), user(prompt)], stage=LLM_STAGE).text
    except LLMError:
        return None
    return parse_task_id(reply, [c.task_id for c in candidates])


def parse_task_id(reply: str, ids: Sequence[str]) -> str | None:
    """The one candidate id a reply names: the whole reply (quotes, backticks, `###` and a final
    full stop aside), else the only id that appears as a whole word. Ids that contain one another
    (titanic, spaceship-titanic) are told apart by the word boundaries."""
    bare = reply.strip().strip("`'\"*# \n").rstrip(".").strip()
    if bare in ids:
        return bare
    found = {i for i in ids if re.search(rf"(?<![\w./-]){re.escape(i)}(?![\w-]|\.\w)", reply)}
    return found.pop() if len(found) == 1 else None
