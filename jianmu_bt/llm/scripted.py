"""ScriptedProvider: an LLM whose choices are written in advance, for tests and offline demos.

Everything but the model's choices is real: the conversation is checked exactly as the HTTP
providers check it, the replies come back as `LLMResponse`s with tool-call ids, and `stream()`
cuts each reply into text and tool-call fragments that go through the same `StreamAssembler`.

A reply is one of:

- a string: the final answer text;
- a dict `{"content": ..., "tool_calls": [{"name": ..., "arguments": {...}}, ...]}` (optional
  `id` per call, optional `usage` and `finish_reason`);
- an `LLMResponse`, returned as it is;
- an exception instance, raised (to script a failing call);
- or, instead of a list, a function `(messages, tools) -> reply` (sync or async).
"""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping, Sequence
from typing import Any, TypeAlias

from jianmu_bt.llm.base import LLMOptions, LLMResponse, StreamCompleted, StreamEvent, Usage
from jianmu_bt.llm.errors import InvalidRequestError, ScriptExhaustedError
from jianmu_bt.llm.history import copy_messages
from jianmu_bt.llm.provider import ProviderBase
from jianmu_bt.llm.request import PreparedRequest
from jianmu_bt.llm.streaming import StreamAssembler
from jianmu_bt.tools import ToolCall

Reply: TypeAlias = "str | Mapping[str, Any] | LLMResponse | BaseException"
ReplyFunction: TypeAlias = Callable[
    [list[dict[str, Any]], list[dict[str, Any]]], "Reply | Awaitable[Reply]"
]

_REPLY_KEYS = {"content", "tool_calls", "usage", "finish_reason"}
_ARGUMENT_PIECE = 7  # characters per streamed argument fragment, so fragments really split


