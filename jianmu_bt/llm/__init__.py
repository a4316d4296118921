"""The LLM layer: one provider protocol; OpenAI-compatible (Chat Completions), OpenAI Responses,
Anthropic, Gemini, Bedrock Converse and scripted providers; fallback, typed outputs, limits.

Conversations are OpenAI-shaped message dicts (`jianmu_bt.llm.messages`); a provider sends them
with tool schemas and `LLMOptions` and answers with an `LLMResponse` (assistant message,
`ToolCall`s with ids, text, `Usage`), or streams `TextDelta` / `ToolCallDelta` events ending in
`StreamCompleted`. Failures are `LLMError` subclasses; retries (the project's one `RetryPolicy`),
timeouts and key redaction are built in. See docs/llm.md.

Each name is imported from its module on first use (`jianmu_bt._lazy`), so a module that needs
one piece (`from jianmu_bt.llm.config import LLMConfig`) does not load the HTTP providers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from jianmu_bt._lazy import lazy_exports

if TYPE_CHECKING:  # what type checkers and IDEs see
    from jianmu_bt.llm.anthropic import AnthropicProvider as AnthropicProvider
    from jianmu_bt.llm.base import (
        FINISH_REASONS as FINISH_REASONS,
        LLMOptions as LLMOptions,
        LLMProvider as LLMProvider,
        LLMResponse as LLMResponse,
        ReasoningDelta as ReasoningDelta,
        StreamCompleted as StreamCompleted,
        StreamEvent as StreamEvent,
        TextDelta as TextDelta,
        ToolCallDelta as ToolCallDelta,
        ToolsInput as ToolsInput,
        Usage as Usage,
    )
    from jianmu_bt.llm.bedrock import BedrockProvider as BedrockProvider
    from jianmu_bt.llm.config import (
        LLMConfig as LLMConfig,
        provider_from_config as provider_from_config,
    )
    from jianmu_bt.llm.costs import Prices as Prices
    from jianmu_bt.llm.errors import (
        InvalidRequestError as InvalidRequestError,
        LLMAuthenticationError as LLMAuthenticationError,
        LLMBadRequestError as LLMBadRequestError,
        LLMConfigurationError as LLMConfigurationError,
        LLMConnectionError as LLMConnectionError,
        LLMError as LLMError,
        LLMNotFoundError as LLMNotFoundError,
        LLMRateLimitError as LLMRateLimitError,
        LLMResponseError as LLMResponseError,
        LLMServerError as LLMServerError,
        LLMTimeoutError as LLMTimeoutError,
        ScriptExhaustedError as ScriptExhaustedError,
    )
    from jianmu_bt.llm.fallback import (
        FallbackExhaustedError as FallbackExhaustedError,
        FallbackProvider as FallbackProvider,
    )
    from jianmu_bt.llm.gemini import GeminiProvider as GeminiProvider
    from jianmu_bt.llm.http_errors import (
        DEFAULT_RETRY_STATUSES as DEFAULT_RETRY_STATUSES,
        parse_retry_after as parse_retry_after,
    )
    from jianmu_bt.llm.limits import (
        UsageLimitExceeded as UsageLimitExceeded,
        UsageLimits as UsageLimits,
    )
    from jianmu_bt.llm.messages import (
        assistant_message as assistant_message,
        normalize_messages as normalize_messages,
        system_message as system_message,
        tool_message as tool_message,
        tool_result_message as tool_result_message,
        user_message as user_message,
    )
    from jianmu_bt.llm.openai_compat import OpenAICompatibleProvider as OpenAICompatibleProvider
    from jianmu_bt.llm.openai_responses import OpenAIResponsesProvider as OpenAIResponsesProvider
    from jianmu_bt.llm.output import OutputRejected as OutputRejected, OutputSpec as OutputSpec
    from jianmu_bt.llm.request import tool_schemas as tool_schemas
    from jianmu_bt.llm.scripted import (
        ScriptedCall as ScriptedCall,
        ScriptedProvider as ScriptedProvider,
    )
    from jianmu_bt.llm.streaming import StreamAssembler as StreamAssembler
    from jianmu_bt.tools.retry import RetryPolicy as RetryPolicy

__getattr__, __dir__ = lazy_exports(__name__, globals())
