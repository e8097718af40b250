"""What MiniLM fine-tuning reads: per-row texts (`TextInputs`), their word pieces under the
bundled tokenizer, a max length from the texts' own token lengths rather than 256, and batches of
rows of similar length padded per batch (what keeps fine-tuning affordable on a CPU).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from curriculum.embedding import load_minilm
from solve_pipeline.base.dataset import FeatureSet

MAX_LENGTH_CAP = 256  # what all-MiniLM-L6-v2 was trained on
MIN_LENGTH = 16
LENGTH_QUANTILE = 95  # the longest 5% of texts are truncated: the cost grows with the longest row
PAIR_SEPARATOR = " | "
SORT_POOL = 50  # batches whose rows are sorted by length together: little padding, order still random
ENCODE_SLICE = 1024


@dataclass(frozen=True, eq=False)
class TextInputs:
    """Per-row texts: one column, or a pair (the second may join further columns) that the
    tokenizer encodes as two segments. Sliceable like a matrix so the CV code can split it."""

    first: np.ndarray  # (n,) object array of str
    second: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.second is not None and len(self.second) != len(self.first):
            raise ValueError("both text segments need one entry per row")

    def __getitem__(self, rows: Any) -> TextInputs:
        return TextInputs(self.first[rows], None if self.second is None else self.second[rows])

    def __len__(self) -> int:
        return len(self.first)

    @property
    def shape(self) -> tuple[int, int]:
        return len(self), 1


def _text_inputs(columns: dict[str, list[str]]) -> TextInputs:
    names = list(columns)
    first = np.asarray([str(t) for t in columns[names[0]]], dtype=object)
    if len(names) == 1:
        return TextInputs(first)
    rest = zip(*(columns[name] for name in names[1:]))
    return TextInputs(first, np.asarray([PAIR_SEPARATOR.join(map(str, row)) for row in rest], dtype=object))


def text_finetune_matrices(features: FeatureSet, seed: int = 0) -> tuple[TextInputs, TextInputs] | None:
    """Train and test TextInputs from the FeatureSet's raw text columns; None without text."""
    train, test = features.raw_text_columns_train, features.raw_text_columns_test
    if not train or not test:
        if features.raw_text_train is None or features.raw_text_test is None:
            return None
        train, test = {"text": features.raw_text_train}, {"text": features.raw_text_test}
    return _text_inputs(train), _text_inputs(test)


def pretrained_minilm() -> tuple[Any, nn.Module]:
    """(tokenizer, transformer) of the bundled MiniLM; every fit trains a copy of the transformer."""
    model = load_minilm("cpu")
    return model.tokenizer, model[0].auto_model


@dataclass(frozen=True)
class Encoded:
    """Token ids and segment ids of each row (with special tokens), not padded."""

    ids: list[np.ndarray]
    types: list[np.ndarray]

    @property
    def lengths(self) -> np.ndarray:
        return np.fromiter((len(row) for row in self.ids), dtype=np.int64, count=len(self.ids))


def encode(tokenizer: Any, X: TextInputs, max_length: int | None) -> Encoded:
    ids: list[np.ndarray] = []
    types: list[np.ndarray] = []
    # A slice at a time into small arrays: Python lists of 30k x 256 ids would take ~0.5 GB.
    for first in range(0, len(X), ENCODE_SLICE):
        part = X[np.arange(first, min(first + ENCODE_SLICE, len(X)))]
        second = None if part.second is None else list(part.second)
        encoded = tokenizer(list(part.first), second, truncation=max_length is not None,
                            max_length=max_length, return_attention_mask=False, verbose=False)
        ids += [np.asarray(row, dtype=np.int32) for row in encoded["input_ids"]]
        segments = encoded.get("token_type_ids")
        types += [np.asarray(row, dtype=np.int8) for row in segments] if segments else \
            [np.zeros(len(row), dtype=np.int8) for row in encoded["input_ids"]]
    return Encoded(ids, types)


def fitting_length(tokenizer: Any, X: TextInputs, cap: int) -> int:
    """A length most rows fit in whole: the cost of a batch grows with its longest row."""
    if len(X) == 0:
        return MIN_LENGTH
    lengths = encode(tokenizer, X, None).lengths
    return int(min(cap, max(MIN_LENGTH, math.ceil(np.percentile(lengths, LENGTH_QUANTILE)))))


def collate(encoded: Encoded, rows: np.ndarray, pad_id: int, on: torch.device | None = None) -> tuple[torch.Tensor, ...]:
    width = max(len(encoded.ids[i]) for i in rows)
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    types = torch.zeros((len(rows), width), dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for k, i in enumerate(rows):
        n = len(encoded.ids[i])
        ids[k, :n] = torch.from_numpy(encoded.ids[i])
        types[k, :n] = torch.from_numpy(encoded.types[i])
        mask[k, :n] = 1
    if on is not None and on.type != "cpu":
        return ids.to(on, non_blocking=True), mask.to(on, non_blocking=True), types.to(on, non_blocking=True)
    return ids, mask, types


def length_batches(lengths: np.ndarray, batch: int, rng: np.random.RandomState) -> list[np.ndarray]:
    """Shuffled rows, sorted by length within pools of SORT_POOL batches, cut into batches whose
    order is shuffled again: padding stays small and epochs still differ."""
    order = rng.permutation(len(lengths))
    batches: list[np.ndarray] = []
    pool = batch * SORT_POOL
    for start in range(0, len(order), pool):
        rows = order[start:start + pool]
        rows = rows[np.argsort(lengths[rows], kind="stable")]
        batches += [rows[k:k + batch] for k in range(0, len(rows), batch)]
    return [batches[k] for k in rng.permutation(len(batches))]


def sorted_batches(lengths: np.ndarray, batch: int) -> list[np.ndarray]:
    order = np.argsort(lengths, kind="stable")
    return [order[k:k + batch] for k in range(0, len(order), batch)]
