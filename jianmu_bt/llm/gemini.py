"""Google Gemini through the Gemini API's own `generateContent` endpoint.

`POST {base_url}/v1beta/models/{model}:generateContent`, and for a stream
`:streamGenerateContent?alt=sse` (each server-sent event one whole `GenerateContentResponse`).
Settings come from the arguments, else `GEMINI_BASE_URL`, `GEMINI_API_KEY` then
`GOOGLE_API_KEY` (sent only to Google's host, generativelanguage.googleapis.com, or to the URL in
`GEMINI_BASE_URL`; for any other server pass `api_key=` or `api_key_env=`) and `GEMINI_MODEL`.
The key travels in the `x-goog-api-key` header, never in the URL.
The conversation is converted by `jianmu_bt.llm.gemini_wire`.

Reading a reply: `text` parts are the answer, `text` parts marked `thought: true` its reasoning
(sent only when `include_thoughts=True`), `functionCall` parts its tool calls (each given an id
when Gemini gives none). A reply with anything but plain text keeps its parts, exactly as
received, in `provider_data` for the next turn (`{"origin", "parts": [...]}`): Gemini 3 wants its
`thoughtSignature`s back. A streamed reply's consecutive unsigned text pieces are joined into one
part (what the same reply unstreamed holds); a part with a signature, such as the empty text part
that often closes a stream, is kept as it came.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncGenerator, Mapping, Sequence
from contextlib import aclosing
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Unpack

from pydantic import SecretStr

from jianmu_bt.llm.base import (
    LLMResponse,
    ReasoningDelta,
    StreamCompleted,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
    Usage,
)
from jianmu_bt.llm.errors import (
    LLMAuthenticationError,
    LLMBadRequestError,
    LLMError,
    LLMRateLimitError,
    LLMServerError,
)
from jianmu_bt.llm.gemini_wire import API_VERSION, FINISH_REASONS, gemini_body, model_url
from jianmu_bt.llm.http_provider import HTTPProvider, HTTPSettings, VendorSettings
from jianmu_bt.llm.request import PreparedRequest
from jianmu_bt.tools import ToolCall
from jianmu_bt.tools.calls import new_call_id

if TYPE_CHECKING:
    from httpx_sse import ServerSentEvent

GEMINI = VendorSettings(
    name="gemini",
    default_base_url="https://generativelanguage.googleapis.com",
    base_url_envs=("GEMINI_BASE_URL",),
    vendor_base_url_env="GEMINI_BASE_URL",
    vendor_key_env="GEMINI_API_KEY",
    generic_key_env=None,
    model_envs=("GEMINI_MODEL",),
)
GOOGLE_KEY = replace(GEMINI, vendor_key_env="GOOGLE_API_KEY")
"""GEMINI with Google's other key variable, used when only `GOOGLE_API_KEY` is set."""

_PLAIN = frozenset({"text"})  # a reply made only of such parts needs nothing sent back
_PIECE = frozenset({"text", "thought"})  # a streamed part that may join the one before it


def usage_of(data: Any) -> Usage | None:
    """The `Usage` of a `usageMetadata` object: thinking tokens count as output."""
    if not isinstance(data, Mapping):
        return None

    def count(*keys: str) -> int:
        return sum(int(data.get(key) or 0) for key in keys)

    return Usage(
        input_tokens=count("promptTokenCount", "toolUsePromptTokenCount"),
        output_tokens=count("candidatesTokenCount", "thoughtsTokenCount"),
    )


def read_parts(parts: Sequence[Mapping[str, Any]]) -> tuple[str, str, list[ToolCall]]:
    """The answer text, the reasoning text and the tool calls of a reply's parts."""
    text: list[str] = []
    reasoning: list[str] = []
    calls: list[ToolCall] = []
    for part in parts:
        call = part.get("functionCall")
        if isinstance(call, Mapping):
            calls.append(ToolCall.from_dict(call))
        elif isinstance(part.get("text"), str):
            (reasoning if part.get("thought") else text).append(part["text"])
    return "".join(text), "".join(reasoning), calls


def _first_candidate(data: Mapping[str, Any]) -> Mapping[str, Any] | None:
    for candidate in data.get("candidates") or []:
        if isinstance(candidate, Mapping) and candidate.get("index", 0) == 0:
            return candidate
    return None


