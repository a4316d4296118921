"""Serve a ToolSet as an MCP server (the official SDK's low-level `Server`), over stdio or HTTP.

Each tool is listed with its function-calling schema (`tool.to_schema()["parameters"]`), its
description, and annotations derived from `parallel_safe`, `effect_tags` and `idempotent` (see
`jianmu_bt.mcp.annotations`). A call goes through an optional guard, then `ToolSet.call`; a
refused call or a failed ToolResult is an MCP result with `isError` set, never a crash. An unknown
tool name is a JSON-RPC "invalid params" error, as the MCP specification asks. A guard that is a
`ServedCallGuard` (for example `EnforcerGuard` over a tree's GuardEnforcer) is also told when each
call ended, so budgets and rate limits count served calls.

```python
server = build_mcp_server(toolset, name="my-tools", guard=my_guard)   # embed it yourself
await serve(toolset, transport="http", host="127.0.0.1", port=8000)   # or run it here
```
"""

from __future__ import annotations

import inspect
import logging
import socket
import sys
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Literal

from jianmu_bt._version import __version__
from jianmu_bt.mcp.annotations import tool_annotation_hints
from jianmu_bt.mcp.errors import require_mcp
from jianmu_bt.mcp.guarded import ServedCallGuard
from jianmu_bt.mcp.results import error_call_result, tool_result_to_call_result
from jianmu_bt.mcp.serve_options import DEFAULT_HOST, DEFAULT_NAME, DEFAULT_PATH, DEFAULT_PORT
from jianmu_bt.tools.base import Tool
from jianmu_bt.tools.calls import ToolCall
from jianmu_bt.tools.toolset import ToolSet

if TYPE_CHECKING:
    from mcp.server.lowlevel import Server

logger = logging.getLogger(__name__)

#: A guard sees each call and its tool; it returns a reason to refuse the call, or None to allow
#: it. It may be sync or async. An exception from the guard refuses the call too.
Guard = Callable[[ToolCall, Tool], "Awaitable[str | None] | str | None"]
#: What `guard=` takes: a `Guard` callable, or a `ServedCallGuard` that also counts calls.
AnyGuard = Guard | ServedCallGuard

Transport = Literal["stdio", "http", "streamable-http"]


def describe_tool(tool: Tool) -> Any:
    """The SDK `Tool` listing entry for one of our tools: schema, description, annotations."""
    import mcp_types as types

    from jianmu_bt.mcp.provider import MCPTool

    schema = tool.to_schema()
    if isinstance(tool, MCPTool):
        # Served again: exactly what its own server claimed (nothing stated stays unstated).
        sent = tool.annotations
        annotations = types.ToolAnnotations.model_validate(sent) if sent is not None else None
    else:
        annotations = types.ToolAnnotations.model_validate(tool_annotation_hints(tool))
    return types.Tool(
        name=tool.name,
        description=schema["description"] or None,
        input_schema=schema["parameters"],
        annotations=annotations,
    )


async def _check_guard(guard: AnyGuard, call: ToolCall, tool: Tool) -> str | None:
    """The guard's refusal reason, or None; a guard that raises refuses with its error."""
    try:
        verdict = (
            guard.check(call, tool) if isinstance(guard, ServedCallGuard) else guard(call, tool)
        )
        if inspect.isawaitable(verdict):
            verdict = await verdict
    except Exception as exc:  # a broken guard must not let the call through
        logger.warning("guard raised on %s: %r", call.name, exc)
        return f"the guard failed ({type(exc).__name__}: {exc})"
    return None if verdict is None else str(verdict)


