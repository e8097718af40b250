"""The training pairs memorised: each token's most frequent rewriting, and the rewriting after a
given previous token where that context decides it ("in 1921" is a year, "1921 people" a count).

Counted in numpy over codes, not in Python dictionaries of counters: ten million pairs take
seconds and a few hundred megabytes, where counters took minutes and gigabytes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import pandas as pd

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

    def recall_all(self, previous: Sequence[str], tokens: Sequence[str], use_context: bool) -> np.ndarray:
        """`recall` of every row at once: an object array, None where nothing is memorised."""
        said = pd.Series(np.asarray(tokens, dtype=object)).map(self.plain).to_numpy(dtype=object)
        said[pd.isna(said)] = None
        if use_context and self.context:
            # Only tokens some context decides are looked up row by row: a few in a thousand.
            decided = {token for _, token in self.context}
            for i in np.flatnonzero(pd.Series(np.asarray(tokens, dtype=object)).isin(decided).to_numpy()):
                in_context = self.context.get((previous[i], tokens[i]))
                if in_context is not None:
                    said[i] = in_context
        return said


def _most_common(keys: np.ndarray, answers: np.ndarray, minimum: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Per key code, the answer code seen most often with it (ties: the one seen first, as
    Counter.most_common), for the keys seen at least `minimum` times: (keys, answers)."""
    if not len(keys):
        return keys, answers
    width = int(answers.max()) + 1
    pairs, first, counts = np.unique(keys.astype(np.int64) * width + answers, return_index=True, return_counts=True)
    key = pairs // width
    order = np.lexsort((first, -counts, key))
    key_sorted = key[order]
    starts = np.flatnonzero(np.r_[True, key_sorted[1:] != key_sorted[:-1]])
    totals = np.add.reduceat(counts[order], starts)
    chosen = order[starts][totals >= minimum]
    return key[chosen], pairs[chosen] % width


def _codes(values: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Each value's code (in order of first appearance) and the values coded."""
    series = values if isinstance(values, pd.Series) else pd.Series(list(values), dtype=object)
    codes, names = pd.factorize(series)
    return codes.astype(np.int64), np.asarray(names, dtype=object)


def memorise(previous: Sequence[str], tokens: Sequence[str], answers: Sequence[str]) -> Memory:
    token_codes, token_names = _codes(tokens)
    answer_codes, answer_names = _codes(answers)
    keys, best = _most_common(token_codes, answer_codes)
    plain_best = np.full(len(token_names), -1, dtype=np.int64)
    plain_best[keys] = best
    plain = dict(zip(token_names[keys].tolist(), answer_names[best].tolist()))
    # Context pairs: (previous, token) coded as one number, then counted like the tokens.
    previous_codes, previous_names = _codes(previous)
    pair_codes, pair_firsts = pd.factorize(previous_codes * max(len(token_names), 1) + token_codes)
    pair_keys, pair_best = _most_common(pair_codes, answer_codes, _CONTEXT_MIN)
    pair_token = pair_firsts[pair_keys] % max(len(token_names), 1)
    # Only the contexts that say something else than the token's own most frequent rewriting.
    differs = pair_best != plain_best[pair_token]
    before_names = previous_names[pair_firsts[pair_keys[differs]] // max(len(token_names), 1)]
    context = dict(zip(zip(before_names.tolist(), token_names[pair_token[differs]].tolist()),
                       answer_names[pair_best[differs]].tolist()))
    return Memory(plain, context)
