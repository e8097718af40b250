"""LLM settings: one typed model, filled from explicit values or the environment.

The API key is a SecretStr so that `repr`, `model_dump_json` and logs show `**********`; only the
HTTP backend reads the real value, to build the Authorization header.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, Field, SecretStr, ValidationError, field_validator

from agentk.llm.errors import LLMConfigError

ENV_BASE_URL = "AGENTK_LLM_BASE_URL"
ENV_MODEL = "AGENTK_LLM_MODEL"
ENV_API_KEY = "AGENTK_LLM_API_KEY"
ENV_PROVIDER = "AGENTK_LLM_PROVIDER"
ENV_TOKEN_BUDGET = "AGENTK_LLM_TOKEN_BUDGET"
FALLBACK_API_KEY = "OPENAI_API_KEY"  # what hosted APIs and most tooling already set


class LLMConfig(BaseModel):
    provider: Literal["openai", "vllm"] = "openai"  # "openai" = any OpenAI-compatible HTTP server
    base_url: str = Field("http://127.0.0.1:8000/v1", description="up to and including /v1")
    model: str = ""
    api_key: SecretStr | None = None
    timeout_s: float = Field(120.0, gt=0, description="read timeout of one request")
    connect_timeout_s: float = Field(5.0, gt=0)
    max_retries: int = Field(4, ge=0, description="extra attempts on 429/5xx/timeouts/refused connections")
    backoff_base_s: float = Field(1.0, ge=0)
    backoff_max_s: float = Field(30.0, ge=0)
    retry_after_max_s: float = Field(60.0, ge=0, description="cap on a server's Retry-After")
    token_budget: int | None = Field(None, gt=0, description="prompt+completion tokens per run")
    temperature: float = Field(0.0, ge=0)
    max_tokens: int = Field(4096, gt=0)
    seed: int | None = None
    cache: bool = True

    model_config = {"frozen": True}

    @field_validator("base_url")
    @classmethod
    def _strip_slash(cls, value: str) -> str:
        # so f"{base_url}/chat/completions" never has a double slash
        return value.rstrip("/")

    def require_model(self) -> None:
        if not self.model:
            raise LLMConfigError(f"no LLM model configured: set {ENV_MODEL} or pass --llm-model")
        if self.provider == "openai" and not self.base_url.startswith(("http://", "https://")):
            raise LLMConfigError(f"LLM base URL must start with http:// or https://, got {self.base_url!r}")

    def sampling_params(self) -> dict[str, Any]:
        """What changes the reply besides the messages; part of every cache key."""
        params: dict[str, Any] = {"temperature": self.temperature, "max_tokens": self.max_tokens}
        if self.seed is not None:
            params["seed"] = self.seed
        return params

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: Any) -> LLMConfig:
        """Explicit overrides win over the environment, which wins over defaults."""
        env = os.environ if env is None else env
        values: dict[str, Any] = {}
        if env.get(ENV_PROVIDER):
            values["provider"] = env[ENV_PROVIDER]
        if env.get(ENV_BASE_URL):
            values["base_url"] = env[ENV_BASE_URL]
        if env.get(ENV_MODEL):
            values["model"] = env[ENV_MODEL]
        key = env.get(ENV_API_KEY) or env.get(FALLBACK_API_KEY)
        if key:
            values["api_key"] = key
        if env.get(ENV_TOKEN_BUDGET):
            try:
                values["token_budget"] = int(env[ENV_TOKEN_BUDGET])
            except ValueError as exc:
                raise LLMConfigError(f"{ENV_TOKEN_BUDGET} must be an integer, got {env[ENV_TOKEN_BUDGET]!r}") from exc
        values.update({k: v for k, v in overrides.items() if v is not None})
        try:
            return cls(**values)
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
            raise LLMConfigError(f"invalid LLM settings: {problems}") from None