def _parts_of(candidate: Mapping[str, Any] | None) -> list[Any]:
    content = candidate.get("content") if candidate is not None else None
    parts = content.get("parts") if isinstance(content, Mapping) else None
    return parts if isinstance(parts, list) else []


class GeminiProvider(HTTPProvider):
    """Gemini models through the Gemini API (`generateContent`, `streamGenerateContent`).

    `include_thoughts` asks for the model's thought summaries (`thinkingConfig.includeThoughts`,
    for thinking models), which become `LLMResponse.reasoning`. Any other Gemini setting goes in
    `LLMOptions.extra`, merged key by key
    (`{"generationConfig": {"thinkingConfig": {"thinkingLevel": "low"}}}`). `parallel_tool_calls`
    has no Gemini counterpart. The other settings are `HTTPProvider`'s.
    """

    vendor = GEMINI
    path = f"/{API_VERSION}/models"
    native_output = True  # `responseMimeType` + `responseJsonSchema`
    auth_header = "x-goog-api-key"
    price_name = "google"  # the price table's name for this vendor

    def __init__(
        self,
        model: str | None = None,
        base_url: str | None = None,
        api_key: str | SecretStr | None = None,
        *,
        include_thoughts: bool = False,
        **settings: Unpack[HTTPSettings],
    ) -> None:
        self.include_thoughts = include_thoughts
        if not os.environ.get(GEMINI.vendor_key_env) and os.environ.get(GOOGLE_KEY.vendor_key_env):
            self.vendor = GOOGLE_KEY
        super().__init__(model, base_url, api_key, **settings)

    def _not_found_hint(self, base_url: str) -> str:
        if base_url.rstrip("/").endswith(("/v1beta", "/v1")):
            return f" (the base URL {base_url!r} names an API version; '/{API_VERSION}' is added)"
        return ""

    def _request_url(self, request: PreparedRequest, *, stream: bool) -> str:
        return model_url(self.base_url, request.model, stream=stream)

    def _body(self, request: PreparedRequest, *, stream: bool) -> dict[str, Any]:
        return gemini_body(request, origin=self.origin, include_thoughts=self.include_thoughts)

    # --- errors ----------------------------------------------------------------------------
    def _key_error(self, exc: LLMBadRequestError) -> LLMError:
        """Gemini answers a wrong key with 400 API_KEY_INVALID: that is an authentication error."""
        if "API_KEY_INVALID" not in (exc.body or ""):
            return exc
        return LLMAuthenticationError(
            f"{exc.message}. {self._settings.key_hint}",
            provider=exc.provider,
            url=exc.url,
            model=exc.model,
            status_code=exc.status_code,
            body=exc.body,
        )

    async def _answer(self, request: PreparedRequest) -> LLMResponse:
        try:
            return await super()._answer(request)
        except LLMBadRequestError as exc:
            raise self._key_error(exc) from None

    async def _server_events(
        self, request: PreparedRequest
    ) -> AsyncGenerator[ServerSentEvent, None]:
        try:
            async with aclosing(super()._server_events(request)) as events:
                async for event in events:
                    yield event
        except LLMBadRequestError as exc:
            raise self._key_error(exc) from None

    def _error_in_stream(self, error: Any, model: str) -> LLMError:
        error = error if isinstance(error, Mapping) else {"message": str(error)}
        status = str(error.get("status") or "error")
        limited = status == "RESOURCE_EXHAUSTED" or error.get("code") == 429
        cls = LLMRateLimitError if limited else LLMServerError
        return self._stream_error(error.get("message") or "", model, kind=status, error=cls)

    # --- replies ---------------------------------------------------------------------------
    def _reply(
        self,
        parts: list[dict[str, Any]],
        *,
        finish: Any,
        usage: Usage | None,
        model: str,
        blocked: Any = None,
        calls: list[ToolCall] | None = None,
    ) -> LLMResponse:
        text, reasoning, found = read_parts(parts)
        word = FINISH_REASONS.get(finish, finish) if finish else None
        vendor_word = finish
        if blocked:
            word, vendor_word = "content_filter", f"promptFeedback.blockReason={blocked}"
        kept = None
        if any(set(part) - _PLAIN for part in parts):
            kept = {"origin": self.origin, "parts": parts}
        response = LLMResponse.build(
            text,
            found if calls is None else calls,
            usage=usage,
            finish_reason=word,
            model=model,
            reasoning=reasoning,
            provider_data=kept,
        )
        if response.finish_reason == "content_filter":
            response = response.model_copy(update={"vendor_finish_reason": vendor_word})
        return response

    def _parse(self, data: dict[str, Any], request: PreparedRequest) -> LLMResponse:
        malformed = self._endpoint.malformed
        model = str(data.get("modelVersion") or request.model)
        usage = usage_of(data.get("usageMetadata"))
        candidate = _first_candidate(data)
        if candidate is None:
            blocked = (data.get("promptFeedback") or {}).get("blockReason")
            if not blocked:
                raise malformed(request.model, "missing 'candidates'", str(data))
            return self._reply([], finish=None, usage=usage, model=model, blocked=blocked)
        parts = _parts_of(candidate)
        for i, part in enumerate(parts):
            if problem := _part_problem(part, f"'candidates[0].content.parts[{i}]'"):
                raise malformed(request.model, problem, str(part))
        return self._reply(
            [dict(part) for part in parts],
            finish=candidate.get("finishReason"),
            usage=usage,
            model=model,
        )

    async def _events(self, request: PreparedRequest) -> AsyncGenerator[StreamEvent, None]:
        endpoint = self._endpoint
        parts: list[dict[str, Any]] = []
        calls: list[ToolCall] = []
        finish: Any = None
        blocked: Any = None
        usage: Usage | None = None
        model = request.model
        async with aclosing(self._server_events(request)) as events:
            async for event in events:
                chunk = endpoint.decode_event(event, request.model)
                if not isinstance(chunk, Mapping):
                    raise endpoint.malformed(request.model, "a chunk is not an object", event.data)
                if error := chunk.get("error"):
                    raise self._error_in_stream(error, request.model)
                model = str(chunk.get("modelVersion") or model)
                usage = usage_of(chunk.get("usageMetadata")) or usage
                candidate = _first_candidate(chunk)
                if candidate is None:
                    blocked = (chunk.get("promptFeedback") or {}).get("blockReason") or blocked
                    continue
                for part in _parts_of(candidate):
                    if problem := _part_problem(part):
                        raise endpoint.malformed(request.model, problem, event.data)
                    if delta := _add_part(parts, calls, dict(part)):
                        yield delta
                finish = candidate.get("finishReason") or finish
        if finish is None and not blocked:
            raise endpoint.malformed(request.model, "the stream ended before a finishReason")
        yield StreamCompleted(
            self._reply(
                parts, finish=finish, usage=usage, model=model, blocked=blocked, calls=calls
            )
        )


