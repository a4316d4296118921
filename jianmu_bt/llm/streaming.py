"""Assembling a streamed reply: text pieces and tool-call fragments into one LLMResponse.

Vendors send a tool call in fragments: OpenAI-compatible servers key them by `index` (the id and
name come once, the argument JSON in pieces), Anthropic by content-block index with
`input_json_delta` pieces. Several calls may be in flight at once. The assembler keeps one buffer
per call and joins every piece (a known mistake elsewhere was keeping only the last fragment).

Some servers number every call 0 or leave `index` out; a fragment that brings a new id for an
index already holding a different id therefore starts a new call, and a fragment without index
or id continues the most recent call.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from jianmu_bt.llm.base import LLMResponse, ReasoningDelta, TextDelta, ToolCallDelta, Usage
from jianmu_bt.llm.round_trip import merge_fields
from jianmu_bt.tools import ToolCall


@dataclass
class _CallBuffer:
    id: str | None = None
    name: str = ""
    arguments: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)  # vendor fields sent back next turn


class StreamAssembler:
    """Collects the events of one stream and builds the final `LLMResponse`.

    Providers feed it (`add_text`, `add_reasoning`, `add_refusal`, `add_tool_fragment`,
    `set_finish_reason`, `set_usage`, `set_model`, `provider_data`); the `add_*` methods return
    the event to yield to the caller.
    """

    def __init__(self) -> None:
        self._text: list[str] = []
        self._reasoning: list[str] = []
        self._refusal: list[str] = []
        self.provider_data: dict[str, Any] | None = None  # set by the provider before `build`
        self._calls: list[_CallBuffer] = []
        self._by_key: dict[Any, int] = {}  # vendor index -> position in _calls
        self.finish_reason: str | None = None
        self.usage: Usage | None = None
        self.model: str | None = None

    def add_text(self, text: str) -> TextDelta | None:
        """Record a piece of text; returns its event (None for an empty piece)."""
        if not text:
            return None
        self._text.append(text)
        return TextDelta(text)

    def add_reasoning(self, text: str) -> ReasoningDelta | None:
        """Record a piece of reasoning text; returns its event (None for an empty piece)."""
        if not text:
            return None
        self._reasoning.append(text)
        return ReasoningDelta(text)

    def add_refusal(self, text: str) -> TextDelta | None:
        """Record a piece of a refusal (shown as text as it arrives, kept apart from the answer)."""
        if not text:
            return None
        self._refusal.append(text)
        return TextDelta(text)

    def add_tool_fragment(
        self,
        key: Any = None,
        *,
        id: str | None = None,
        name: str | None = None,
        arguments: Any = None,
        extra: Mapping[str, Any] | None = None,
    ) -> ToolCallDelta:
        """Record one fragment of a tool call; `key` is the vendor's index for the call.

        `arguments` is the next piece of argument JSON (a dict, sent whole by some servers, is
        serialised). The first non-empty name of a call is kept. `extra` holds vendor fields of
        the call to send back on the next turn (merged with `round_trip.merge_fields`).
        """
        position = self._position(key, id)
        buffer = self._calls[position]
        if id and not buffer.id:
            buffer.id = id
        if name and not buffer.name:
            buffer.name = name
        if extra:
            merge_fields(buffer.extra, extra)
        piece = _argument_text(arguments)
        if piece:
            buffer.arguments.append(piece)
        return ToolCallDelta(index=position, id=id or None, name=name or None, arguments=piece)

    def _position(self, key: Any, id: str | None) -> int:
        if key is not None and key in self._by_key:
            position = self._by_key[key]
            current = self._calls[position].id
            if not (id and current and id != current):
                return position
        elif key is None and not id and self._calls:
            return len(self._calls) - 1
        elif key is None and id:
            for position, buffer in enumerate(self._calls):
                if buffer.id == id:
                    return position
        self._calls.append(_CallBuffer())
        position = len(self._calls) - 1
        self._by_key[key if key is not None else ("id", id)] = position
        return position

    def set_finish_reason(self, reason: str | None) -> None:
        """Record the (already normalised) finish reason when one arrives."""
        if reason:
            self.finish_reason = reason

    def set_usage(self, usage: Usage) -> None:
        """Record the token usage (the last report wins)."""
        self.usage = usage

    def set_model(self, model: str | None) -> None:
        """Record the model that answered."""
        if model:
            self.model = model

    @property
    def text(self) -> str:
        """The text so far."""
        return "".join(self._text)

    @property
    def reasoning(self) -> str:
        """The reasoning text so far."""
        return "".join(self._reasoning)

    @property
    def call_extras(self) -> list[dict[str, Any]]:
        """Each call's vendor fields (an empty dict for a call without any), in call order."""
        return [buffer.extra for buffer in self._calls]

    def tool_calls(self) -> list[ToolCall]:
        """The tool calls so far, each with its arguments joined and decoded."""
        calls = []
        for buffer in self._calls:
            raw = "".join(buffer.arguments)
            call = ToolCall.from_dict({"name": buffer.name, "arguments": raw, "id": buffer.id})
            calls.append(call)
        return calls

    def build(self, default_model: str | None = None) -> LLMResponse:
        """The assembled reply."""
        return LLMResponse.build(
            self.text,
            self.tool_calls(),
            usage=self.usage,
            finish_reason=self.finish_reason,
            model=self.model or default_model,
            reasoning=self.reasoning,
            refusal="".join(self._refusal) or None,
            provider_data=self.provider_data,
        )


def _argument_text(arguments: Any) -> str:
    if arguments is None:
        return ""
    if isinstance(arguments, str):
        return arguments
    return json.dumps(arguments, ensure_ascii=False)