class ScriptedCall:
    """What one call to the provider saw: checked messages, tool schemas, merged options.

    The messages are kept as a place in the conversation the calls share (memory stays linear
    in the length of a run, not quadratic); reading `messages` gives a copy of its own.
    """

    __slots__ = ("_length", "_source", "options", "tools")

    def __init__(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        options: LLMOptions,
        *,
        length: int | None = None,
    ) -> None:
        """The call's messages are `messages[:length]` (all of them by default), read-only."""
        self._source = messages
        self._length = len(messages) if length is None else length
        self.tools = tools
        self.options = options

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The checked conversation the call was given (a fresh copy at each read)."""
        return copy_messages(self._source[: self._length])

    def __repr__(self) -> str:
        return f"ScriptedCall({self._length} messages, {len(self.tools)} tools)"


def _check_reply(reply: Any, where: str) -> None:
    if isinstance(reply, (str, LLMResponse, BaseException)):
        return
    if not isinstance(reply, Mapping):
        raise InvalidRequestError(
            f"{where}: a scripted reply is a string, a dict, an LLMResponse or an exception, "
            f"got {type(reply).__name__}"
        )
    unknown = sorted(set(reply) - _REPLY_KEYS)
    if unknown:
        raise InvalidRequestError(
            f"{where}: unknown key(s) {', '.join(map(repr, unknown))} in a scripted reply "
            f"(allowed: {', '.join(sorted(_REPLY_KEYS))})"
        )
    calls = reply.get("tool_calls") or []
    if not isinstance(calls, list):
        raise InvalidRequestError(f"{where}.tool_calls must be a list")
    for i, call in enumerate(calls):
        if isinstance(call, Mapping):
            call = ToolCall.from_dict(call)
        if not isinstance(call, ToolCall) or not call.name:
            raise InvalidRequestError(f"{where}.tool_calls[{i}] needs a 'name'")
    if reply.get("content") is None and not calls:
        raise InvalidRequestError(f"{where}: a scripted reply needs 'content' or 'tool_calls'")


class ScriptedProvider(ProviderBase):
    """An `LLMProvider` that answers from a list of replies (in order) or from a function.

    `calls` records what each call saw, so a test can check the conversation the "model" was
    given. Tool-call ids are deterministic: `call_<n>_<i>` for the i-th call of the n-th reply.
    Calling it once more than there are replies raises `ScriptExhaustedError`.
    """

    def __init__(
        self,
        replies: Sequence[Reply] | ReplyFunction,
        *,
        model: str = "scripted",
        options: LLMOptions | None = None,
    ) -> None:
        if callable(replies):
            self._function: ReplyFunction | None = replies
            self._replies: list[Any] = []
        else:
            if isinstance(replies, (str, Mapping)):
                raise InvalidRequestError("replies must be a list of replies (or a function)")
            self._function = None
            self._replies = list(replies)
            for i, reply in enumerate(self._replies):
                _check_reply(reply, f"replies[{i}]")
        self._defaults = LLMOptions(model=model).merged(options)
        self.calls: list[ScriptedCall] = []
        self._replayed = 0

    @property
    def model(self) -> str:
        """The model name reported in responses."""
        return self._defaults.model or "scripted"

    @property
    def remaining(self) -> int | None:
        """Replies not yet used (None for a function-driven provider)."""
        return None if self._function else len(self._replies) - self._used

    @property
    def _used(self) -> int:
        return len(self.calls) + self._replayed

    def replayed(self, response: LLMResponse) -> None:
        """A resumed durable run took one turn's reply from its journal: that scripted reply is
        used, so the next request gets the one after it."""
        self._replayed += 1

    def __repr__(self) -> str:
        source = "function" if self._function else f"{len(self._replies)} replies"
        return f"ScriptedProvider({source}, calls={len(self.calls)})"

    async def _answer(self, request: PreparedRequest) -> LLMResponse:
        number = self._used + 1
        shared = request.transcript
        if shared is not None:  # point into the conversation instead of copying it per call
            call = ScriptedCall(
                shared.messages, request.tools, request.options, length=shared.length
            )
        else:
            call = ScriptedCall(copy_messages(request.messages), request.tools, request.options)
        self.calls.append(call)
        if self._function is not None:
            reply = self._function(copy_messages(request.messages), request.tools)
            if inspect.isawaitable(reply):
                reply = await reply
            _check_reply(reply, f"the reply function's answer to call {number}")
        elif number > len(self._replies):
            last = request.messages[-1]
            raise ScriptExhaustedError(
                f"ScriptedProvider ran out of replies: {len(self._replies)} scripted, this is "
                f"call {number}; the last message was {last['role']}: "
                f"{str(last.get('content'))[:120]!r}",
                provider="scripted",
                model=request.model,
            )
        else:
            reply = self._replies[number - 1]
        return self._response(reply, number, request.model)

    def _response(self, reply: Any, number: int, model: str) -> LLMResponse:
        if isinstance(reply, BaseException):
            raise reply
        if isinstance(reply, LLMResponse):
            return reply
        if isinstance(reply, str):
            return LLMResponse.build(reply, model=model)
        calls = [
            call if call.id else ToolCall(call.name, call.arguments, f"call_{number}_{i}")
            for i, call in enumerate(ToolCall.from_list(reply.get("tool_calls") or []))
        ]
        usage = reply.get("usage")
        return LLMResponse.build(
            str(reply.get("content") or ""),
            calls,
            usage=Usage(**usage) if isinstance(usage, Mapping) else None,
            finish_reason=reply.get("finish_reason"),
            model=model,
        )

    async def _answer_stream(self, request: PreparedRequest) -> AsyncGenerator[StreamEvent, None]:
        """The next scripted reply as word-sized text deltas and tool-call fragments."""
        response = await self._answer(request)
        assembler = StreamAssembler()
        assembler.set_model(response.model)
        assembler.provider_data = response.message.get("provider_data")
        if thought := assembler.add_reasoning(response.reasoning):
            yield thought
        if refusal := assembler.add_refusal(response.refusal or ""):
            yield refusal
        for piece in re.findall(r"\s*\S+\s*", response.text) or [response.text]:
            if event := assembler.add_text(piece):
                yield event
        for index, call in enumerate(response.tool_calls):
            arguments = call.arguments
            text = arguments if isinstance(arguments, str) else json.dumps(arguments)
            pieces = [text[i : i + _ARGUMENT_PIECE] for i in range(0, len(text), _ARGUMENT_PIECE)]
            yield assembler.add_tool_fragment(index, id=call.id, name=call.name, arguments="")
            for piece in pieces:
                yield assembler.add_tool_fragment(index, arguments=piece)
        assembler.set_finish_reason(response.finish_reason)
        assembler.set_usage(response.usage)
        yield StreamCompleted(assembler.build(response.model))
