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

from collections.abc import AsyncGenerator, Mapping
from contextlib import aclosing
from typing import Any, Unpack

from pydantic import SecretStr

from jianmu_bt.llm.base import LLMResponse, StreamCompleted, StreamEvent, Usage
from jianmu_bt.llm.http_provider import HTTPProvider, HTTPSettings, VendorSettings
from jianmu_bt.llm.request import TOOL_CHOICE_WORDS, PreparedRequest
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


def _wire_message(message: Mapping[str, Any]) -> dict[str, Any]:
    if message["role"] == "tool":
        # The API's tool message has exactly these fields; strict servers reject others.
        keys = ("role", "tool_call_id", "content")
        return {key: message[key] for key in keys}
    return dict(message)


def openai_body(request: PreparedRequest, *, stream: bool, stream_usage: bool) -> dict[str, Any]:
    """The Chat Completions request body for `request`."""
    options = request.options
    body: dict[str, Any] = {
        "model": request.model,
        "messages": [_wire_message(m) for m in request.messages],
    }
    if request.tools:
        body["tools"] = [{"type": "function", "function": schema} for schema in request.tools]
        choice = options.tool_choice
        if choice in TOOL_CHOICE_WORDS:
            body["tool_choice"] = choice
        elif choice:
            body["tool_choice"] = {"type": "function", "function": {"name": choice}}
        if options.parallel_tool_calls is not None:
            body["parallel_tool_calls"] = options.parallel_tool_calls
    if options.temperature is not None:
        body["temperature"] = options.temperature
    if options.max_tokens is not None:
        body["max_tokens"] = options.max_tokens
    if stream:
        body["stream"] = True
        if stream_usage:
            body["stream_options"] = {"include_usage": True}
    body.update(options.extra)
    return body


def _text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, list):  # content parts
        return "".join(p.get("text", "") for p in content if isinstance(p, Mapping))
    return str(content)


def _usage(data: Any) -> Usage | None:
    if not isinstance(data, Mapping):
        return None
    return Usage(
        input_tokens=int(data.get("prompt_tokens") or 0),
        output_tokens=int(data.get("completion_tokens") or 0),
        total_tokens=int(data.get("total_tokens") or 0),
    )


class OpenAICompatibleProvider(HTTPProvider):
    """An LLM behind an OpenAI-compatible `/chat/completions` endpoint.

    Parallel tool calls come back as several `ToolCall`s with their ids. `stream_usage` asks
    for token usage at the end of a stream (`stream_options.include_usage`); turn it off for a
    server that rejects that field. The other settings are `HTTPProvider`'s.
    """

    vendor = OPENAI
    path = "/chat/completions"
    auth_header = "authorization"
    auth_prefix = "Bearer "

    def __init__(
        self,
        model: str | None = None,
        base_url: str | None = None,
        api_key: str | SecretStr | None = None,
        *,
        stream_usage: bool = True,
        **settings: Unpack[HTTPSettings],
    ) -> None:
        self.stream_usage = stream_usage
        super().__init__(model, base_url, api_key, **settings)

    def _not_found_hint(self, base_url: str) -> str:
        if base_url.endswith("/v1"):
            return ""
        return (
            f" (OpenAI-compatible servers usually serve under '/v1': is the base URL "
            f"{base_url!r} missing it?)"
        )

    def _body(self, request: PreparedRequest, *, stream: bool) -> dict[str, Any]:
        return openai_body(request, stream=stream, stream_usage=self.stream_usage)

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
        for i, raw in enumerate(raw_calls):
            function = raw.get("function") if isinstance(raw, Mapping) else None
            if not isinstance(function, Mapping) or not function.get("name"):
                raise malformed(
                    request.model,
                    f"'choices[0].message.tool_calls[{i}]' has no function name",
                    str(raw),
                )
            calls.append(ToolCall.from_dict(raw))
        return LLMResponse.build(
            _text(message.get("content")),
            calls,
            usage=_usage(data.get("usage")),
            finish_reason=choice.get("finish_reason"),
            model=data.get("model") or request.model,
        )

    async def _events(self, request: PreparedRequest) -> AsyncGenerator[StreamEvent, None]:
        endpoint = self._endpoint
        assembler = StreamAssembler()
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
                if usage := _usage(chunk.get("usage")):
                    assembler.set_usage(usage)
                for choice in chunk.get("choices") or []:
                    if not isinstance(choice, Mapping) or choice.get("index", 0) != 0:
                        continue  # only the first choice is read (n=1)
                    delta = choice.get("delta") or {}
                    if text := assembler.add_text(_text(delta.get("content"))):
                        yield text
                    for fragment in delta.get("tool_calls") or []:
                        function = fragment.get("function") or {}
                        yield assembler.add_tool_fragment(
                            fragment.get("index"),
                            id=fragment.get("id"),
                            name=function.get("name"),
                            arguments=function.get("arguments"),
                        )
                    assembler.set_finish_reason(choice.get("finish_reason"))
        if not done and assembler.finish_reason is None:
            raise endpoint.malformed(
                request.model, "the stream ended before a finish_reason or [DONE]"
            )
        yield StreamCompleted(assembler.build(request.model))
