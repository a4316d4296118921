"""The LLM layer: one provider protocol, OpenAI-compatible, Anthropic and scripted providers.

Conversations are OpenAI-shaped message dicts (`jianmu_bt.llm.messages`); a provider sends them
with tool schemas and `LLMOptions` and answers with an `LLMResponse` (assistant message,
`ToolCall`s with ids, text, `Usage`), or streams `TextDelta` / `ToolCallDelta` events ending in
`StreamCompleted`. Failures are `LLMError` subclasses; retries (the project's one `RetryPolicy`),
timeouts and key redaction are built in. See docs/llm.md.
"""

from jianmu_bt.llm.anthropic import AnthropicProvider
from jianmu_bt.llm.base import (
    LLMOptions,
    LLMProvider,
    LLMResponse,
    StreamCompleted,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
    ToolsInput,
    Usage,
)
from jianmu_bt.llm.config import LLMConfig, provider_from_config
from jianmu_bt.llm.errors import (
    InvalidRequestError,
    LLMAuthenticationError,
    LLMBadRequestError,
    LLMConfigurationError,
    LLMConnectionError,
    LLMError,
    LLMNotFoundError,
    LLMRateLimitError,
    LLMResponseError,
    LLMServerError,
    LLMTimeoutError,
    ScriptExhaustedError,
)
from jianmu_bt.llm.http_errors import DEFAULT_RETRY_STATUSES, parse_retry_after
from jianmu_bt.llm.messages import (
    assistant_message,
    normalize_messages,
    system_message,
    tool_message,
    tool_result_message,
    user_message,
)
from jianmu_bt.llm.openai_compat import OpenAICompatibleProvider
from jianmu_bt.llm.request import tool_schemas
from jianmu_bt.llm.scripted import ScriptedCall, ScriptedProvider
from jianmu_bt.llm.streaming import StreamAssembler
from jianmu_bt.tools.retry import RetryPolicy

__all__ = [
    "DEFAULT_RETRY_STATUSES",
    "AnthropicProvider",
    "InvalidRequestError",
    "LLMAuthenticationError",
    "LLMBadRequestError",
    "LLMConfig",
    "LLMConfigurationError",
    "LLMConnectionError",
    "LLMError",
    "LLMNotFoundError",
    "LLMOptions",
    "LLMProvider",
    "LLMRateLimitError",
    "LLMResponse",
    "LLMResponseError",
    "LLMServerError",
    "LLMTimeoutError",
    "OpenAICompatibleProvider",
    "RetryPolicy",
    "ScriptExhaustedError",
    "ScriptedCall",
    "ScriptedProvider",
    "StreamAssembler",
    "StreamCompleted",
    "StreamEvent",
    "TextDelta",
    "ToolCallDelta",
    "ToolsInput",
    "Usage",
    "assistant_message",
    "normalize_messages",
    "parse_retry_after",
    "provider_from_config",
    "system_message",
    "tool_message",
    "tool_result_message",
    "tool_schemas",
    "user_message",
]
