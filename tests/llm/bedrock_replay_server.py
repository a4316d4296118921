"""A local HTTP server that answers Bedrock Converse requests with recorded (or scripted) bodies.

Tests queue `Reply` objects (a JSON body, or the raw bytes of a binary AWS event stream, served
whole or cut into small chunks) and read what the server was sent. Like the real service, the
server checks each request: the URL (`/model/{modelId}/converse[-stream]`), the Converse rules
(alternating turns starting with a user turn, every toolUse answered by a toolResult in the next
user turn, toolConfig present whenever tool blocks are, no blank text blocks, no unknown
fields), and the authentication: a SigV4 signature recomputed with botocore from the request as
it arrived (`credentials`), or a Bedrock API key (`bearer_token`). A broken rule is answered 400
`ValidationException` (403 for authentication) in Bedrock's shape, so a wrong conversion fails
the test that made it. It runs under uvicorn in a thread on 127.0.0.1, on a free port.
"""

from __future__ import annotations

import json
import struct
import zlib
from collections import deque
from collections.abc import AsyncIterator, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

import anyio
from server_thread import ServerThread
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

EVENT_STREAM = "application/vnd.amazon.eventstream"
BLOCK_KEYS = {
    "text",
    "image",
    "toolUse",
    "toolResult",
    "reasoningContent",
    "citationsContent",
    "document",
    "cachePoint",
    "guardContent",
}
BODY_KEYS = {
    "messages",
    "system",
    "inferenceConfig",
    "toolConfig",
    "guardrailConfig",
    "additionalModelRequestFields",
    "additionalModelResponseFieldPaths",
    "promptVariables",
    "requestMetadata",
    "performanceConfig",
    "serviceTier",
    "outputConfig",
}


@dataclass
class Reply:
    """One answer: `json` (a Converse reply) or `body` bytes (an event stream), with `status`.

    `chunk` cuts a body into pieces of that many bytes; `hang_after` stops after that many
    pieces and waits until the client hangs up.
    """

    status: int = 200
    json: Any = None
    body: bytes | None = None
    content_type: str = EVENT_STREAM
    headers: dict[str, str] = field(default_factory=dict)
    chunk: int | None = None
    hang_after: int | None = None


@dataclass
class Recorded:
    """One request the server received (`body` parsed as JSON)."""

    path: str
    model: str
    operation: str
    headers: dict[str, str]
    body: Any
    signature_ok: bool | None


def error_reply(status: int, kind: str, message: str) -> Reply:
    """An error in Bedrock's shape: `{"message"}` and an `x-amzn-ErrorType` header."""
    headers = {"x-amzn-ErrorType": f"{kind}:http://internal.amazon.com/coral/com.amazon.bedrock/"}
    return Reply(status=status, json={"message": message}, headers=headers)


def text_reply(text: str, stop: str = "end_turn", **fields: Any) -> dict[str, Any]:
    """A Converse reply holding one text block."""
    message = {"role": "assistant", "content": [{"text": text}]}
    return {"output": {"message": message}, "stopReason": stop, **fields}


# --- the binary event stream (test side: botocore decodes, it has no encoder) ----------------
def encode_message(headers: Mapping[str, str], payload: bytes) -> bytes:
    """One event-stream message with string headers."""
    raw = b"".join(
        struct.pack(">B", len(name.encode()))
        + name.encode()
        + b"\x07"
        + struct.pack(">H", len(value.encode()))
        + value.encode()
        for name, value in headers.items()
    )
    total = 12 + len(raw) + len(payload) + 4
    prelude = struct.pack(">II", total, len(raw))
    prelude += struct.pack(">I", zlib.crc32(prelude))
    message = prelude + raw + payload
    return message + struct.pack(">I", zlib.crc32(message))


def event(kind: str, payload: Mapping[str, Any]) -> bytes:
    """An `event` message of type `kind` carrying `payload` as JSON."""
    headers = {":event-type": kind, ":content-type": "application/json", ":message-type": "event"}
    return encode_message(headers, json.dumps(payload).encode())


def exception(kind: str, message: str) -> bytes:
    """An `exception` message (`throttlingException`, `modelStreamErrorException`, ...)."""
    headers = {
        ":exception-type": kind,
        ":content-type": "application/json",
        ":message-type": "exception",
    }
    return encode_message(headers, json.dumps({"message": message}).encode())


