"""A local HTTP server that speaks the OpenAI Chat Completions and Anthropic Messages APIs.

Tests script what the "model" answers (`Reply` objects, in order) and read what the server was
sent. The server checks each request the way the vendors' APIs do (tool results answering tool
calls by id, Anthropic's alternating turns with tool results first, required headers and
fields) and answers 400 in the vendor's error shape when a request breaks a rule, so a wrong
wire conversion fails a test. It runs under uvicorn in a thread on 127.0.0.1, on a free port.
"""

from __future__ import annotations

import json
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import anyio
from server_thread import ServerThread
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from jianmu_bt.llm import RetryPolicy

OPENAI_PATH = "/v1/chat/completions"
ANTHROPIC_PATH = "/v1/messages"

# Short waits so retry tests stay fast; the deadline still bounds every call.
FAST_RETRY = RetryPolicy(max_attempts=3, initial_delay=0.01, max_delay=0.05, jitter=0, deadline=20)


@dataclass
class Reply:
    """One scripted HTTP answer.

    `json`/`text` give a plain body, `sse` a list of `(event name or None, data)` server-sent
    events, `raw` a body sent as it is in these pieces (a recorded stream, `content_type` its
    type). `delay` waits before answering (watching for the client to hang up); `hang_after`
    stops an event stream after that many events and waits until the client hangs up.
    """

    status: int = 200
    json: Any = None
    text: str | None = None
    sse: list[tuple[str | None, str]] | None = None
    raw: list[bytes] | None = None
    headers: dict[str, str] = field(default_factory=dict)
    content_type: str = "application/json"
    delay: float = 0.0
    hang_after: int | None = None


@dataclass
class Recorded:
    """One request the server received."""

    path: str
    headers: dict[str, str]
    body: Any
    at: float
    client_port: int


