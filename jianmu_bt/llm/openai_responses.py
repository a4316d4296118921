"""The OpenAI Responses API (`POST {base_url}/responses`), used statelessly.

Each request carries the whole conversation as `input` items and asks for `store: false` with
`include: ["reasoning.encrypted_content"]`, so a reasoning model's reasoning carries over between
turns without any state on the server: the reply's output items (reasoning with its encrypted
content, messages, function calls) are kept in the assistant message's `provider_data` and sent
back to the same origin on the next turn (see `jianmu_bt.llm.responses_wire`). Another provider
(a fallback, a hand-off) sends that message's text and tool calls alone.

Settings come from the arguments, else `JIANMU_LLM_BASE_URL` / `OPENAI_BASE_URL`,
`JIANMU_LLM_API_KEY` (or `OPENAI_API_KEY` for OpenAI's own host) and `JIANMU_LLM_MODEL`, as for
the Chat Completions provider. Readable reasoning comes back only when asked for, e.g.
`LLMOptions(extra={"reasoning": {"effort": "low", "summary": "auto"}})`.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping, Sequence
from contextlib import aclosing
from typing import Any, Unpack

from pydantic import SecretStr

from jianmu_bt.llm.base import LLMResponse, StreamCompleted, StreamEvent
from jianmu_bt.llm.errors import LLMError, LLMRateLimitError, LLMServerError
from jianmu_bt.llm.http_provider import HTTPProvider, HTTPSettings, VendorSettings
from jianmu_bt.llm.request import PreparedRequest
from jianmu_bt.llm.responses_wire import (
    SEPARATOR,
    finish_of,
    output_text,
    reasoning_text,
    refusal_text,
    responses_body,
    round_trip_data,
    usage_of,
)
from jianmu_bt.llm.streaming import StreamAssembler
from jianmu_bt.tools import ToolCall

OPENAI_RESPONSES = VendorSettings(
    name="openai_responses",
    default_base_url="https://api.openai.com/v1",
    base_url_envs=("JIANMU_LLM_BASE_URL", "OPENAI_BASE_URL"),
    vendor_base_url_env="OPENAI_BASE_URL",
    vendor_key_env="OPENAI_API_KEY",
    generic_key_env="JIANMU_LLM_API_KEY",
    model_envs=("JIANMU_LLM_MODEL",),
)

_DONE_EVENTS = ("response.completed", "response.incomplete")
_REASONING_DELTAS = ("response.reasoning_summary_text.delta", "response.reasoning_text.delta")


class _Pieces:
    """Streamed pieces of one kind of text, joined as the whole reply's reading joins them: the
    first piece of another item (or summary part) than the last starts with `SEPARATOR`."""

    def __init__(self) -> None:
        self.key: Any = None
        self.seen = False

    def piece(self, text: str, key: Any) -> str:
        """`text`, a piece of the item (or part) `key`, as the joined text continues with it."""
        if not text:
            return ""
        if self.seen and key != self.key:
            text = SEPARATOR + text
        self.seen, self.key = True, key
        return text


class OpenAIResponsesProvider(HTTPProvider):
    """An LLM behind the OpenAI Responses API (`POST {base_url}/responses`).

    `store` is sent as the request's `store` (default False: stateless, every turn sends the
    whole conversation, and reasoning travels in `encrypted_content`); with `store=True` the kept
    output items go back with their ids. Typed outputs use `text.format` (`json_schema`). The
    other settings are `HTTPProvider`'s.
    """

    vendor = OPENAI_RESPONSES
    path = "/responses"
    native_output = True  # `text: {format: {type: "json_schema", ...}}`
    auth_header = "authorization"
    price_name = "openai"  # the price table's name for this vendor
    auth_prefix = "Bearer "

    def __init__(
        self,
        model: str | None = None,
        base_url: str | None = None,
        api_key: str | SecretStr | None = None,
        *,
        store: bool = False,
        **settings: Unpack[HTTPSettings],
    ) -> None:
        self.store = store
        super().__init__(model, base_url, api_key, **settings)

    def _not_found_hint(self, base_url: str) -> str:
        if base_url.endswith("/v1"):
            return ""
        return f" (the Responses API is served under '/v1': is {base_url!r} missing it?)"

    def _body(self, request: PreparedRequest, *, stream: bool) -> dict[str, Any]:
        return responses_body(request, stream=stream, origin=self.origin, store=self.store)

    def _parse(self, data: dict[str, Any], request: PreparedRequest) -> LLMResponse:
        return self._reply(data, request)

    def _reply(
        self,
        data: Mapping[str, Any],
        request: PreparedRequest,
        streamed: Sequence[Mapping[str, Any]] = (),
    ) -> LLMResponse:
        """The reply a whole response object describes (`streamed`: the output items a stream
        delivered, used when its final response object lists none)."""
        malformed = self._endpoint.malformed
        output = data.get("output")
        if data.get("status") == "failed" or (data.get("error") and not output):
            raise self._failure(data.get("error"), request.model, "a failed response", False)
        if not output and streamed:
            output = list(streamed)
        if not isinstance(output, list):
            raise malformed(request.model, "missing 'output' (a list of items)", str(data))
        calls = []
        for i, item in enumerate(output):
            if not isinstance(item, Mapping) or not item.get("type"):
                raise malformed(request.model, f"'output[{i}]' is not a typed item", str(item))
            if item["type"] != "function_call":
                continue  # server tools' items (web_search_call, ...) are not ours to run
            if not item.get("name"):
                problem = f"'output[{i}]' (function_call) has no name"
                raise malformed(request.model, problem, str(item))
            call_id = item.get("call_id") or item.get("id")
            raw = {"name": item["name"], "arguments": item.get("arguments"), "id": call_id}
            calls.append(ToolCall.from_dict(raw))
        return LLMResponse.build(
            output_text(output),
            calls,
            usage=usage_of(data.get("usage")),
            finish_reason=finish_of(data),
            model=data.get("model") or request.model,
            reasoning=reasoning_text(output),
            refusal=refusal_text(output) or None,
            provider_data=round_trip_data(self.origin, output),
        )

    async def _events(self, request: PreparedRequest) -> AsyncGenerator[StreamEvent, None]:
        endpoint = self._endpoint
        assembler = StreamAssembler()
        answer, refusal, reasoning = _Pieces(), _Pieces(), _Pieces()
        items: dict[int, dict[str, Any]] = {}  # output index -> the item as `output_item.done`
        with_arguments: set[Any] = set()  # output indexes whose arguments came in pieces
        final: Mapping[str, Any] | None = None
        async with aclosing(self._server_events(request)) as events:
            async for event in events:
                payload = endpoint.decode_event(event, request.model)
                if not isinstance(payload, Mapping):
                    raise endpoint.malformed(request.model, "an event is not an object", event.data)
                kind = payload.get("type") or event.event
                index = payload.get("output_index")
                delta = str(payload.get("delta") or "")
                if kind == "response.output_text.delta":
                    if text := assembler.add_text(answer.piece(delta, index)):
                        yield text
                elif kind == "response.refusal.delta":
                    if words := assembler.add_refusal(refusal.piece(delta, index)):
                        yield words
                elif kind in _REASONING_DELTAS:
                    part = payload.get("summary_index", payload.get("content_index"))
                    if thought := assembler.add_reasoning(
                        reasoning.piece(delta, (index, kind, part))
                    ):
                        yield thought
                elif kind == "response.function_call_arguments.delta":
                    with_arguments.add(index)
                    yield assembler.add_tool_fragment(index, arguments=delta)
                elif kind in ("response.output_item.added", "response.output_item.done"):
                    item = dict(payload.get("item") or {})
                    if kind.endswith("done"):
                        items[len(items) if index is None else int(index)] = item
                    # A call's arguments come in deltas, or whole with the item (some servers).
                    if item.get("type") == "function_call" and index not in with_arguments:
                        if item.get("arguments"):
                            with_arguments.add(index)
                        yield assembler.add_tool_fragment(
                            index,
                            id=item.get("call_id") or item.get("id"),
                            name=item.get("name"),
                            arguments=item.get("arguments") or None,
                        )
                elif kind in _DONE_EVENTS:
                    final = payload.get("response")
                    if not isinstance(final, Mapping):
                        problem = f"the {kind!r} event carries no 'response' object"
                        raise endpoint.malformed(request.model, problem, event.data)
                    break
                elif kind == "response.failed":
                    failed = payload.get("response")
                    error = failed.get("error") if isinstance(failed, Mapping) else None
                    raise self._failure(error, request.model, "a failed response")
                elif kind == "error":
                    error = payload.get("error") if "error" in payload else payload
                    raise self._failure(error, request.model, "an error")
        if final is None:
            raise endpoint.malformed(
                request.model,
                "the stream ended before 'response.completed' (or 'response.incomplete')",
            )
        streamed = [items[i] for i in sorted(items)]
        yield StreamCompleted(self._reply(final, request, streamed))

    def _failure(self, error: Any, model: str, kind: str, streamed: bool = True) -> LLMError:
        """The error for a failed response or an `error` event: a rate limit is an
        LLMRateLimitError, anything else an LLMServerError (the server's words redacted)."""
        error = error if isinstance(error, Mapping) else {"message": str(error or "")}
        code = str(error.get("code") or error.get("type") or "")
        cls = LLMRateLimitError if "rate_limit" in code else LLMServerError
        said = self._endpoint.redact(str(error.get("message") or code or "no reason given"))
        label = f"{kind} ({code})" if code else kind
        where = "inside the stream from" if streamed else "in the reply to"
        name = self.vendor.name
        return cls(
            f"{name}: the server reported {label} {where} POST {self.url} for model {model!r}: "
            f"{said}",
            provider=name,
            url=self.url,
            model=model,
        )