def stream_of(reply: Mapping[str, Any], piece: int = 7) -> bytes:
    """The ConverseStream body that says what the Converse `reply` says, text cut in pieces."""
    out = [event("messageStart", {"role": "assistant"})]
    for index, block in enumerate(reply["output"]["message"]["content"]):
        at = {"contentBlockIndex": index}
        deltas: list[dict[str, Any]] = []
        if "text" in block:
            deltas = [
                {"text": block["text"][i : i + piece]} for i in range(0, len(block["text"]), piece)
            ]
        elif "toolUse" in block:
            use = block["toolUse"]
            start = {k: v for k, v in use.items() if k != "input"}
            out.append(event("contentBlockStart", {**at, "start": {"toolUse": start}}))
            text = json.dumps(use["input"])
            deltas = [
                {"toolUse": {"input": text[i : i + piece]}} for i in range(0, len(text), piece)
            ]
        elif "reasoningContent" in block:
            reasoning = block["reasoningContent"]["reasoningText"]
            deltas = [
                {"reasoningContent": {"text": reasoning["text"][i : i + piece]}}
                for i in range(0, len(reasoning["text"]), piece)
            ]
            deltas.append({"reasoningContent": {"signature": reasoning["signature"]}})
        out += [event("contentBlockDelta", {**at, "delta": delta}) for delta in deltas]
        out.append(event("contentBlockStop", at))
    out.append(event("messageStop", {"stopReason": reply["stopReason"]}))
    out.append(event("metadata", {"usage": reply["usage"], "metrics": {"latencyMs": 1}}))
    return b"".join(out)


# --- the checks the service makes ----------------------------------------------------------
def check_converse(body: Any) -> str | None:
    """None when `body` is a valid Converse request, else the ValidationException's words."""
    if not isinstance(body, dict) or not body.get("messages"):
        return "1 validation error detected: Value null at 'messages' failed to satisfy constraint"
    if extra := set(body) - BODY_KEYS:
        return f"extraneous key [{sorted(extra)[0]}] is not permitted"
    tools = body.get("toolConfig", {}).get("tools", [])
    for tool in tools:
        spec = tool.get("toolSpec", {})
        if (
            not spec.get("name")
            or spec.get("inputSchema", {}).get("json", {}).get("type") != "object"
        ):
            return f"The tool {spec.get('name')} has an invalid inputSchema"
        if "description" in spec and not spec["description"]:
            return "The value at toolConfig.tools.toolSpec.description must not be blank"
    open_ids: list[str] = []
    used_tools = False
    for i, message in enumerate(body["messages"]):
        role, blocks = message.get("role"), message.get("content")
        if role != ("user" if i % 2 == 0 else "assistant"):
            return "A conversation must start with a user message and alternate user/assistant"
        if not blocks:
            return f"The content field in the Message object at messages.{i} is empty"
        results = []
        for block in blocks:
            if len(block) != 1 or next(iter(block)) not in BLOCK_KEYS:
                return f"messages.{i}: a ContentBlock must have exactly one known member: {block}"
            if "text" in block and not str(block["text"]).strip():
                return f"The text field in the ContentBlock object at messages.{i} is blank"
            if "toolUse" in block:
                use = block["toolUse"]
                if (
                    role != "assistant"
                    or not use.get("toolUseId")
                    or not isinstance(use.get("input"), dict)
                    or use.get("type", "server_tool_use") != "server_tool_use"
                ):
                    return f"messages.{i}: invalid toolUse block {use}"
                if "type" not in use:  # a server tool's use is answered by the service
                    open_ids.append(use["toolUseId"])
                    used_tools = True
            if "toolResult" in block:
                results.append(block["toolResult"].get("toolUseId"))
                used_tools = True
            if "reasoningContent" in block and role != "assistant":
                return f"messages.{i}: reasoningContent is only allowed in assistant messages"
        if role == "user" and sorted(results) != sorted(open_ids):
            return (
                f"messages.{i}: The number of toolResult blocks exceeds (or falls short of) "
                f"the number of toolUse blocks of previous turn: {results} vs {open_ids}"
            )
        if role == "user":
            open_ids = []
    if open_ids:
        return "The last assistant toolUse blocks are not answered"
    if used_tools and not tools:
        return (
            "The toolConfig field must be defined when using toolUse and toolResult content blocks."
        )
    return None


