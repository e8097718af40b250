"""The training pairs memorised: each token's most frequent rewriting, and the rewriting after a
given previous token where that context decides it ("in 1921" is a year, "1921 people" a count)."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field

_CONTEXT_MIN = 2  # times a (previous, token) pair is seen before its own rewriting is trusted


@dataclass
class Memory:
    plain: dict[str, str] = field(default_factory=dict)
    context: dict[tuple[str, str], str] = field(default_factory=dict)

    def recall(self, previous: str, token: str, use_context: bool) -> str | None:
        if use_context:
            said = self.context.get((previous, token))
            if said is not None:
                return said
        return self.plain.get(token)


def _most_common(counts: dict, minimum: int = 1) -> dict:
    return {key: c.most_common(1)[0][0] for key, c in counts.items() if sum(c.values()) >= minimum}


def memorise(previous: list[str], tokens: list[str], answers: list[str]) -> Memory:
    plain: dict[str, Counter[str]] = defaultdict(Counter)
    context: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    for before, token, after in zip(previous, tokens, answers):
        plain[token][after] += 1
        context[(before, token)][after] += 1
    best = _most_common(plain)
    # Only the contexts that say something else than the token's own most frequent rewriting.
    in_context = {k: v for k, v in _most_common(context, _CONTEXT_MIN).items() if v != best[k[1]]}
    return Memory(best, in_context)
