"""Frozen MiniLM sentence embeddings of raw text, with long texts read whole.

all-MiniLM-L6-v2 reads at most 256 word pieces; a longer text (an essay, an article) is cut into
windows of whole words that overlap a little, each window is embedded and the vectors are averaged,
so the end of a text counts as much as its start. Several text columns (question/answer, two
sentences) are embedded one by one and joined with their pairwise interactions.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from curriculum.embedding import MINILM_DIM, load_minilm
from solve_pipeline.networks import device
from solve_pipeline.networks.torch_training import torch_threads
from solve_pipeline.base.vector_cache import VectorCache, text_key

# Word pieces per encode call (256 tweets, 32 full windows); the time cap is checked after each.
EMBED_CHUNK_PIECES = 8192
FIRST_CHUNK_SLACK = 2.0
WINDOW_OVERLAP = 32  # word pieces shared by consecutive windows, so no sentence is cut without context
TOKENIZE_SLICE = 1024
# int8 vectors (the CPU's) differ slightly from float ones (a GPU's): a cache of either must not
# pass for the other.
CACHE_LABELS = {"cpu": "all-MiniLM-L6-v2-int8", "cuda": "all-MiniLM-L6-v2"}
ENCODE_BATCH = 32
MAX_PAIR_COLUMNS = 3  # pairwise interactions among the first columns only: k columns give k(k-1)/2 pairs


def _sentence_encoder(on: str = "cpu") -> Any:
    """MiniLM on `on` (cpu or cuda): int8 on the CPU (faster, the same meaning), float on a GPU."""
    return load_minilm(on, int8=on == "cpu")


@dataclass(frozen=True)
class _Window:
    text: int  # index of the (unique) text the window belongs to
    content: str
    pieces: int  # word pieces, without the two special tokens


def _word_starts(text: str, offsets: Sequence[tuple[int, int]]) -> list[bool]:
    """Whether each word piece begins a whitespace-separated word (a place a window may start)."""
    return [start == 0 or text[start - 1].isspace() for start, _ in offsets]


def _windows_of(index: int, text: str, offsets: Sequence[tuple[int, int]], budget: int) -> list[_Window]:
    """Windows of at most `budget` pieces, cut between words, consecutive ones overlapping."""
    n = len(offsets)
    if n <= budget:
        return [_Window(index, text, n)]
    starts = _word_starts(text, offsets)
    windows: list[_Window] = []
    first = 0
    while True:
        end = min(first + budget, n)
        if end < n:
            # Back off to a word boundary; a single word longer than the budget is cut anyway.
            cut = next((j for j in range(end, first, -1) if starts[j]), end)
            end = cut
        windows.append(_Window(index, text[offsets[first][0]:offsets[end - 1][1]], end - first))
        if end >= n:
            return windows
        following = next((j for j in range(max(end - WINDOW_OVERLAP, first + 1), end) if starts[j]), end)
        first = following


def _split_windows(texts: Sequence[str], tokenizer: Any, max_pieces: int) -> list[_Window]:
    windows: list[_Window] = []
    # Tokenized a slice at a time: the offsets of 30k essays at once would take gigabytes.
    for first in range(0, len(texts), TOKENIZE_SLICE):
        part = list(texts[first:first + TOKENIZE_SLICE])
        encoded = tokenizer(part, add_special_tokens=False, return_offsets_mapping=True,
                            return_attention_mask=False, return_token_type_ids=False, verbose=False)
        for index, (text, offsets) in enumerate(zip(part, encoded["offset_mapping"]), start=first):
            windows.extend(_windows_of(index, text, offsets, max_pieces))
    return windows


def embed_texts(texts: Sequence[str], *, max_seconds: float, threads: int = 2,
                cache_dir: Path | None = None) -> np.ndarray | None:
    """MiniLM sentence embeddings (n, 384) float32, unit length, or None when the encoder cannot
    load or the texts would take longer than `max_seconds` (projected from the word pieces
    already encoded, so long texts count by their windows).

    With `cache_dir`, texts embedded before (by this run or an earlier one over the same
    workspace) cost nothing, and what was finished before a projection gave up is kept."""
    if len(texts) == 0:
        return np.zeros((0, MINILM_DIM), dtype=np.float32)
    return device.with_fallback("text embedding", lambda on, factor: _embed_on(
        texts, on, factor, max_seconds=max_seconds, threads=threads, cache_dir=cache_dir))


def _embed_on(texts: Sequence[str], on: Any, batch_factor: float, *, max_seconds: float, threads: int,
              cache_dir: Path | None) -> np.ndarray | None:
    try:
        encoder = _sentence_encoder(on.type)
    except Exception:  # noqa: BLE001 - missing package or broken files: TF-IDF still works
        return None
    started = time.monotonic()
    # Repeated texts (shared questions, boilerplate) are embedded once.
    unique, inverse = np.unique(np.asarray([str(t) for t in texts], dtype=object), return_inverse=True)
    cache = VectorCache(cache_dir, CACHE_LABELS[on.type])
    batch = max(1, int(ENCODE_BATCH * device.batch_scale(on) * batch_factor))
    chunk_pieces = EMBED_CHUNK_PIECES * max(1, batch // ENCODE_BATCH)
    keys = [text_key(t) for t in unique]
    todo = [i for i, key in enumerate(keys) if key not in cache.vectors]
    windows = _split_windows([unique[i] for i in todo], encoder.tokenizer, encoder.max_seq_length - 2)
    total_cost = sum(w.pieces + 2 for w in windows)
    # Tokenizing is paid once, not per piece: the projection scales only the encoding's pace.
    encoding_started = time.monotonic()
    spent_before = encoding_started - started
    # The solver limits BLAS/OpenMP pools to one thread; the encoder is worth the machine's cores.
    with torch_threads(threads):
        vectors: list[np.ndarray] = []
        done_cost = done_windows = 0
        for number, chunk in enumerate(_chunks(windows, chunk_pieces)):
            if not chunk:
                continue
            vectors.append(encoder.encode([w.content for w in chunk], batch_size=batch,
                                          normalize_embeddings=True, convert_to_numpy=True,
                                          show_progress_bar=False))
            done_cost += sum(w.pieces + 2 for w in chunk)
            done_windows += len(chunk)
            pace = (time.monotonic() - encoding_started) / done_cost
            projected = spent_before + pace * total_cost
            # The first chunk also pays the warm-up (first kernels, allocations): measured ~1.5x
            # the steady pace, so alone it stops only a hopeless projection.
            allowed = max_seconds * (FIRST_CHUNK_SLACK if number == 0 else 1.0)
            if done_cost < total_cost and projected > allowed:
                _remember(cache, [keys[i] for i in todo], windows, done_windows, vectors)
                return None
    _remember(cache, [keys[i] for i in todo], windows, done_windows, vectors)
    return np.stack([cache.vectors[key] for key in keys])[inverse]


def _remember(cache: VectorCache, keys: list[str], windows: list[_Window], done: int,
              vectors: list[np.ndarray]) -> None:
    """Pool and keep the texts whose windows are all encoded (windows come in text order)."""
    if not done:
        return
    last = windows[done - 1].text
    complete = last + 1 if done == len(windows) or windows[done].text != last else last
    pooled = _pooled(np.vstack(vectors)[:done], windows[:done], last + 1)
    for local in range(complete):
        cache.vectors[keys[local]] = pooled[local]
    cache.save()


def _chunks(windows: list[_Window], max_pieces: int) -> list[list[_Window]]:
    chunks: list[list[_Window]] = [[]]
    size = 0
    for window in windows:
        if chunks[-1] and size + window.pieces + 2 > max_pieces:
            chunks.append([])
            size = 0
        chunks[-1].append(window)
        size += window.pieces + 2
    return chunks


def _pooled(vectors: np.ndarray, windows: list[_Window], n_texts: int) -> np.ndarray:
    """Per-text mean of its windows' vectors, weighted by window length (a short tail window says
    less than a full one), re-normalised to unit length."""
    owners = np.array([w.text for w in windows])
    weights = np.array([w.pieces + 2 for w in windows], dtype=np.float64)
    sums = np.zeros((n_texts, vectors.shape[1]))
    np.add.at(sums, owners, vectors * weights[:, None])
    norms = np.linalg.norm(sums, axis=1, keepdims=True)
    return (sums / np.where(norms > 0, norms, 1.0)).astype(np.float32)


@dataclass(frozen=True, eq=False)
class TextEmbeddings:
    """Dense text features of train and test rows; `names` labels the matrix columns."""

    train: np.ndarray
    test: np.ndarray
    names: list[str]
    source: str = "minilm"


def embed_text_columns(train: dict[str, list[str]], test: dict[str, list[str]], *,
                       max_seconds: float, threads: int = 2,
                       cache_dir: Path | None = None) -> TextEmbeddings | None:
    """Each text column's embedding, and for pairs among the first columns |e1 - e2|, e1 * e2 and
    their cosine (how a question relates to its answer often matters more than either alone).
    One time budget covers every column; None when it does not suffice or MiniLM cannot load."""
    columns = list(train)
    if not columns:
        return None
    n_train, n_test = len(train[columns[0]]), len(test[columns[0]])
    texts: list[str] = []
    for name in columns:
        texts += list(train[name]) + list(test[name])
    vectors = embed_texts(texts, max_seconds=max_seconds, threads=threads, cache_dir=cache_dir)
    if vectors is None:
        return None
    per_row = n_train + n_test
    embedded = {name: vectors[k * per_row:(k + 1) * per_row] for k, name in enumerate(columns)}
    blocks = [embedded[name] for name in columns]
    names = [f"{name}__minilm_{i}" for name in columns for i in range(MINILM_DIM)]
    paired = columns[:MAX_PAIR_COLUMNS]
    for a_index, a in enumerate(paired):
        for b in paired[a_index + 1:]:
            e1, e2 = embedded[a], embedded[b]
            blocks += [np.abs(e1 - e2), e1 * e2, (e1 * e2).sum(axis=1, keepdims=True)]
            names += [f"{a}__{b}__absdiff_{i}" for i in range(MINILM_DIM)]
            names += [f"{a}__{b}__product_{i}" for i in range(MINILM_DIM)]
            names.append(f"{a}__{b}__cosine")  # the vectors are unit length: the dot product is it
    matrix = np.hstack(blocks).astype(np.float32)
    return TextEmbeddings(train=matrix[:n_train], test=matrix[n_train:], names=names)