class FakeLLMServer:
    """The scripted server; `url` is its root (`http://127.0.0.1:<port>`)."""

    def __init__(self) -> None:
        self.replies: deque[Reply] = deque()
        self.requests: list[Recorded] = []
        self.events: list[str] = []
        self.api_key: str | None = None
        self.url = ""
        self._runner: ServerThread | None = None

    # --- scripting -------------------------------------------------------------------------
    def reset(self) -> None:
        """Forget replies, requests and events; accept any key."""
        self.replies.clear()
        self.requests.clear()
        self.events.clear()
        self.api_key = None

    def script(self, *replies: Reply) -> None:
        """Queue replies, answered in order, one per request."""
        self.replies.extend(replies)

    # --- lifecycle ---------------------------------------------------------------------------
    def start(self) -> None:
        """Run uvicorn in a thread and wait until it listens."""
        app = Starlette(routes=[Route("/{path:path}", self._handle, methods=["GET", "POST"])])
        self._runner = ServerThread(app, "fake LLM")
        self.url = self._runner.start()

    def stop(self) -> None:
        """Ask uvicorn to exit and wait for its thread."""
        if self._runner is not None:
            self._runner.stop()

    # --- serving -----------------------------------------------------------------------------
    async def _handle(self, request: Request) -> Response:
        raw = await request.body()
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        path = "/" + request.path_params["path"]
        port = request.client.port if request.client else 0
        self.requests.append(Recorded(path, dict(request.headers), body, time.monotonic(), port))
        if path == OPENAI_PATH:
            problem = self._check_openai(request, body)
            make_error = openai_error
        elif path == ANTHROPIC_PATH:
            problem = self._check_anthropic(request, body)
            make_error = anthropic_error
        else:
            return JSONResponse(openai_error(f"Unknown path {path}", "not_found"), 404)
        if problem is not None:
            status, message = problem
            return JSONResponse(make_error(message, "invalid_request_error"), status)
        if not self.replies:
            return JSONResponse(make_error("fake server: no reply scripted", "api_error"), 500)
        reply = self.replies.popleft()
        if reply.delay and not await self._wait(request, reply.delay):
            return Response(status_code=499)
        if reply.sse is not None:
            return StreamingResponse(
                self._stream(request, reply), status_code=reply.status,
                headers=reply.headers, media_type="text/event-stream",
            )  # fmt: skip
        if reply.raw is not None:
            return StreamingResponse(
                self._raw(reply.raw), status_code=reply.status,
                headers=reply.headers, media_type=reply.content_type,
            )  # fmt: skip
        if reply.text is not None:
            return Response(reply.text, reply.status, reply.headers, media_type=reply.content_type)
        return JSONResponse(reply.json, reply.status, reply.headers)

    async def wait_for_event(self, event: str, within: float = 30.0) -> None:
        """Wait until the server records `event` ("disconnected", "stream closed").

        `within` only guards against a hang; it is no bound on how fast the client is.
        """
        with anyio.fail_after(within):
            while event not in self.events:
                await anyio.sleep(0.02)

    async def _wait(self, request: Request, seconds: float) -> bool:
        """Sleep `seconds`; False (and a "disconnected" event) when the client hangs up first."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if await request.is_disconnected():
                self.events.append("disconnected")
                return False
            await anyio.sleep(0.02)
        return True

    async def _raw(self, pieces: list[bytes]):  # type: ignore[no-untyped-def]
        try:
            for piece in pieces:
                yield piece
                await anyio.sleep(0)
        finally:
            self.events.append("stream closed")

    async def _stream(self, request: Request, reply: Reply):  # type: ignore[no-untyped-def]
        try:
            for number, (event, data) in enumerate(reply.sse or []):
                if reply.hang_after is not None and number == reply.hang_after:
                    await self._wait(request, 30)
                    return
                prefix = f"event: {event}\n" if event else ""
                yield f"{prefix}data: {data}\n\n"
                await anyio.sleep(0)
        finally:
            self.events.append("stream closed")

    def _check_openai(self, request: Request, body: Any) -> tuple[int, str] | None:
        if self.api_key is not None:
            given = request.headers.get("authorization", "")
            if given != f"Bearer {self.api_key}":
                # Real servers quote the key they were given; clients must redact it.
                return 401, f"Incorrect API key provided: {given.removeprefix('Bearer ')}"
        return check_openai_request(body)

    def _check_anthropic(self, request: Request, body: Any) -> tuple[int, str] | None:
        if self.api_key is not None and request.headers.get("x-api-key") != self.api_key:
            return 401, f"invalid x-api-key: {request.headers.get('x-api-key')}"
        if not request.headers.get("anthropic-version"):
            return 400, "anthropic-version: header is required"
        return check_anthropic_request(body)


def openai_error(message: str, kind: str) -> dict[str, Any]:
    """An error body in OpenAI's shape."""
    return {"error": {"message": message, "type": kind, "code": None}}


def anthropic_error(message: str, kind: str) -> dict[str, Any]:
    """An error body in Anthropic's shape."""
    return {"type": "error", "error": {"type": kind, "message": message}}


# --- request checks (the rules the real APIs enforce) ---------------------------------------
def check_openai_request(body: Any) -> tuple[int, str] | None:
    """None when `body` is a valid Chat Completions request, else (400, reason)."""
    if not isinstance(body, dict) or not body.get("model") or not body.get("messages"):
        return 400, "'model' and 'messages' are required"
    if "tool_choice" in body and not body.get("tools"):
        return 400, "tool_choice is only allowed when tools are specified"
    for tool in body.get("tools") or []:
        function = tool.get("function") or {}
        if tool.get("type") != "function" or not function.get("name"):
            return 400, f"invalid tool: {tool}"
        if function.get("parameters", {}).get("type") != "object":
            return 400, f"tool {function['name']} parameters must be an object schema"
    open_calls: set[str] = set()
    for i, message in enumerate(body["messages"]):
        role = message.get("role")
        if role == "tool":
            if set(message) - {"role", "content", "tool_call_id"}:
                return 400, f"messages[{i}]: unexpected keys in a tool message"
            if message.get("tool_call_id") not in open_calls:
                return 400, (
                    f"messages[{i}]: messages with role 'tool' must be a response to a "
                    "preceding message with 'tool_calls'"
                )
            open_calls.discard(message["tool_call_id"])
            continue
        if open_calls:
            return 400, f"messages[{i}]: tool_call_ids did not have response messages"
        if role == "assistant":
            if set(message) & {"reasoning", "provider_data"}:
                return 400, f"messages[{i}]: unexpected keys in an assistant message"
            thinking = str(body["model"]).startswith(THINKING_MODELS)
            if thinking and message.get("tool_calls") and not message.get("reasoning_content"):
                # DeepSeek's thinking mode: the tool-call turn must carry its reasoning back.
                return 400, (
                    f"messages[{i}]: Missing `reasoning_content` field in the assistant message "
                    "with tool calls (thinking mode)"
                )
            for call in message.get("tool_calls") or []:
                json.loads(call["function"]["arguments"])  # must be a JSON string
                open_calls.add(call["id"])
                signature = ((call.get("extra_content") or {}).get("google") or {}).get(
                    "thought_signature"
                )
                if str(body["model"]).startswith("gemini-3") and not signature:
                    return 400, (
                        f"messages[{i}]: Function call is missing a thought_signature in "
                        "functionCall parts"
                    )
        elif role not in ("system", "user"):
            return 400, f"messages[{i}]: invalid role {role!r}"
    return None