def build_mcp_server(
    toolset: ToolSet,
    *,
    name: str = DEFAULT_NAME,
    version: str | None = None,
    instructions: str | None = None,
    guard: AnyGuard | None = None,
    timeout: float | None = None,
) -> Server:
    """An SDK low-level `Server` exposing `toolset`; embed it, or run it with `serve_stdio` or
    `serve_http`.

    `guard` may refuse calls (see `Guard`; a `ServedCallGuard` also counts them); `timeout`
    bounds each call in seconds (the tools' own timeouts apply otherwise).
    """
    require_mcp()
    import mcp_types as types
    from mcp import MCPError
    from mcp.server.lowlevel import Server

    if not isinstance(toolset, ToolSet):
        raise TypeError(f"build_mcp_server needs a ToolSet, got {type(toolset).__name__}")
    listing = types.ListToolsResult(tools=[describe_tool(t) for t in toolset])
    schemas = {entry.name: entry.input_schema for entry in listing.tools}

    async def list_tools(ctx: Any, params: Any) -> Any:
        # A copy: the SDK may stamp fields (server info, cache hints) onto a returned result.
        return listing.model_copy(deep=True)

    async def call_tool(ctx: Any, params: Any) -> Any:
        tool = toolset.get(params.name)
        if tool is None:
            raise MCPError(
                code=types.INVALID_PARAMS,
                message=f"Unknown tool: {params.name}; available: {', '.join(toolset.names())}",
            )
        call = ToolCall(
            name=tool.name,
            arguments=params.arguments or {},
            id=None if ctx.request_id is None else str(ctx.request_id),
        )
        if guard is not None:
            reason = await _check_guard(guard, call, tool)
            if reason is not None:
                return error_call_result(f"the call to '{tool.name}' was refused: {reason}")
        if not isinstance(guard, ServedCallGuard):
            return tool_result_to_call_result(await toolset.call(call, timeout=timeout))
        try:
            result = await toolset.call(call, timeout=timeout)
        except BaseException:
            guard.record(call, tool, None)  # cancelled: it may have had its effect
            raise
        guard.record(call, tool, result.ok)
        return tool_result_to_call_result(result)

    return Server(
        name,
        version=version or __version__,
        instructions=instructions,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        get_tool_input_schema=schemas.get,
    )


async def serve_stdio(server: Server) -> None:
    """Serve `server` over this process's stdin/stdout until stdin closes."""
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


async def serve_http(
    server: Server,
    *,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    path: str = DEFAULT_PATH,
    on_ready: Callable[[str], None] | None = None,
) -> None:
    """Serve `server` over streamable HTTP at `http://host:port/path` until cancelled.

    The socket is bound before `on_ready(url)` is called, so `port=0` picks a free port and the
    URL passed to `on_ready` names it. Bound to a loopback host, the SDK's DNS-rebinding
    protection is on.
    """
    import uvicorn

    app = server.streamable_http_app(streamable_http_path=path, host=host)
    try:
        sock = socket.create_server((host, port))
    except OSError as exc:
        raise OSError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from exc
    try:
        # Accepted connections inherit this; without it small responses wait on delayed ACKs
        # (about 40 ms a call on loopback with the 2026-07-28 protocol).
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        bound_port = sock.getsockname()[1]
        url_host = f"[{host}]" if ":" in host else host
        config = uvicorn.Config(app, log_level="warning", lifespan="on")
        if on_ready is not None:
            on_ready(f"http://{url_host}:{bound_port}{path}")
        await uvicorn.Server(config).serve(sockets=[sock])
    finally:
        sock.close()


async def serve(
    toolset: ToolSet,
    *,
    transport: Transport = "stdio",
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    path: str = DEFAULT_PATH,
    name: str = DEFAULT_NAME,
    guard: AnyGuard | None = None,
    timeout: float | None = None,
    on_ready: Callable[[str], None] | None = None,
) -> None:
    """Build the MCP server for `toolset` and serve it over `transport` ("stdio" or "http").

    `on_ready(where)` is called once the server accepts connections: the URL for HTTP, "stdio"
    for stdio.
    """
    server = build_mcp_server(toolset, name=name, guard=guard, timeout=timeout)
    if transport == "stdio":
        if on_ready is not None:
            on_ready("stdio")
        await serve_stdio(server)
    elif transport in ("http", "streamable-http"):
        await serve_http(server, host=host, port=port, path=path, on_ready=on_ready)
    else:
        raise ValueError(f"unknown MCP transport {transport!r}; use 'stdio' or 'http'")


def announce(toolset: ToolSet, stream: Any = None) -> Callable[[str], None]:
    """An `on_ready` callback printing where the server listens (to stderr: stdout may be MCP)."""
    out = stream if stream is not None else sys.stderr

    def on_ready(where: str) -> None:
        names = ", ".join(toolset.names())
        print(
            f"jianmu_bt MCP server: {len(toolset)} tools ({names}) on {where}", file=out, flush=True
        )

    return on_ready


__all__ = [
    "AnyGuard",
    "Guard",
    "announce",
    "build_mcp_server",
    "describe_tool",
    "serve",
    "serve_http",
    "serve_stdio",
]
