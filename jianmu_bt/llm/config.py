"""Building a provider from a YAML-ish config, as a tree file's `llm:` section gives it.

```yaml
llm: {provider: openai, model: qwen2.5:7b, base_url: "http://localhost:11434/v1"}
llm: {provider: anthropic, model: claude-sonnet-4-5, api_key_env: ANTHROPIC_API_KEY}
llm: {provider: scripted, replies: ["The answer is 391."]}
```

Keys: `provider` (openai | openai_compatible | openai_responses | anthropic | gemini | bedrock |
scripted), `model`, `base_url`, `region` and `profile` (bedrock), `api_key_env` (the name of the
variable holding the key; a key itself does not belong in a tree file), `timeout`, `temperature`,
`max_tokens`, `tool_choice`, `parallel_tool_calls`, `extra`, `headers`, `retry` (RetryPolicy
fields), `retry_statuses` (the HTTP statuses worth a retry; also accepted inside `retry:`, where
older files name it), `prices` (`{input, output}`: US dollars per million tokens, winning over the
price table), `fallback` (more `llm` configs, tried in order when this one fails, see
`FallbackProvider`) with `fallback_on` (which failures move on) and, for scripted, `replies`.
Unknown keys are errors.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from jianmu_bt.llm.base import LLMOptions, LLMProvider
from jianmu_bt.llm.costs import Prices
from jianmu_bt.llm.errors import LLMConfigurationError
from jianmu_bt.llm.fallback import FallbackOn
from jianmu_bt.tools.retry import RetryPolicy

PROVIDER_NAMES = (
    "openai", "openai_compatible", "openai_responses", "anthropic", "gemini", "bedrock", "scripted",
)  # fmt: skip
# Each HTTP provider's module and class, imported only when a config names it.
HTTP_PROVIDERS = {
    "openai": ("jianmu_bt.llm.openai_compat", "OpenAICompatibleProvider"),
    "openai_compatible": ("jianmu_bt.llm.openai_compat", "OpenAICompatibleProvider"),
    "openai_responses": ("jianmu_bt.llm.openai_responses", "OpenAIResponsesProvider"),
    "anthropic": ("jianmu_bt.llm.anthropic", "AnthropicProvider"),
    "gemini": ("jianmu_bt.llm.gemini", "GeminiProvider"),
    "bedrock": ("jianmu_bt.llm.bedrock", "BedrockProvider"),
}
BEDROCK_KEYS = ("region", "profile")
# The config keys that are per-call defaults (`LLMOptions`) rather than provider settings.
OPTION_KEYS = frozenset(
    {"temperature", "max_tokens", "tool_choice", "parallel_tool_calls", "extra"}
)


class LLMConfig(BaseModel):
    """The validated form of an `llm:` config (see the module docstring for the keys)."""

    model_config = ConfigDict(extra="forbid")

    provider: Literal[
        "openai", "openai_compatible", "openai_responses", "anthropic", "gemini", "bedrock",
        "scripted",
    ]  # fmt: skip
    model: str | None = None
    base_url: str | None = None
    api_key_env: str | None = None
    timeout: float | None = Field(default=None, gt=0)
    temperature: float | None = Field(default=None, ge=0)
    max_tokens: int | None = Field(default=None, gt=0)
    tool_choice: str | None = None
    parallel_tool_calls: bool | None = None
    extra: dict[str, Any] = Field(default_factory=dict)
    headers: dict[str, str] = Field(default_factory=dict)
    retry: RetryPolicy | None = None
    retry_statuses: frozenset[int] | None = None
    replies: list[str | dict[str, Any]] | None = None
    prices: Prices | None = None
    fallback: list[LLMConfig] | None = None
    fallback_on: list[FallbackOn] | None = None
    region: str | None = None
    profile: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _lift_retry_statuses(cls, data: Any) -> Any:
        """`retry: {retry_statuses: [...]}` (the older place of the key) still works."""
        retry = data.get("retry") if isinstance(data, Mapping) else None
        if isinstance(retry, Mapping) and "retry_statuses" in retry:
            if data.get("retry_statuses") is not None:
                raise ValueError("retry_statuses is given both in retry: and beside it")
            retry = dict(retry)
            data = {**data, "retry": retry, "retry_statuses": retry.pop("retry_statuses")}
        return data

    def options(self) -> LLMOptions:
        """The per-call defaults this config names."""
        return LLMOptions(**self.model_dump(include=set(OPTION_KEYS)))


def _describe(error: ValidationError) -> str:
    parts = []
    for item in error.errors():
        where = ".".join(str(p) for p in item["loc"]) or "llm"
        parts.append(f"llm.{where}: {item['msg']}")
    return "; ".join(parts)


def provider_from_config(config: Mapping[str, Any] | LLMConfig) -> LLMProvider:
    """A provider built from `config`; LLMConfigurationError naming the bad key otherwise."""
    config = _validated(config)
    if config.fallback is None:
        if config.fallback_on is not None:
            raise LLMConfigurationError("llm.fallback_on: there is no llm.fallback list")
        return _single(config)
    from jianmu_bt.llm.fallback import DEFAULT_FALLBACK_ON, FallbackProvider

    providers = [_single(config)]
    for i, more in enumerate(config.fallback):
        if more.fallback is not None:
            raise LLMConfigurationError(f"llm.fallback[{i}]: a fallback has no fallback of its own")
        try:
            providers.append(_single(more))
        except LLMConfigurationError as exc:
            raise LLMConfigurationError(f"llm.fallback[{i}]: {exc}") from None
    return FallbackProvider(providers, fallback_on=config.fallback_on or DEFAULT_FALLBACK_ON)


def _validated(config: Mapping[str, Any] | LLMConfig) -> LLMConfig:
    if not isinstance(config, LLMConfig):
        if not isinstance(config, Mapping):
            raise LLMConfigurationError(
                f"llm config must be a mapping, got {type(config).__name__}"
            )
        try:
            config = LLMConfig.model_validate(dict(config))
        except ValidationError as exc:
            raise LLMConfigurationError(f"invalid llm config: {_describe(exc)}") from None
    return config


def _single(config: LLMConfig) -> LLMProvider:
    if config.provider == "scripted":
        if config.replies is None:
            raise LLMConfigurationError("llm.replies: a scripted provider needs a list of replies")
        unused = [
            key
            for key in ("base_url", "api_key_env", "retry", "retry_statuses")
            if getattr(config, key) is not None
        ]
        if unused:
            raise LLMConfigurationError(
                f"llm: {', '.join(unused)} mean nothing to a scripted provider"
            )
        from jianmu_bt.llm.scripted import ScriptedProvider  # providers load when one is built

        scripted = ScriptedProvider(
            config.replies, model=config.model or "scripted", options=config.options()
        )
        scripted.prices = config.prices
        return scripted
    if config.replies is not None:
        raise LLMConfigurationError(
            f"llm.replies: only a scripted provider takes replies, not {config.provider!r}"
        )
    import importlib

    from jianmu_bt.llm.http_provider import DEFAULT_TIMEOUT  # httpx loads with an HTTP provider

    bedrock = {key: getattr(config, key) for key in BEDROCK_KEYS}
    if config.provider != "bedrock" and any(bedrock.values()):
        given = ", ".join(f"llm.{key}" for key, value in bedrock.items() if value)
        raise LLMConfigurationError(f"{given}: only the bedrock provider takes them")
    module, name = HTTP_PROVIDERS[config.provider]
    cls = getattr(importlib.import_module(module), name)
    provider = cls(
        model=config.model,
        base_url=config.base_url,
        api_key_env=config.api_key_env,
        options=config.options(),
        retry=config.retry,
        retry_statuses=config.retry_statuses,
        headers=config.headers,
        timeout=DEFAULT_TIMEOUT if config.timeout is None else config.timeout,
        **(bedrock if config.provider == "bedrock" else {}),
    )
    provider.prices = config.prices
    return provider
