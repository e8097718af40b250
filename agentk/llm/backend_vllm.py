"""In-process vLLM engine behind the same `complete()` interface (optional extra `agentk[vllm]`).

vllm is imported only when this backend is built, so nothing else in agentk (nor its tests) needs
it; a missing install is one clear BackendNotInstalled line, not an ImportError traceback.
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Sequence
from typing import Any

from agentk.llm.config import LLMConfig
from agentk.llm.errors import BackendNotInstalled, ContextTooLong, LLMServerError
from agentk.llm.types import Completion, Message

INSTALL_HINT = "pip install 'agentk[vllm]'"


def import_vllm() -> Any:
    try:
        return importlib.import_module("vllm")
    except ImportError as exc:  # ModuleNotFoundError, or a broken CUDA/torch install underneath
        raise BackendNotInstalled(
            f"LLM provider 'vllm' needs the vllm package ({exc.__class__.__name__}: {exc}); "
            f"run {INSTALL_HINT}, or use provider 'openai' with a running `vllm serve`"
        ) from None


class VLLMBackend:
    name = "vllm"

    def __init__(self, config: LLMConfig, **engine_kwargs: Any) -> None:
        config.require_model()
        self.config = config
        self._vllm = import_vllm()
        # loading weights takes minutes and GPU memory, so it happens once, here
        if config.seed is not None:
            engine_kwargs.setdefault("seed", config.seed)  # otherwise vLLM's own default applies
        self.engine = self._vllm.LLM(model=config.model, **engine_kwargs)

    def complete(self, messages: Sequence[Message], *, stage: str = "") -> Completion:
        cfg = self.config
        params = self._vllm.SamplingParams(temperature=cfg.temperature, max_tokens=cfg.max_tokens, seed=cfg.seed)
        started = time.monotonic()
        try:
            outputs = self.engine.chat([m.to_dict() for m in messages], params, use_tqdm=False)
        except ValueError as exc:
            # vLLM raises ValueError for prompts longer than max_model_len
            if "longer than" in str(exc) or "context" in str(exc).lower():
                raise ContextTooLong(f"prompt too long for model {cfg.model}: {exc}") from None
            raise LLMServerError(f"vllm engine failed for model {cfg.model}: {exc}") from None
        latency = time.monotonic() - started
        out = outputs[0]
        sample = out.outputs[0]
        return Completion(
            text=sample.text,
            prompt_tokens=len(out.prompt_token_ids or []),
            completion_tokens=len(sample.token_ids or []),
            latency_s=round(latency, 4),
            model=cfg.model,
            finish_reason=sample.finish_reason,
        )
