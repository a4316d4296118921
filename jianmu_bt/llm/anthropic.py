"""Anthropic Messages API over httpx: `tool_use` blocks in, `tool_result` blocks out.

Settings come from the arguments, else `ANTHROPIC_BASE_URL`, `ANTHROPIC_API_KEY` (sent only to
Anthropic's own host unless given explicitly) and `ANTHROPIC_MODEL`. Requests carry `x-api-key`
and `anthropic-version`; the conversation is converted by `jianmu_bt.llm.anthropic_wire`.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Mapping
from contextlib import aclosing
from typing import Any, Unpack

from pydantic import SecretStr

from jianmu_bt.llm.anthropic_blocks import BlockAssembler, round_trip_data, thinking_text
from jianmu_bt.llm.anthropic_wire import (
    ANTHROPIC_VERSION,
    DEFAULT_MAX_TOKENS,
    FINISH_REASONS,
    anthropic_body,
    output_tool,
    tool_input_text,
)
from jianmu_bt.llm.base import LLMResponse, StreamCompleted, StreamEvent, Usage
from jianmu_bt.llm.errors import LLMError, LLMRateLimitError, LLMServerError
from jianmu_bt.llm.http_provider import HTTPProvider, HTTPSettings, VendorSettings
from jianmu_bt.llm.request import PreparedRequest
from jianmu_bt.llm.streaming import StreamAssembler
from jianmu_bt.tools import ToolCall

ANTHROPIC = VendorSettings(
    name="anthropic",
    default_base_url="https://api.anthropic.com",
    base_url_envs=("ANTHROPIC_BASE_URL",),
    vendor_base_url_env="ANTHROPIC_BASE_URL",
    vendor_key_env="ANTHROPIC_API_KEY",
    generic_key_env=None,
    model_envs=("ANTHROPIC_MODEL",),
)


def _usage(data: Any, previous: Usage | None = None) -> Usage | None:
    if not isinstance(data, Mapping):
        return previous
    # Prompt-cache reads and writes are input too; Anthropic reports them apart.
    input_tokens = sum(
        int(data.get(key) or 0)
        for key in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    )
    if not input_tokens and previous is not None:
        input_tokens = previous.input_tokens
    output_tokens = int(data.get("output_tokens") or 0)
    return Usage(input_tokens=input_tokens, output_tokens=output_tokens)


def _finish(reason: Any) -> str | None:
    return FINISH_REASONS.get(reason, reason) if reason else None


class AnthropicProvider(HTTPProvider):
    """Claude models through the Messages API (`POST {base_url}/v1/messages`).

    `max_tokens` is required by this API: `default_max_tokens` is sent when the options name
    none. `anthropic_version` is the API version header; `headers` are added to every request
    (for example an `anthropic-beta` flag). The other settings are `HTTPProvider`'s.
    """

    vendor = ANTHROPIC
    path = "/v1/messages"
    auth_header = "x-api-key"

    def __init__(
        self,
        model: str | None = None,
        base_url: str | None = None,
        api_key: str | SecretStr | None = None,
        *,
        anthropic_version: str = ANTHROPIC_VERSION,
        default_max_tokens: int = DEFAULT_MAX_TOKENS,
        **settings: Unpack[HTTPSettings],
    ) -> None:
        self.anthropic_version = anthropic_version
        self.default_max_tokens = default_max_tokens
        super().__init__(model, base_url, api_key, **settings)

    def _vendor_headers(self) -> dict[str, str]:
        return {"anthropic-version": self.anthropic_version}

    def _not_found_hint(self, base_url: str) -> str:
        if base_url.endswith("/v1"):
            return f" (the base URL {base_url!r} ends in '/v1'; '/v1/messages' is added)"
        return ""

    def _body(self, request: PreparedRequest, *, stream: bool) -> dict[str, Any]:
        return anthropic_body(
            request,
            stream=stream,
            default_max_tokens=self.default_max_tokens,
            origin=self.origin,
        )

    def _reply(
        self,
        blocks: list[dict[str, Any]],
        calls: list[ToolCall],
        *,
        usage: Usage | None,
        stop_reason: Any,
        model: str,
        request: PreparedRequest,
    ) -> LLMResponse:
        text = "".join(str(b.get("text") or "") for b in blocks if b.get("type") == "text")
        forced = output_tool(request.options)
        answer = next((c for c in calls if forced and c.name == forced["name"]), None)
        if answer is not None:
            # The typed answer came through its tool: it is the reply's text, not a call to
            # run, and the turn goes back as that text (no tool use left unanswered).
            schema = request.options.output_schema or {}
            value = answer.arguments
            if schema.get("type") != "object" and isinstance(value, dict):
                value = value.get("value")  # a non-object answer is wrapped (`output_tool`)
            return LLMResponse.build(
                json.dumps(value, ensure_ascii=False),
                usage=usage,
                finish_reason="stop",
                model=model,
                reasoning=thinking_text(blocks),
            )
        refusal = None
        if stop_reason == "refusal":
            refusal = text or "the model declined to answer (stop_reason: refusal)"
        return LLMResponse.build(
            text,
            calls,
            usage=usage,
            finish_reason=_finish(stop_reason),
            model=model,
            reasoning=thinking_text(blocks),
            refusal=refusal,
            provider_data=round_trip_data(self.origin, blocks),
        )

    def _parse(self, data: dict[str, Any], request: PreparedRequest) -> LLMResponse:
        malformed = self._endpoint.malformed
        content = data.get("content")
        if not isinstance(content, list):
            raise malformed(request.model, "missing 'content' (a list of blocks)", str(data))
        calls: list[ToolCall] = []
        for i, block in enumerate(content):
            if not isinstance(block, Mapping) or not block.get("type"):
                raise malformed(request.model, f"'content[{i}]' is not a typed block", str(block))
            if block["type"] == "tool_use":  # server tools (server_tool_use) are not ours to run
                if not block.get("id") or not block.get("name"):
                    problem = f"'content[{i}]' (tool_use) needs 'id' and 'name'"
                    raise malformed(request.model, problem, str(block))
                calls.append(ToolCall.from_dict(block))
        return self._reply(
            [dict(block) for block in content],
            calls,
            usage=_usage(data.get("usage")),
            stop_reason=data.get("stop_reason"),
            model=data.get("model") or request.model,
            request=request,
        )

    async def _events(self, request: PreparedRequest) -> AsyncGenerator[StreamEvent, None]:
        endpoint = self._endpoint
        assembler = StreamAssembler()
        blocks = BlockAssembler()
        stop_reason: Any = None
        stopped = False
        async with aclosing(self._server_events(request)) as events:
            async for event in events:
                payload = endpoint.decode_event(event, request.model)
                if not isinstance(payload, Mapping):
                    raise endpoint.malformed(request.model, "an event is not an object", event.data)
                kind = payload.get("type") or event.event
                index = int(payload.get("index") or 0)
                if kind == "message_start":
                    message = payload.get("message") or {}
                    assembler.set_model(message.get("model"))
                    if usage := _usage(message.get("usage")):
                        assembler.set_usage(usage)
                elif kind == "content_block_start":
                    block = blocks.start(index, payload.get("content_block") or {})
                    if block.get("type") == "tool_use":
                        yield assembler.add_tool_fragment(
                            index,
                            id=block.get("id"),
                            name=block.get("name"),
                            arguments=tool_input_text(block),
                        )
                    elif block.get("type") == "text" and (
                        text := assembler.add_text(block.get("text") or "")
                    ):
                        yield text
                elif kind == "content_block_delta":
                    delta = payload.get("delta") or {}
                    blocks.delta(index, delta)
                    delta_kind = delta.get("type")
                    if delta_kind == "text_delta":
                        if text := assembler.add_text(delta.get("text") or ""):
                            yield text
                    elif delta_kind == "thinking_delta":
                        if thought := assembler.add_reasoning(delta.get("thinking") or ""):
                            yield thought
                    elif delta_kind == "input_json_delta" and blocks.kind(index) == "tool_use":
                        yield assembler.add_tool_fragment(
                            index, arguments=delta.get("partial_json") or ""
                        )
                elif kind == "content_block_stop":
                    blocks.stop(index)
                elif kind == "message_delta":
                    delta = payload.get("delta") or {}
                    stop_reason = delta.get("stop_reason") or stop_reason
                    if usage := _usage(payload.get("usage"), assembler.usage):
                        assembler.set_usage(usage)
                elif kind == "message_stop":
                    stopped = True
                    break
                elif kind == "error":
                    raise self._error_event(payload.get("error"), request.model)
        if not stopped:
            raise endpoint.malformed(request.model, "the stream ended before 'message_stop'")
        yield StreamCompleted(
            self._reply(
                blocks.content(),
                assembler.tool_calls(),
                usage=assembler.usage,
                stop_reason=stop_reason,
                model=assembler.model or request.model,
                request=request,
            )
        )

    def _error_event(self, error: Any, model: str) -> LLMError:
        """An `error` event: a `rate_limit_error` is an LLMRateLimitError, others server errors."""
        error = error if isinstance(error, Mapping) else {"message": str(error)}
        kind = error.get("type") or "error"
        cls = LLMRateLimitError if kind == "rate_limit_error" else LLMServerError
        return self._stream_error(error.get("message") or "", model, kind=kind, error=cls)
