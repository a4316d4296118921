"""Converting conversations to the Chat Completions wire format and reading its replies.

Messages are already OpenAI-shaped; what this module adds is the round trip of the fields some
servers put beside the standard ones and require back on the next turn (`jianmu_bt.llm.
round_trip`): DeepSeek's, Qwen's, Kimi's and vLLM's `reasoning_content` on the assistant message,
OpenRouter's `reasoning_details`, Gemini's `extra_content` (its `thought_signature`) on each tool
call. They are kept per reply in `provider_data` and sent back only to the server they came from;
which fields are kept is the provider's `round_trip_fields` / `round_trip_call_fields`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from jianmu_bt.llm.base import Usage
from jianmu_bt.llm.request import TOOL_CHOICE_WORDS, PreparedRequest
from jianmu_bt.llm.round_trip import PROVIDER_DATA, REASONING, parts_for

ROUND_TRIP_FIELDS = ("reasoning_content", "reasoning_details")
"""Assistant message fields sent back to the server that gave them (DeepSeek, Qwen, Kimi, vLLM:
`reasoning_content`; OpenRouter: `reasoning_details`)."""

ROUND_TRIP_CALL_FIELDS = ("extra_content",)
"""Tool call fields sent back to the server that gave them (Gemini: `extra_content.google.
thought_signature`)."""

REASONING_FIELDS = ("reasoning_content", "reasoning")
"""Message or delta fields whose text is the reply's reasoning, in the order they are read."""

# Chat Completions finish reasons in the words LLMResponse uses (others pass through).
FINISH_REASONS = {"function_call": "tool_calls"}

_OURS = ("refusal", REASONING, PROVIDER_DATA)  # keys of our assistant messages, not the wire's


def _assistant_wire(message: Mapping[str, Any], origin: str) -> dict[str, Any]:
    wire = {key: value for key, value in message.items() if key not in _OURS}
    parts = parts_for(message, origin)
    if parts is None:
        if wire.get("content") is None and not wire.get("tool_calls"):
            # A refusal from another server: its words are what the model said.
            wire["content"] = message.get("refusal") or ""
        return wire
    if message.get("refusal"):
        wire["refusal"] = message["refusal"]
    wire.update(parts.get("message") or {})
    extras = parts.get("tool_calls") or []
    calls = wire.get("tool_calls")
    if extras and calls:
        wire["tool_calls"] = [
            {**call, **extras[i]} if i < len(extras) and extras[i] else call
            for i, call in enumerate(calls)
        ]
    return wire


def wire_message(message: Mapping[str, Any], origin: str) -> dict[str, Any]:
    """One checked message as the API takes it (round-trip parts restored for `origin`)."""
    role = message["role"]
    if role == "tool":
        # The API's tool message has exactly these fields; strict servers reject others.
        return {key: message[key] for key in ("role", "tool_call_id", "content")}
    if role == "assistant":
        return _assistant_wire(message, origin)
    return dict(message)


def chat_body(
    request: PreparedRequest, *, stream: bool, stream_usage: bool, origin: str
) -> dict[str, Any]:
    """The Chat Completions request body for `request`."""
    options = request.options
    body: dict[str, Any] = {
        "model": request.model,
        "messages": [wire_message(m, origin) for m in request.messages],
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
    if options.output_schema is not None:
        body["response_format"] = {
            "type": "json_schema",
            "json_schema": {
                "name": options.output_name or "final_result",
                "schema": options.output_schema,
                "strict": bool(options.output_strict),
            },
        }
    if stream:
        body["stream"] = True
        if stream_usage:
            body["stream_options"] = {"include_usage": True}
    body.update(options.extra)
    return body


def text_of(content: Any) -> str:
    """The text of a `content` value: a string, content parts or None."""
    if content is None:
        return ""
    if isinstance(content, list):  # content parts
        return "".join(p.get("text", "") for p in content if isinstance(p, Mapping))
    return str(content)


def reasoning_of(fields: Mapping[str, Any]) -> str:
    """The reasoning text of a message or a delta ("" when it has none)."""
    for name in REASONING_FIELDS:
        value = fields.get(name)
        if isinstance(value, str) and value:
            return value
    return ""


def kept_fields(fields: Mapping[str, Any], names: Iterable[str]) -> dict[str, Any]:
    """The round-trip fields among `fields` (those named, when not None)."""
    return {name: fields[name] for name in names if fields.get(name) is not None}


def usage_of(data: Any) -> Usage | None:
    """The `Usage` of a reply's (or a stream's last chunk's) `usage` object."""
    if not isinstance(data, Mapping):
        return None
    return Usage(
        input_tokens=int(data.get("prompt_tokens") or 0),
        output_tokens=int(data.get("completion_tokens") or 0),
        total_tokens=int(data.get("total_tokens") or 0),
    )


def finish_of(reason: Any) -> str | None:
    """A Chat Completions finish reason in the words LLMResponse uses (None when empty)."""
    if not reason:
        return None
    return FINISH_REASONS.get(reason, str(reason))


def provider_data(
    origin: str, message_fields: Mapping[str, Any], call_fields: Sequence[Mapping[str, Any]]
) -> dict[str, Any] | None:
    """The `provider_data` of a reply with these kept fields (None when it has none)."""
    if not message_fields and not any(call_fields):
        return None
    data: dict[str, Any] = {"origin": origin}
    if message_fields:
        data["message"] = dict(message_fields)
    if any(call_fields):
        data["tool_calls"] = [dict(fields) for fields in call_fields]
    return data