def verify_sigv4(
    request: Request, raw: bytes, credentials: tuple[str, str, str | None], region: str
) -> str | None:
    """None when the request's SigV4 signature is right for `credentials`, else the problem."""
    from botocore.auth import SigV4Auth  # type: ignore[import-untyped]
    from botocore.awsrequest import AWSRequest  # type: ignore[import-untyped]
    from botocore.credentials import Credentials  # type: ignore[import-untyped]

    given = request.headers.get("authorization", "")
    if not given.startswith("AWS4-HMAC-SHA256 "):
        return "Authorization header requires AWS4-HMAC-SHA256"
    fields = dict(part.strip().split("=", 1) for part in given[17:].split(","))
    signed = fields["SignedHeaders"].split(";")
    if "x-amz-date" not in signed or "host" not in signed:
        return "host and x-amz-date must be signed"
    path = request.scope["raw_path"].decode()
    url = f"http://{request.headers['host']}{path}"
    aws = AWSRequest(
        method=request.method,
        url=url,
        data=raw,
        headers={name: request.headers[name] for name in signed},
    )
    aws.context["timestamp"] = request.headers["x-amz-date"]
    signer = SigV4Auth(Credentials(*credentials), "bedrock", region)
    expected = signer.signature(signer.string_to_sign(aws, signer.canonical_request(aws)), aws)
    scope = f"{credentials[0]}/{aws.context['timestamp'][:8]}/{region}/bedrock/aws4_request"
    if fields["Credential"] != scope:
        return f"Credential should be scoped to {scope}"
    if credentials[2] and request.headers.get("x-amz-security-token") != credentials[2]:
        return "The security token included in the request is invalid."
    if fields["Signature"] != expected:
        return "The request signature we calculated does not match the signature you provided."
    return None


class BedrockReplayServer:
    """The server; `url` is its root (`http://127.0.0.1:<port>`)."""

    def __init__(self) -> None:
        self.replies: deque[Reply] = deque()
        self.requests: list[Recorded] = []
        self.events: list[str] = []
        self.credentials: tuple[str, str, str | None] | None = None
        self.region = "us-west-2"
        self.bearer_token: str | None = None
        self.url = ""
        self._runner: ServerThread | None = None

    def reset(self) -> None:
        """Forget replies, requests, events and what authentication to expect."""
        self.replies.clear()
        self.requests.clear()
        self.events.clear()
        self.credentials = self.bearer_token = None
        self.region = "us-west-2"

    def script(self, *replies: Reply | Iterable[Reply]) -> None:
        """Queue replies, answered in order, one per request."""
        for reply in replies:
            self.replies.extend([reply] if isinstance(reply, Reply) else reply)

    def start(self) -> None:
        """Run uvicorn in a thread and wait until it listens."""
        app = Starlette(routes=[Route("/{path:path}", self._handle, methods=["POST"])])
        self._runner = ServerThread(app, "Bedrock replay")
        self.url = self._runner.start()

    def stop(self) -> None:
        """Ask uvicorn to exit and wait for its thread."""
        if self._runner is not None:
            self._runner.stop()

    async def _handle(self, request: Request) -> Response:
        raw = await request.body()
        path = request.scope["raw_path"].decode()
        parts = path.split("/")
        if (
            len(parts) != 4
            or parts[1] != "model"
            or parts[3] not in ("converse", "converse-stream")
        ):
            return _error(404, "UnknownOperationException", f"no operation at {path}")
        try:
            body = json.loads(raw)
        except ValueError:
            return _error(400, "SerializationException", "the body is not JSON")
        signature = None
        if self.credentials is not None:
            problem = verify_sigv4(request, raw, self.credentials, self.region)
            signature = problem is None
        elif self.bearer_token is not None:
            given = request.headers.get("authorization")
            problem = None if given == f"Bearer {self.bearer_token}" else "Invalid API key"
        else:
            problem = None
        self.requests.append(
            Recorded(path, unquote(parts[2]), parts[3], dict(request.headers), body, signature)
        )
        if problem is not None:
            return _error(403, "UnrecognizedClientException", problem)
        if problem := check_converse(body):
            return _error(400, "ValidationException", problem)
        if not self.replies:
            return _error(500, "InternalServerException", "replay server: no reply scripted")
        reply = self.replies.popleft()
        if reply.body is None:
            return JSONResponse(reply.json, reply.status, reply.headers)
        return StreamingResponse(
            self._stream(request, reply), reply.status, reply.headers, media_type=reply.content_type
        )

    async def _stream(self, request: Request, reply: Reply) -> AsyncIterator[bytes]:
        body = reply.body or b""
        size = reply.chunk or len(body) or 1
        try:
            for number, at in enumerate(range(0, len(body), size)):
                if reply.hang_after is not None and number == reply.hang_after:
                    while not await request.is_disconnected():
                        await anyio.sleep(0.02)
                    self.events.append("disconnected")
                    return
                yield body[at : at + size]
                await anyio.sleep(0)
        finally:
            self.events.append("stream closed")

    async def wait_for_event(self, name: str, within: float = 30.0) -> None:
        """Wait until the server records `name` (only a guard against a hang)."""
        with anyio.fail_after(within):
            while name not in self.events:
                await anyio.sleep(0.02)


def _error(status: int, kind: str, message: str) -> Response:
    reply = error_reply(status, kind, message)
    return JSONResponse(reply.json, status, reply.headers)
