"""The HTTP side of the MCP server: a clear refusal for legacy HTTP+SSE clients.

The server speaks streamable HTTP (one endpoint, `/mcp` by default, with `Mcp-Session-Id`
sessions handled by the SDK's session manager). A client of the old HTTP+SSE transport
(protocol 2024-11-05) opens `GET /sse` and posts to `/messages`; without these routes it would
get a bare 404 "Not Found". Here both still answer 404 (there is no such endpoint), with a
message naming the supported transport and the path to use. A legacy client pointed at the
streamable endpoint itself opens it with `GET` and `Accept: text/event-stream` but without an
`Mcp-Session-Id` (a streamable client always sends one on GET): it gets 400 with the same
message instead of the SDK's bare "Missing session ID".
"""

from __future__ import annotations

from typing import Any

#: Paths of the legacy HTTP+SSE transport that get the refusal.
LEGACY_SSE_PATHS = ("/sse", "/messages", "/messages/")
#: The HTTP status of the refusal.
LEGACY_SSE_STATUS = 404


def legacy_sse_message(path: str) -> str:
    """What a legacy HTTP+SSE client is told."""
    return (
        "This MCP server does not support the legacy HTTP+SSE transport (protocol 2024-11-05). "
        f"It speaks the Streamable HTTP transport at {path}: connect your client to that path "
        "with transport 'streamable-http' (POST JSON-RPC, 'Accept: application/json, "
        "text/event-stream')."
    )


def legacy_sse_routes(path: str) -> list[Any]:
    """Starlette routes refusing the legacy HTTP+SSE paths (except `path` itself)."""
    from starlette.requests import Request
    from starlette.responses import PlainTextResponse
    from starlette.routing import Route

    message = legacy_sse_message(path)

    async def refuse(request: Request) -> PlainTextResponse:
        return PlainTextResponse(message, status_code=LEGACY_SSE_STATUS)

    methods = ["GET", "POST", "HEAD"]
    return [Route(p, refuse, methods=methods) for p in LEGACY_SSE_PATHS if p != path]


def refuse_legacy_get(app: Any, path: str) -> Any:
    """Wrap the ASGI `app`: a session-less SSE `GET` on `path` is a legacy client (see above)."""
    from starlette.responses import PlainTextResponse

    message = legacy_sse_message(path)

    async def wrapped(scope: Any, receive: Any, send: Any) -> None:
        if (
            scope.get("type") == "http"
            and scope.get("method") == "GET"
            and scope.get("path", "").rstrip("/") == path.rstrip("/")
        ):
            headers = {k.decode("latin-1").lower(): v for k, v in scope.get("headers", [])}
            accept = headers.get("accept", b"").decode("latin-1")
            if "text/event-stream" in accept and "mcp-session-id" not in headers:
                await PlainTextResponse(message, status_code=400)(scope, receive, send)
                return
        await app(scope, receive, send)

    return wrapped


__all__ = [
    "LEGACY_SSE_PATHS",
    "LEGACY_SSE_STATUS",
    "legacy_sse_message",
    "legacy_sse_routes",
    "refuse_legacy_get",
]
