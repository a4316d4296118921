"""OpenAI-compatible Chat Completions: OpenAI, vLLM, Ollama, llama.cpp server, LM Studio, ...

One wire format serves many servers, so only the base URL, key and model change:

| server            | base_url                         | key                 |
|-------------------|----------------------------------|---------------------|
| OpenAI            | https://api.openai.com/v1        | OPENAI_API_KEY      |
| Ollama            | http://localhost:11434/v1        | none                |
| llama.cpp server  | http://localhost:8080/v1         | none                |
| vLLM              | http://localhost:8000/v1         | none (or --api-key) |
| LM Studio         | http://localhost:1234/v1         | none                |
| DeepSeek          | https://api.deepseek.com/v1      | JIANMU_LLM_API_KEY  |
| Qwen (DashScope)  | https://dashscope.aliyuncs.com/compatible-mode/v1 | JIANMU_LLM_API_KEY |

Settings come from the arguments, else `JIANMU_LLM_BASE_URL` / `OPENAI_BASE_URL`,
`JIANMU_LLM_API_KEY` (or `OPENAI_API_KEY` for OpenAI's own host) and `JIANMU_LLM_MODEL`.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping, Sequence
from contextlib import aclosing
from typing import Any, Unpack

from pydantic import SecretStr

from jianmu_bt.llm.base import LLMResponse, StreamCompleted, StreamEvent
from jianmu_bt.llm.http_provider import HTTPProvider, HTTPSettings, VendorSettings
from jianmu_bt.llm.openai_chat_wire import (
    ROUND_TRIP_CALL_FIELDS,
    ROUND_TRIP_FIELDS,
    chat_body,
    finish_of,
    kept_fields,
    provider_data,
    reasoning_of,
    text_of,
    usage_of,
)
from jianmu_bt.llm.request import PreparedRequest
from jianmu_bt.llm.round_trip import merge_fields
from jianmu_bt.llm.streaming import StreamAssembler
from jianmu_bt.tools import ToolCall

OPENAI = VendorSettings(
    name="openai",
    default_base_url="https://api.openai.com/v1",
    base_url_envs=("JIANMU_LLM_BASE_URL", "OPENAI_BASE_URL"),
    vendor_base_url_env="OPENAI_BASE_URL",
    vendor_key_env="OPENAI_API_KEY",
    generic_key_env="JIANMU_LLM_API_KEY",
    model_envs=("JIANMU_LLM_MODEL",),
)


class OpenAICompatibleProvider(HTTPProvider):
    """An LLM behind an OpenAI-compatible `/chat/completions` endpoint.

    Parallel tool calls come back as several `ToolCall`s with their ids. `stream_usage` asks
    for token usage at the end of a stream (`stream_options.include_usage`); turn it off for a
    server that rejects that field. `round_trip_fields` and `round_trip_call_fields` name the
    fields of a reply (of each of its tool calls) this server wants back on the next turn
    (`jianmu_bt.llm.openai_chat_wire`). The other settings are `HTTPProvider`'s.
    """

    vendor = OPENAI
    path = "/chat/completions"
    native_output = True  # `response_format: json_schema` (OpenAI, vLLM, Ollama, llama.cpp)
    auth_header = "authorization"
    auth_prefix = "Bearer "

    def __init__(
        self,
        model: str | None = None,
        base_url: str | None = None,
        api_key: str | SecretStr | None = None,
        *,
        stream_usage: bool = True,
        round_trip_fields: Sequence[str] = ROUND_TRIP_FIELDS,
        round_trip_call_fields: Sequence[str] = ROUND_TRIP_CALL_FIELDS,
        **settings: Unpack[HTTPSettings],
    ) -> None:
        self.stream_usage = stream_usage
        self.round_trip_fields = tuple(round_trip_fields)
        self.round_trip_call_fields = tuple(round_trip_call_fields)
        super().__init__(model, base_url, api_key, **settings)

    def _not_found_hint(self, base_url: str) -> str:
        if base_url.endswith("/v1"):
            return ""
        return (
            f" (OpenAI-compatible servers usually serve under '/v1': is the base URL "
            f"{base_url!r} missing it?)"
        )

    def _body(self, request: PreparedRequest, *, stream: bool) -> dict[str, Any]:
        return chat_body(request, stream=stream, stream_usage=self.stream_usage, origin=self.origin)

    def _parse(self, data: dict[str, Any], request: PreparedRequest) -> LLMResponse:
        malformed = self._endpoint.malformed
        choices = data.get("choices")
        if not isinstance(choices, list) or not choices:
            raise malformed(request.model, "missing 'choices'", str(data))
        choice = choices[0]
        message = choice.get("message") if isinstance(choice, Mapping) else None
        if not isinstance(message, Mapping):
            raise malformed(request.model, "missing 'choices[0].message'", str(data))
        raw_calls = message.get("tool_calls") or []
        if not isinstance(raw_calls, list):
            raise malformed(request.model, "'choices[0].message.tool_calls' is not a list")
        calls = []
        call_fields = []
        for i, raw in enumerate(raw_calls):
            function = raw.get("function") if isinstance(raw, Mapping) else None
            if not isinstance(function, Mapping) or not function.get("name"):
                raise malformed(
                    request.model,
                    f"'choices[0].message.tool_calls[{i}]' has no function name",
                    str(raw),
                )
            calls.append(ToolCall.from_dict(raw))
            call_fields.append(kept_fields(raw, self.round_trip_call_fields))
        refusal = message.get("refusal")
        return LLMResponse.build(
            text_of(message.get("content")),
            calls,
            usage=usage_of(data.get("usage")),
            finish_reason=finish_of(choice.get("finish_reason")),
            model=data.get("model") or request.model,
            reasoning=reasoning_of(message),
            refusal=str(refusal) if refusal else None,
            provider_data=provider_data(
                self.origin, kept_fields(message, self.round_trip_fields), call_fields
            ),
        )

    async def _events(self, request: PreparedRequest) -> AsyncGenerator[StreamEvent, None]:
        endpoint = self._endpoint
        assembler = StreamAssembler()
        kept: dict[str, Any] = {}
        done = False
        async with aclosing(self._server_events(request)) as events:
            async for event in events:
                if event.data.strip() == "[DONE]":
                    done = True
                    break
                chunk = endpoint.decode_event(event, request.model)
                if not isinstance(chunk, Mapping):
                    raise endpoint.malformed(request.model, "a chunk is not an object", event.data)
                if error := chunk.get("error"):
                    said = error.get("message") if isinstance(error, Mapping) else error
                    raise self._stream_error(said, request.model)
                assembler.set_model(chunk.get("model"))
                if usage := usage_of(chunk.get("usage")):
                    assembler.set_usage(usage)
                for choice in chunk.get("choices") or []:
                    if not isinstance(choice, Mapping) or choice.get("index", 0) != 0:
                        continue  # only the first choice is read (n=1)
                    delta = choice.get("delta") or {}
                    if thought := assembler.add_reasoning(reasoning_of(delta)):
                        yield thought
                    if text := assembler.add_text(text_of(delta.get("content"))):
                        yield text
                    if refusal := assembler.add_refusal(text_of(delta.get("refusal"))):
                        yield refusal
                    merge_fields(kept, kept_fields(delta, self.round_trip_fields))
                    for fragment in delta.get("tool_calls") or []:
                        function = fragment.get("function") or {}
                        yield assembler.add_tool_fragment(
                            fragment.get("index"),
                            id=fragment.get("id"),
                            name=function.get("name"),
                            arguments=function.get("arguments"),
                            extra=kept_fields(fragment, self.round_trip_call_fields),
                        )
                    assembler.set_finish_reason(finish_of(choice.get("finish_reason")))
        if not done and assembler.finish_reason is None:
            raise endpoint.malformed(
                request.model, "the stream ended before a finish_reason or [DONE]"
            )
        assembler.provider_data = provider_data(self.origin, kept, assembler.call_extras)
        yield StreamCompleted(assembler.build(request.model))
