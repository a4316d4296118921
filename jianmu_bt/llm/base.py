"""The provider contract: options in, an assistant reply (or a stream of deltas) out.

Messages are plain JSON dicts in the OpenAI Chat shape (see `jianmu_bt.llm.messages`); every
provider converts them to its vendor's wire format and answers with the same `LLMResponse`, so a
tree node never knows which vendor it talks to.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeAlias, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, model_validator

from jianmu_bt.tools.calls import ToolCall

if TYPE_CHECKING:  # only named in annotations: the tool layer's calling code is not imported
    from jianmu_bt.tools import Tool, ToolSet

# What `tools=` accepts: a ToolSet, Tool instances, or schema dicts (ours or OpenAI's shape).
ToolsInput: TypeAlias = "ToolSet | Iterable[Tool | Mapping[str, Any]] | None"


class LLMOptions(BaseModel):
    """Per-call settings. A field left as None means "the provider's default".

    `tool_choice` is "auto", "none", "required" or the name of one tool the model must call.
    `timeout` bounds one HTTP request in seconds (for a stream: connecting and each wait for the
    next chunk). `extra` is merged into the vendor's request body as it is (e.g. `{"top_p": 0.9}`,
    `{"stop": ["\\n"]}`), for settings this model does not name. `output_schema` (the JSON Schema
    of an object) asks for the final answer as JSON of that shape through the vendor's native
    structured output where it has one (OpenAI's `response_format`); `output_name` names that
    shape and `output_strict` asks the vendor to enforce it exactly.
    """

    model_config = ConfigDict(extra="forbid")

    model: str | None = None
    temperature: float | None = Field(default=None, ge=0)
    max_tokens: int | None = Field(default=None, gt=0)
    tool_choice: str | None = None
    timeout: float | None = Field(default=None, gt=0)
    parallel_tool_calls: bool | None = None
    output_schema: dict[str, Any] | None = None
    output_name: str | None = None
    output_strict: bool | None = None
    extra: dict[str, Any] = Field(default_factory=dict)

    def merged(self, override: LLMOptions | None) -> LLMOptions:
        """These options with every field `override` sets (not None) taking precedence.

        `extra` dicts are merged key by key, the override winning.
        """
        if override is None:
            return self
        data = self.model_dump()
        for name, value in override.model_dump().items():
            if name == "extra":
                data["extra"] = {**data["extra"], **value}
            elif value is not None:
                data[name] = value
        return LLMOptions(**data)


class Usage(BaseModel):
    """Token counts of one call (or, added up with `+`, of several).

    `input_tokens` includes prompt-cache reads and writes where the vendor reports them apart.
    """

    # Built on first use: validating a tree file names no reply (see LLMResponse).
    model_config = ConfigDict(frozen=True, defer_build=True)

    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0

    @model_validator(mode="after")
    def _fill_total(self) -> Usage:
        if not self.total_tokens and (self.input_tokens or self.output_tokens):
            object.__setattr__(self, "total_tokens", self.input_tokens + self.output_tokens)
        return self

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            total_tokens=self.total_tokens + other.total_tokens,
        )


FINISH_REASONS = ("stop", "tool_calls", "length", "content_filter", "refusal", "other")
"""The words `LLMResponse.finish_reason` takes, whatever the vendor said:

- `stop`: the model ended its reply (an empty or missing reason without tool calls too);
- `tool_calls`: the reply asks for tools (also when a server says "stop" beside tool calls);
- `length`: cut off at the output token limit (`max_tokens`);
- `content_filter`: stopped by the provider's safety filter;
- `refusal`: the model declined (OpenAI's `refusal`, Anthropic's `stop_reason: refusal`);
- `other`: a reason none of these covers; the vendor's word is in `vendor_finish_reason`.
"""

REFUSED = frozenset({"refusal", "content_filter"})
"""The finish reasons that mean the model (or its filter) would not answer."""


def finish_word(reason: str | None, has_calls: bool, refusal: str | None = None) -> str:
    """The `FINISH_REASONS` word for a vendor's already-mapped `reason`."""
    if refusal:
        return "refusal"
    if not reason or (reason == "stop" and has_calls):
        # Some servers say "stop" (or nothing) even when the turn ends in tool calls.
        return "tool_calls" if has_calls else "stop"
    return reason if reason in FINISH_REASONS else "other"


class LLMResponse(BaseModel):
    """One assistant reply: the message to append to the conversation and what it asks for.

    `message` is the assistant dict in the OpenAI Chat shape (`content`, and `tool_calls` as
    `ToolCall.to_openai()` entries when there are any, plus `refusal`, `reasoning` and
    `provider_data` when the reply has them, see `jianmu_bt.llm.round_trip`); `tool_calls` are
    the same calls as `ToolCall`s, each with an id; `text` is the reply's text ("" when none);
    `reasoning` its readable thinking; `refusal` the model's words when it declined.
    `finish_reason` is one of `FINISH_REASONS`; `vendor_finish_reason` keeps the vendor's own
    word when it maps to `other`. `cost` is what the reply cost in US dollars (None: no price
    known for its model); `provider` names the provider that answered when several could have
    (`FallbackProvider`).
    """

    # Built on first use, not at import: only a run makes replies, so `jianmu validate` (which
    # imports this module for LLMOptions) does not pay for this schema and its `ToolCall`s.
    model_config = ConfigDict(frozen=True, defer_build=True)

    message: dict[str, Any]
    tool_calls: list[ToolCall] = Field(default_factory=list)
    text: str = ""
    usage: Usage = Field(default_factory=Usage)
    finish_reason: str | None = None
    model: str | None = None
    reasoning: str = ""
    refusal: str | None = None
    vendor_finish_reason: str | None = None
    cost: float | None = None
    provider: str | None = None

    @classmethod
    def build(
        cls,
        text: str = "",
        tool_calls: Sequence[ToolCall] = (),
        *,
        usage: Usage | None = None,
        finish_reason: str | None = None,
        model: str | None = None,
        reasoning: str = "",
        refusal: str | None = None,
        provider_data: Mapping[str, Any] | None = None,
    ) -> LLMResponse:
        """A response whose `message` is derived from the parts given (every call with an id of
        its own); `finish_reason` is mapped to one of `FINISH_REASONS`."""
        calls = ToolCall.with_unique_ids(tool_calls)
        message: dict[str, Any] = {"role": "assistant", "content": text or (None if calls else "")}
        if calls:
            message["tool_calls"] = [call.to_openai() for call in calls]
        if refusal:
            message["refusal"] = refusal
        if reasoning:
            message["reasoning"] = reasoning
        if provider_data:
            message["provider_data"] = dict(provider_data)
        word = finish_word(finish_reason, bool(calls), refusal)
        return cls(
            message=message,
            tool_calls=calls,
            text=text,
            usage=usage or Usage(),
            finish_reason=word,
            model=model,
            reasoning=reasoning,
            refusal=refusal or None,
            vendor_finish_reason=finish_reason if word == "other" else None,
        )

    @property
    def has_tool_calls(self) -> bool:
        """True when the model asked for at least one tool call."""
        return bool(self.tool_calls)

    @property
    def refused(self) -> bool:
        """True when the model (or the provider's filter) declined to answer."""
        return self.finish_reason in REFUSED

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict of every field."""
        return self.model_dump(mode="json")


@dataclass(frozen=True, slots=True)
class TextDelta:
    """A piece of the reply's text, in order."""

    text: str
    kind: Literal["text"] = "text"


@dataclass(frozen=True, slots=True)
class ReasoningDelta:
    """A piece of the reply's reasoning (thinking) text, in order; never part of the answer."""

    text: str
    kind: Literal["reasoning"] = "reasoning"


@dataclass(frozen=True, slots=True)
class ToolCallDelta:
    """A fragment of one tool call: `index` is the call's position in the reply (0, 1, ...).

    The first fragment of a call carries its `id` and `name`; `arguments` is the next piece of
    the JSON argument text. Concatenating a call's pieces gives its full arguments.
    """

    index: int
    id: str | None
    name: str | None
    arguments: str
    kind: Literal["tool_call"] = "tool_call"


@dataclass(frozen=True, slots=True)
class StreamCompleted:
    """The last event of every stream: the whole reply, assembled from the deltas."""

    response: LLMResponse
    kind: Literal["completed"] = "completed"


StreamEvent = TextDelta | ReasoningDelta | ToolCallDelta | StreamCompleted


@runtime_checkable
class LLMProvider(Protocol):
    """What a tree node needs from an LLM: one async call, and the same call as a stream.

    `messages` are OpenAI-shaped dicts; `tools` a ToolSet, Tools or `{"name", "description",
    "parameters"}` schemas. `stream` yields `TextDelta`s, `ReasoningDelta`s and
    `ToolCallDelta`s as they arrive and ends with one `StreamCompleted` carrying the same
    `LLMResponse` `complete` would return.
    Errors are `jianmu_bt.llm.LLMError` subclasses.
    """

    async def complete(
        self,
        messages: Sequence[Mapping[str, Any]],
        tools: ToolsInput = None,
        options: LLMOptions | None = None,
    ) -> LLMResponse:
        """One request, the whole assistant reply."""
        ...

    def stream(
        self,
        messages: Sequence[Mapping[str, Any]],
        tools: ToolsInput = None,
        options: LLMOptions | None = None,
    ) -> AsyncIterator[StreamEvent]:
        """One request, the reply as events; the last event is a `StreamCompleted`."""
        ...