def _part_problem(part: Any, where: str = "a part") -> str | None:
    """What is wrong with a reply's part (None when nothing is)."""
    if not isinstance(part, Mapping):
        return f"{where} is not an object"
    call = part.get("functionCall")
    if call is not None and not (isinstance(call, Mapping) and call.get("name")):
        return f"{where} has a functionCall without a name"
    return None


def _add_part(
    parts: list[dict[str, Any]], calls: list[ToolCall], part: dict[str, Any]
) -> StreamEvent | None:
    """Record one streamed part; the event to yield for it (None when it shows nothing)."""
    call = part.get("functionCall")
    if isinstance(call, Mapping):  # a function call arrives whole, in one part
        parts.append(part)
        found = ToolCall.from_dict(call)
        call_id = found.id if found.id and found.id not in {c.id for c in calls} else None
        calls.append(ToolCall(found.name, found.arguments, call_id or new_call_id()))
        arguments = json.dumps(found.arguments, ensure_ascii=False)
        return ToolCallDelta(len(calls) - 1, calls[-1].id, found.name, arguments)
    text = part.get("text")
    last = parts[-1] if parts else None
    if (
        isinstance(text, str)
        and set(part) <= _PIECE
        and last is not None
        and set(last) <= _PIECE
        and isinstance(last.get("text"), str)
        and bool(last.get("thought")) == bool(part.get("thought"))
    ):
        last["text"] += text  # another piece of the same unsigned text
    else:
        parts.append(part)
    if not isinstance(text, str) or not text:
        return None
    return ReasoningDelta(text) if part.get("thought") else TextDelta(text)
