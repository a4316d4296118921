"""A local HTTP server that answers OpenAI Responses API requests with recorded response bodies.

Tests queue `Replay`s (a recorded JSON or SSE body, whole or cut into small chunks) and read what
the server was sent. Before answering, the server checks each `/responses` request against the
rules the real API answers 400/404 for (quoting its words), so a wrong conversion fails a test:
a `function_call_output` must answer an earlier `function_call` by `call_id`, every call must be
answered, a reasoning item must be followed by the item it belongs to, and with `store: false`
a reasoning item must carry its `encrypted_content` (the server kept nothing to look it up by).
It runs under uvicorn in a thread on 127.0.0.1, on a free port.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from server_thread import ServerThread
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

RESPONSES_PATH = "/v1/responses"
FINAL_EVENTS = ("response.completed", "response.incomplete")
OUTPUT_ITEMS = frozenset({"message", "function_call", "web_search_call", "reasoning"})


@dataclass
class Replay:
    """One answer: `body` bytes with `status`; `chunk` cuts the body into pieces of that many
    bytes, sent one by one (None: all at once)."""

    body: bytes
    status: int = 200
    content_type: str = "application/json"
    chunk: int | None = None
    headers: dict[str, str] = field(default_factory=dict)

    @classmethod
    def json(cls, data: Any, status: int = 200, **kwargs: Any) -> Replay:
        """A JSON body."""
        return cls(json.dumps(data).encode(), status, **kwargs)

    @classmethod
    def events(cls, events: list[tuple[str | None, dict[str, Any]]]) -> Replay:
        """An event stream of `(event name, data)` pairs (see `sse_events`)."""
        text = "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events)
        return cls(text.encode(), content_type="text/event-stream")

    @classmethod
    def recorded(cls, response: Any, chunk: int | None = None) -> Replay:
        """The body of a recorded response (`corpus.Response`), served as it was recorded."""
        kind = "text/event-stream" if response.is_sse else "application/json"
        return cls(response.body, response.status, kind, chunk)


def sse_events(response: Any) -> list[tuple[str | None, dict[str, Any]]]:
    """The `(event name, data)` pairs of a recorded event stream (`corpus.Response`)."""
    return [(event.event, event.json()) for event in response.sse_events()]


def final_response(response: Any) -> dict[str, Any]:
    """The whole `response` object of a recorded reply: its JSON body, or the `response` of an
    event stream's `response.completed` (or `response.incomplete`) event."""
    if not response.is_sse:
        return dict(response.json)
    finals = [data for name, data in sse_events(response) if name in FINAL_EVENTS]
    return dict(finals[-1]["response"])


@dataclass
class Received:
    """One request the server received."""

    path: str
    headers: dict[str, str]
    body: Any


class ResponsesReplayServer:
    """The replaying server; `url` is its root (`http://127.0.0.1:<port>`)."""

    def __init__(self) -> None:
        self.replays: deque[Replay] = deque()
        self.requests: list[Received] = []
        self.url = ""
        self._runner: ServerThread | None = None

    def reset(self) -> None:
        """Forget queued answers and received requests."""
        self.replays.clear()
        self.requests.clear()

    def queue(self, *replays: Replay) -> None:
        """Queue answers, given in order, one per request."""
        self.replays.extend(replays)

    def start(self) -> None:
        """Run uvicorn in a thread and wait until it listens."""
        app = Starlette(routes=[Route("/{path:path}", self._handle, methods=["POST"])])
        self._runner = ServerThread(app, "Responses replay")
        self.url = self._runner.start()

    def stop(self) -> None:
        """Ask uvicorn to exit and wait for its thread."""
        if self._runner is not None:
            self._runner.stop()

    async def _handle(self, request: Request) -> Response:
        raw = await request.body()
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        path = "/" + request.path_params["path"]
        self.requests.append(Received(path, dict(request.headers), body))
        if path != RESPONSES_PATH:
            return JSONResponse(api_error(f"Unknown path {path}", "not_found"), 404)
        problem = check_responses_request(body)
        if problem is not None:
            status, message = problem
            return JSONResponse(api_error(message, "invalid_request_error"), status)
        if not self.replays:
            return JSONResponse(api_error("replay server: nothing queued", "server_error"), 500)
        replay = self.replays.popleft()
        if replay.chunk is None:
            return Response(replay.body, replay.status, replay.headers, replay.content_type)
        return StreamingResponse(
            _pieces(replay.body, replay.chunk), replay.status, replay.headers,
            media_type=replay.content_type,
        )  # fmt: skip


async def _pieces(body: bytes, size: int) -> AsyncIterator[bytes]:
    for start in range(0, len(body), size):
        yield body[start : start + size]


def api_error(message: str, kind: str) -> dict[str, Any]:
    """An error body in OpenAI's shape."""
    return {"error": {"message": message, "type": kind, "param": None, "code": None}}


def check_responses_request(body: Any) -> tuple[int, str] | None:
    """None when `body` is a request the Responses API accepts, else (status, its words)."""
    if not isinstance(body, dict) or not body.get("model"):
        return 400, "Missing required parameter: 'model'."
    items = body.get("input")
    if not isinstance(items, list) or not items:
        return 400, "Missing required parameter: 'input'."
    if body.get("tool_choice") is not None and not body.get("tools"):
        return 400, "Tool choice must be specified with 'tools' parameter."
    for i, tool in enumerate(body.get("tools") or []):
        if tool.get("type") == "function" and (
            not tool.get("name") or (tool.get("parameters") or {}).get("type") != "object"
        ):
            return 400, f"Invalid 'tools[{i}]': a function needs a name and an object schema."
    stateless = body.get("store") is False
    open_calls: dict[str, int] = {}
    for i, item in enumerate(items):
        kind = item.get("type", "message")
        if kind == "reasoning":
            following = items[i + 1] if i + 1 < len(items) else {}
            after = following.get("type", "message")
            if after not in OUTPUT_ITEMS - {"reasoning"} or (
                after == "message" and following.get("role") != "assistant"
            ):
                return 400, (
                    f"Item '{item.get('id')}' of type 'reasoning' was provided without its "
                    "required following item."
                )
            if stateless and not item.get("encrypted_content"):
                return 404, (
                    f"Item with id '{item.get('id')}' not found. Items are not persisted when "
                    "`store` is set to false. Try again with `store` set to true, or remove this "
                    "item from your input."
                )
        elif kind == "function_call":
            if not item.get("call_id") or not item.get("name"):
                return 400, f"Missing required parameter: 'input[{i}].call_id' or 'name'."
            if not isinstance(item.get("arguments"), str):
                return 400, f"Invalid type for 'input[{i}].arguments': expected a string."
            open_calls[item["call_id"]] = i
        elif kind == "function_call_output":
            if open_calls.pop(item.get("call_id"), None) is None:
                return 400, (
                    "No tool call found for function call output with call_id "
                    f"{item.get('call_id')}."
                )
        elif kind == "message":
            if item.get("role") not in ("user", "assistant", "system", "developer"):
                return 400, f"Invalid value: '{item.get('role')}'. Supported values are: 'user'..."
            if open_calls and item.get("role") != "assistant":
                return 400, f"No tool output found for function call {next(iter(open_calls))}."
    if open_calls:
        return 400, f"No tool output found for function call {next(iter(open_calls))}."
    return None