THINKING_MODELS = ("deepseek-reasoner", "deepseek-thinking")
"""Model names the fake server treats as DeepSeek's thinking mode."""


THINKING_BLOCKS = ("thinking", "redacted_thinking")


def check_anthropic_request(body: Any) -> tuple[int, str] | None:
    """None when `body` is a valid Messages request, else (400, reason)."""
    if not isinstance(body, dict) or not body.get("model") or not body.get("messages"):
        return 400, "model: 'model' and 'messages' are required"
    if not isinstance(body.get("max_tokens"), int):
        return 400, "max_tokens: Field required"
    for tool in body.get("tools") or []:
        if not tool.get("name") or tool.get("input_schema", {}).get("type") != "object":
            return 400, f"tools: invalid tool {tool}"
    expected_results: list[str] = []
    previous = None
    for i, message in enumerate(body["messages"]):
        role = message.get("role")
        if role not in ("user", "assistant"):
            return 400, f"messages.{i}.role: Input should be 'user' or 'assistant'"
        if i == 0 and role != "user":
            return 400, "messages: first message must use the user role"
        if role == previous:
            return 400, f"messages.{i}: roles must alternate between user and assistant"
        previous = role
        blocks = message.get("content")
        if isinstance(blocks, str):
            blocks = [{"type": "text", "text": blocks}]
        if not blocks:
            return 400, f"messages.{i}: content must be non-empty"
        kinds = [block.get("type") for block in blocks]
        for block in blocks:
            if block.get("type") == "text" and not block.get("text"):
                return 400, f"messages.{i}: text content blocks must be non-empty"
        results = [b["tool_use_id"] for b in blocks if b.get("type") == "tool_result"]
        if role == "user":
            if expected_results:
                leading = kinds[: len(expected_results)]
                if leading != ["tool_result"] * len(expected_results):
                    return 400, f"messages.{i}: tool_result blocks must come first"
                if sorted(results) != sorted(expected_results):
                    return 400, (
                        f"messages.{i}: tool_use ids were found without tool_result blocks "
                        f"immediately after: {sorted(set(expected_results) - set(results))}"
                    )
            elif results:
                return 400, f"messages.{i}: unexpected tool_use_id found in tool_result blocks"
            expected_results = []
        else:
            if expected_results:
                return 400, f"messages.{i}: tool_use blocks were not answered"
            thinking = (body.get("thinking") or {}).get("type") == "enabled"
            if thinking and "tool_use" in kinds and kinds[0] not in THINKING_BLOCKS:
                # Extended thinking with tools: the assistant turn must start with its thinking.
                return 400, (
                    f"messages.{i}.content.0.type: Expected `thinking` or `redacted_thinking`, "
                    f"but found `{kinds[0]}`. When `thinking` is enabled, a final `assistant` "
                    "message must start with a thinking block."
                )
            for block in blocks:
                if block.get("type") == "thinking" and not block.get("signature"):
                    return 400, f"messages.{i}: a thinking block needs its signature"
                if block.get("type") == "tool_use":
                    if not block.get("id") or not isinstance(block.get("input"), dict):
                        return 400, f"messages.{i}: tool_use needs an id and an object input"
                    expected_results.append(block["id"])
    return None
