"""A local HTTP server that speaks the Gemini API's `generateContent` / `streamGenerateContent`.

Tests queue replies (`GeminiReply`: a JSON body, raw bytes such as a recorded event stream, or
events built from dicts), the server answers requests in order and records what it was sent. A
body can be cut into pieces of `chunk_size` bytes, so the client's SSE parsing meets chunk
boundaries anywhere.

The server checks each request the way the Gemini API does and answers 400 in Google's error
shape when one breaks a rule, so a wrong wire conversion fails a test:

- the key comes in the `x-goog-api-key` header (a wrong one gets 400 API_KEY_INVALID), a stream
  is asked for with `?alt=sse`;
- every content has a role (`user` / `model`) and parts, each part one kind of data;
- a content of `functionResponse` parts follows a `model` content with as many `functionCall`
  parts, answering them by `id` when the calls had ids;
- thought signatures: every signature this server handed out on a `functionCall` part must come
  back exactly on that call; a signature it never issued is refused (except Google's documented
  `skip_thought_signature_validator`); with `require_signatures` (Gemini 3's rule) the first
  function call of each model content must carry one;
- tool schemas: `parameters` and `parametersJsonSchema` are exclusive, no `$schema`, and a `$ref`
  has no sibling but `description` / `default` (Gemini's own error text).

It runs under uvicorn in a thread on 127.0.0.1, on a free port.
"""

from __future__ import annotations

import base64
import json
import re
from collections import deque
from collections.abc import AsyncIterator, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio
from server_thread import ServerThread
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

