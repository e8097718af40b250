"""A content-addressed cache of completions in the workspace, so a resumed or repeated run replays
replies instead of paying for them again, and a run can be reproduced exactly.

Key = sha256 over the model, the messages and the sampling params (plus a caller's `variant`, so a
retry that deliberately wants a fresh sample with an identical prompt can ask for one). Never the
API key or base URL: the same model behind another server gives a reusable answer. Entries are
redacted (agentk/core/secrets.py) before they are written: a secret in a prompt or a reply stays out.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from agentk.llm.types import Completion, Message
from agentk.core.secrets import redact_obj
from agentk.core.records.workspace import atomic_write_text


def cache_key(model: str, messages: Sequence[Message], params: dict[str, Any], variant: int = 0) -> str:
    blob = json.dumps(
        {"model": model, "messages": [m.to_dict() for m in messages], "params": params, "variant": variant},
        sort_keys=True,
        ensure_ascii=False,
        separators=(",", ":"),
    )
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class ResponseCache:
    """One JSON file per key, under `<dir>/<first two hex>/<key>.json`, written atomically."""

    def __init__(self, directory: Path) -> None:
        self.dir = Path(directory)
        self.hits = 0
        self.misses = 0

    def path(self, key: str) -> Path:
        return self.dir / key[:2] / f"{key}.json"

    def get(self, key: str) -> Completion | None:
        path = self.path(key)
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
            if record.get("exact") is False:
                raise ValueError("the stored reply is not the one the model wrote")
            completion = Completion.model_validate(record["completion"])
        except FileNotFoundError:
            self.misses += 1
            return None
        except (ValueError, KeyError, TypeError):
            # a damaged entry is a miss, not a crash: the call is simply paid again and rewritten
            self.misses += 1
            return None
        self.hits += 1
        # tokens on a Completion are what this call paid, so a replay carries zero
        return completion.model_copy(update={"cached": True, "latency_s": 0.0, "prompt_tokens": 0, "completion_tokens": 0})

    def put(self, key: str, completion: Completion, *, messages: Sequence[Message], params: dict[str, Any]) -> None:
        # the prompt is stored beside the reply so a run can be audited and reproduced from the cache alone
        record = {
            "key": key,
            "model": completion.model,
            "params": params,
            "messages": [m.to_dict() for m in messages],
            "completion": completion.model_copy(update={"cached": False}).model_dump(),
        }
        stored = redact_obj(record)
        # A reply whose stored copy redaction changed is kept for the audit but never replayed: a
        # replay must give the code exactly as the model wrote it.
        stored["exact"] = stored["completion"]["text"] == completion.text
        atomic_write_text(self.path(key), json.dumps(stored, indent=1, ensure_ascii=False) + "\n")


class CachedBackend:
    """Wraps a backend: hits replay with `cached=True` and zero tokens; misses call `inner` and store.

    `before_miss(stage)` runs only when the inner backend is about to be paid (the client uses it
    for the token budget, so an exhausted run can still replay everything it already has).
    """

    def __init__(
        self,
        inner: Any,
        cache: ResponseCache,
        *,
        model: str,
        params: dict[str, Any],
        before_miss: Callable[[str], None] | None = None,
    ) -> None:
        self.inner = inner
        self.cache = cache
        self.model = model
        self.params = params
        self.before_miss = before_miss
        self.name = f"cached({getattr(inner, 'name', type(inner).__name__)})"

    @property
    def hits(self) -> int:
        return self.cache.hits

    @property
    def misses(self) -> int:
        return self.cache.misses

    def complete(self, messages: Sequence[Message], *, stage: str = "", variant: int = 0) -> Completion:
        key = cache_key(self.model, messages, self.params, variant)
        hit = self.cache.get(key)
        if hit is not None:
            return hit
        if self.before_miss is not None:
            self.before_miss(stage)
        completion = self.inner.complete(messages, stage=stage)
        self.cache.put(key, completion, messages=messages, params=self.params)
        return completion
