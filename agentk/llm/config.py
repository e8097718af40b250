"""LLM settings: one typed model, filled from explicit values or the environment.

pydantic-settings reads the environment: every field from `AGENTK_LLM_<FIELD>` (empty values count
as unset), the API key also from `OPENAI_API_KEY`; explicit values win over both. The API key is a
SecretStr so that `repr`, `model_dump_json` and logs show `**********`; only the HTTP backend reads
the real value, to build the Authorization header.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from contextvars import ContextVar
from typing import Any, Literal

from pydantic import AliasChoices, Field, SecretStr, ValidationError, field_validator
from pydantic_settings import BaseSettings, EnvSettingsSource, PydanticBaseSettingsSource, SettingsConfigDict

from agentk.llm.errors import LLMConfigError

ENV_PREFIX = "AGENTK_LLM_"
ENV_BASE_URL = f"{ENV_PREFIX}BASE_URL"
ENV_MODEL = f"{ENV_PREFIX}MODEL"
ENV_API_KEY = f"{ENV_PREFIX}API_KEY"
ENV_PROVIDER = f"{ENV_PREFIX}PROVIDER"
ENV_TOKEN_BUDGET = f"{ENV_PREFIX}TOKEN_BUDGET"
FALLBACK_API_KEY = "OPENAI_API_KEY"  # what hosted APIs and most tooling already set

# The environment `from_env` was handed in place of os.environ (tests pass their own mapping).
_GIVEN_ENV: ContextVar[Mapping[str, str] | None] = ContextVar("agentk_llm_env", default=None)


class _EnvSource(EnvSettingsSource):
    """os.environ, or the mapping handed to `LLMConfig.from_env`."""

    def _load_env_vars(self) -> Mapping[str, str | None]:
        given = _GIVEN_ENV.get()
        if given is None:
            return super()._load_env_vars()
        return {(k if self.case_sensitive else k.lower()): v for k, v in given.items()
                if v or not self.env_ignore_empty}


class LLMConfig(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX, env_ignore_empty=True, frozen=True, extra="ignore", validate_by_name=True,
    )

    provider: Literal["openai", "vllm"] = "openai"  # "openai" = any OpenAI-compatible HTTP server
    base_url: str = Field("http://127.0.0.1:8000/v1", description="up to and including /v1")
    model: str = ""
    # The first alias found wins: our own variable before the one other tools set.
    api_key: SecretStr | None = Field(None, validation_alias=AliasChoices(ENV_API_KEY, FALLBACK_API_KEY))
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

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # Explicit values, then the environment; no .env or secrets files.
        return init_settings, _EnvSource(settings_cls)

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
        """Explicit overrides (None means unset) win over the environment, which wins over defaults;
        bad values become one LLMConfigError."""
        token = _GIVEN_ENV.set(env)
        try:
            return cls(**{k: v for k, v in overrides.items() if v is not None})
        except ValidationError as exc:
            raise LLMConfigError(_problems(exc)) from None
        finally:
            _GIVEN_ENV.reset(token)


def llm_configured(base_url: str | None = None, model: str | None = None) -> bool:
    """An LLM was asked for: by a flag, or by the AGENTK_LLM_* environment."""
    return any([base_url, model, os.environ.get(ENV_BASE_URL), os.environ.get(ENV_MODEL)])


def _problems(exc: ValidationError) -> str:
    for error in exc.errors():
        if error["loc"] == ("token_budget",) and error["type"] == "int_parsing":
            return f"{ENV_TOKEN_BUDGET} must be an integer, got {error['input']!r}"
    problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
    return f"invalid LLM settings: {problems}"