SKIP_SIGNATURE = "skip_thought_signature_validator"
_PATH = re.compile(
    r"^/v1beta/models/(?P<model>[^/:]+):(?P<method>generateContent|streamGenerateContent)$"
)
_DATA = (
    "text", "inlineData", "fileData", "functionCall", "functionResponse",
    "executableCode", "codeExecutionResult",
)  # fmt: skip
_STATUS = {400: "INVALID_ARGUMENT", 403: "PERMISSION_DENIED", 404: "NOT_FOUND"}
_STATUS |= {429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE"}


@dataclass
class GeminiReply:
    """One scripted answer: `json` (a JSON body), `body` (raw bytes, e.g. a recorded stream) or
    `sse` (dicts, each sent as one `data:` event); `chunk_size` cuts the body into pieces."""

    status: int = 200
    json: Any = None
    body: bytes | None = None
    sse: list[Any] | None = None
    content_type: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    chunk_size: int | None = None

    def payload(self) -> tuple[bytes, str]:
        """The body's bytes and content type."""
        if self.sse is not None:
            text = "".join(f"data: {json.dumps(event)}\r\n\r\n" for event in self.sse)
            return text.encode(), self.content_type or "text/event-stream"
        if self.body is not None:
            return self.body, self.content_type or "application/json; charset=UTF-8"
        return json.dumps(self.json).encode(), self.content_type or "application/json"


@dataclass
class Received:
    """One request the server received."""

    path: str
    query: str
    model: str
    stream: bool
    headers: dict[str, str]
    body: Any


def google_error(status: int, message: str, reason: str | None = None) -> dict[str, Any]:
    """An error body in Google's shape (`{"error": {"code", "message", "status"}}`)."""
    error: dict[str, Any] = {"code": status, "message": message, "status": _STATUS.get(status)}
    if reason:
        error["details"] = [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": reason}]
    return {"error": error}


class GeminiReplayServer:
    """The scripted Gemini API; `url` is its root (`http://127.0.0.1:<port>`)."""

    def __init__(self) -> None:
        self.replies: deque[GeminiReply] = deque()
        self.requests: list[Received] = []
        self.api_key: str | None = None
        self.require_signatures = False
        self.issued: dict[str, str] = {}  # functionCall key -> the signature handed out with it
        self.url = ""
        self._runner: ServerThread | None = None

    def reset(self) -> None:
        """Forget replies, requests and issued signatures; accept any key."""
        self.replies.clear()
        self.requests.clear()
        self.issued.clear()
        self.api_key = None
        self.require_signatures = False

    def script(self, *replies: GeminiReply) -> None:
        """Queue replies, answered in order, one per request."""
        self.replies.extend(replies)

    def start(self) -> None:
        """Run uvicorn in a thread and wait until it listens."""
        app = Starlette(routes=[Route("/{path:path}", self._handle, methods=["POST"])])
        self._runner = ServerThread(app, "Gemini replay")
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
        match = _PATH.match(path)
        stream = bool(match and match["method"] == "streamGenerateContent")
        received = Received(
            path, request.url.query, match["model"] if match else "", stream,
            dict(request.headers), body,
        )  # fmt: skip
        self.requests.append(received)
        if match is None:
            return JSONResponse(google_error(404, f"Unknown path {path}"), 404)
        if self.api_key is not None and request.headers.get("x-goog-api-key") != self.api_key:
            message = "API key not valid. Please pass a valid API key."
            return JSONResponse(google_error(400, message, "API_KEY_INVALID"), 400)
        if stream and request.url.query != "alt=sse":
            return JSONResponse(google_error(400, "streaming needs alt=sse here"), 400)
        if problem := self.check(body):
            return JSONResponse(google_error(400, problem), 400)
        if not self.replies:
            return JSONResponse(google_error(500, "replay server: no reply scripted"), 500)
        reply = self.replies.popleft()
        data, content_type = reply.payload()
        if reply.status < 300:
            self._remember_signatures(data)
        headers = {"content-type": content_type, **reply.headers}
        return StreamingResponse(_pieces(data, reply.chunk_size), reply.status, headers)

    def _remember_signatures(self, data: bytes) -> None:
        text = data.decode("utf-8", "replace")
        documents = [line[5:] for line in text.splitlines() if line.startswith("data:")] or [text]
        for document in documents:
            try:
                reply = json.loads(document)
            except ValueError:
                continue
            candidates = reply.get("candidates") if isinstance(reply, dict) else None
            for candidate in candidates or []:
                for part in (candidate.get("content") or {}).get("parts") or []:
                    if "functionCall" in part and part.get("thoughtSignature"):
                        self.issued[_call_key(part["functionCall"])] = part["thoughtSignature"]

    # --- the rules the real API enforces ---------------------------------------------------
    def check(self, body: Any) -> str | None:
        """None when `body` is a request the Gemini API accepts, else its reason to refuse it."""
        if not isinstance(body, dict) or not isinstance(body.get("contents"), list):
            return "contents: a list of contents is required"
        if "model" in body or "messages" in body:
            return 'Invalid JSON payload received. Unknown name "model"/"messages"'
        issued = set(self.issued.values())
        previous_calls: list[dict[str, Any]] = []
        for i, content in enumerate(body["contents"]):
            where = f"contents[{i}]"
            if not isinstance(content, dict):
                return f"{where}: a content is an object"
            parts = content.get("parts")
            if content.get("role") not in ("user", "model") or not parts:
                return f"{where}: needs role user or model and non-empty parts"
            for j, part in enumerate(parts):
                if sum(key in part for key in _DATA) != 1:
                    return f"{where}.parts[{j}]: a part holds exactly one kind of data"
            calls = [p for p in parts if "functionCall" in p]
            answers = [p["functionResponse"] for p in parts if "functionResponse" in p]
            if answers:
                if len(answers) != len(previous_calls):
                    return (
                        "Please ensure that the number of function response parts is equal to "
                        "the number of function call parts of the function call turn."
                    )
                ids = [c["functionCall"].get("id") for c in previous_calls]
                answered = sorted(str(a.get("id")) for a in answers)
                if any(ids) and sorted(map(str, ids)) != answered:
                    return f"{where}: functionResponse.id does not match functionCall.id"
                for answer in answers:
                    if not answer.get("name") or not isinstance(answer.get("response"), dict):
                        return f"{where}: a functionResponse needs a name and a response object"
            if problem := self._check_signatures(where, calls, issued):
                return problem
            previous_calls = calls if content["role"] == "model" else []
        for tool in body.get("tools") or []:
            for declaration in tool.get("functionDeclarations") or []:
                if problem := _check_declaration(declaration):
                    return problem
        generation = body.get("generationConfig") or {}
        if "responseJsonSchema" in generation:
            mime = generation.get("responseMimeType")
            if mime != "application/json" or "responseSchema" in generation:
                return "responseJsonSchema needs responseMimeType application/json only"
            schema = generation["responseJsonSchema"]
            return check_schema("generationConfig.responseJsonSchema", schema)
        return None

    def _check_signatures(
        self, where: str, calls: list[dict[str, Any]], issued: set[str]
    ) -> str | None:
        for k, part in enumerate(calls):
            signature = part.get("thoughtSignature")
            expected = self.issued.get(_call_key(part["functionCall"]))
            if signature == SKIP_SIGNATURE:
                continue
            if expected is not None and signature != expected:
                return f"{where}: Function call is missing a thought_signature (or changed it)"
            if signature is not None and signature not in issued:
                return f"{where}: Corrupted thought signature."
            if self.require_signatures and k == 0 and signature is None:
                return f"{where}: Function call is missing a thought_signature"
        return None


def _call_key(call: Mapping[str, Any]) -> str:
    return json.dumps([call.get("name"), call.get("args") or {}], sort_keys=True)


def _check_declaration(declaration: Mapping[str, Any]) -> str | None:
    name = declaration.get("name")
    if not name:
        return "function_declarations: a declaration needs a name"
    if "parameters" in declaration and "parametersJsonSchema" in declaration:
        return f"{name}: parameters and parametersJsonSchema are mutually exclusive"
    schema = declaration.get("parametersJsonSchema")
    return check_schema(f"{name}.parametersJsonSchema", schema) if schema is not None else None


def check_schema(where: str, node: Any) -> str | None:
    if isinstance(node, list):
        return next((p for item in node if (p := check_schema(where, item))), None)
    if not isinstance(node, Mapping):
        return None
    if "$schema" in node:
        return f"Invalid JSON payload received. Unknown name \"$schema\" at '{where}'"
    if "$ref" in node and set(node) - {"$ref", "description", "default"}:
        return (
            f"{where}: $ref '{node['$ref']}' was set alongside unsupported fields. If a schema "
            "node has $ref set, then only description and default can be set alongside it"
        )
    for key, value in node.items():
        if key in ("enum", "default", "required", "examples"):
            continue
        if problem := check_schema(where, value):
            return problem
    return None


async def _pieces(data: bytes, size: int | None) -> AsyncIterator[bytes]:
    step = size or len(data) or 1
    for start in range(0, len(data), step):
        yield data[start : start + step]
        await anyio.sleep(0)


def replies_from(interactions: Iterable[Any], chunk_size: int | None = None) -> list[GeminiReply]:
    """Replies serving recorded responses (`corpus.Interaction`s) byte for byte."""
    replies = []
    for interaction in interactions:
        response = interaction.response
        replies.append(
            GeminiReply(
                status=response.status,
                body=response.body,
                content_type=response.header("content-type"),
                chunk_size=chunk_size,
            )
        )
    return replies


# --- comparing and reshaping recorded traffic --------------------------------------------------
def signatures_as_bytes(value: Any) -> Any:
    """`value` with each thoughtSignature decoded (standard or URL-safe base64 alike)."""
    if isinstance(value, list):
        return [signatures_as_bytes(item) for item in value]
    if not isinstance(value, dict):
        return value
    out = {key: signatures_as_bytes(item) for key, item in value.items()}
    if (
        isinstance(value.get("thoughtSignature"), str)
        and value["thoughtSignature"] != SKIP_SIGNATURE
    ):
        out["thoughtSignature"] = base64.urlsafe_b64decode(
            value["thoughtSignature"].replace("+", "-").replace("/", "_")
        )
    return out


def without_payloads(contents: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Contents with function results reduced to name and id (clients word results apart)."""
    out = []
    for content in contents:
        parts = []
        for part in content["parts"]:
            if "functionResponse" in part:
                answer = part["functionResponse"]
                part = {"functionResponse": {k: answer[k] for k in ("name", "id") if k in answer}}
            parts.append(part)
        out.append({"role": content["role"], "parts": parts})
    return signatures_as_bytes(out)


def stream_of(reply: dict[str, Any], pieces: int = 3) -> list[dict[str, Any]]:
    """A JSON reply as the API streams it: text in pieces, a text part's signature on a closing
    empty part, function calls whole, the finish reason and usage on the last chunk."""
    candidate = reply["candidates"][0]
    chunks: list[dict[str, Any]] = []

    def chunk(part: dict[str, Any]) -> None:
        content = {"parts": [part], "role": "model"}
        chunks.append(
            {
                "candidates": [{"content": content, "index": 0}],
                "modelVersion": reply.get("modelVersion"),
            }
        )

    for part in candidate["content"]["parts"]:
        if "text" not in part:
            chunk(part)
            continue
        size = max(1, -(-len(part["text"]) // pieces))
        for start in range(0, len(part["text"]), size):
            chunk(
                {"text": part["text"][start : start + size]}
                | ({"thought": True} if part.get("thought") else {})
            )
        if "thoughtSignature" in part:
            chunk({"text": "", "thoughtSignature": part["thoughtSignature"]})
    chunks[-1]["candidates"][0]["finishReason"] = candidate["finishReason"]
    chunks[-1]["usageMetadata"] = reply["usageMetadata"]
    return chunks
