"""Serve a ToolSet as an MCP server (the official SDK's low-level `Server`), over stdio or HTTP.

Each tool is listed with its function-calling schema (`tool.to_schema()["parameters"]`), its
description, annotations derived from `read_only`, `effect_tags` and `idempotent` (all four
hints, see `jianmu_bt.mcp.annotations`) and, for a declared return type, an `outputSchema` (see
`jianmu_bt.mcp.server_results`). A call goes through an optional guard, then `ToolSet.call`
under a progress sink (`server_progress`: the tool's `report_progress` reaches the client) and
with a way to ask the client's user (`server_questions`: a served tree's questions); a
refused call or a failed ToolResult is an MCP result with `isError` set, never a crash. An
unknown tool name is a JSON-RPC "invalid params" error, as the MCP specification asks. A guard
that is a `ServedCallGuard` (for example `EnforcerGuard` over a tree's GuardEnforcer) is also
told when each call ended, so budgets and rate limits count served calls. A `ServedTools` may
change while serving (`server_tools`: clients hear `tools/list_changed`); `extras` add
resources and prompts (`server_resources`, `server_prompts`). Over HTTP, requests need a bearer
token and this server's Host names (`serve_access`), and legacy HTTP+SSE clients are refused
with a message naming the transport (`server_http`).

```python
server = build_mcp_server(toolset, name="my-tools", guard=my_guard)   # embed it yourself
await serve(toolset, transport="http", host="127.0.0.1", port=8000)   # or run it here
```
"""

from __future__ import annotations

import functools
import inspect
import logging
import socket
import sys
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from jianmu_bt._version import __version__
from jianmu_bt.mcp.errors import require_mcp
from jianmu_bt.mcp.guarded import ServedCallGuard
from jianmu_bt.mcp.results import error_call_result
from jianmu_bt.mcp.serve_options import DEFAULT_HOST, DEFAULT_NAME, DEFAULT_PATH, DEFAULT_PORT
from jianmu_bt.mcp.server_http import legacy_sse_routes, refuse_legacy_get
from jianmu_bt.mcp.server_progress import forward_progress
from jianmu_bt.mcp.server_questions import asking_client, session_asker
from jianmu_bt.mcp.server_results import served_call_result
from jianmu_bt.mcp.server_tools import ServedTools, as_served, describe_tool
from jianmu_bt.tools.base import Tool
from jianmu_bt.tools.call_context import progress_sink
from jianmu_bt.tools.calls import ToolCall, ToolResult
from jianmu_bt.tools.toolset import ToolSet

if TYPE_CHECKING:
    from mcp.server.lowlevel import Server

    from jianmu_bt.mcp.serve_access import ServedAccess

logger = logging.getLogger(__name__)

#: A guard sees each call and its tool; it returns a reason to refuse the call, or None to allow
#: it. It may be sync or async. An exception from the guard refuses the call too.
Guard = Callable[[ToolCall, Tool], "Awaitable[str | None] | str | None"]
#: What `guard=` takes: a `Guard` callable, or a `ServedCallGuard` that also counts calls.
AnyGuard = Guard | ServedCallGuard

Transport = Literal["stdio", "http", "streamable-http"]


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
    toolset: ToolSet | ServedTools,
    *,
    name: str = DEFAULT_NAME,
    version: str | None = None,
    instructions: str | None = None,
    guard: AnyGuard | None = None,
    timeout: float | None = None,
    extras: Sequence[ServerPart] = (),
) -> Server:
    """An SDK low-level `Server` exposing `toolset`; embed it, or run it with `serve_stdio` or
    `serve_http`.

    `toolset` may be `ServedTools` to change the served tools later (clients are told);
    `guard` may refuse calls (see `Guard`; a `ServedCallGuard` also counts them); `timeout`
    bounds each call in seconds (the tools' own timeouts apply otherwise). `extras` add
    handlers (resources, prompts: `jianmu_bt.mcp.server_resources`, `server_prompts`).
    """
    require_mcp()
    import mcp_types as types
    from mcp import MCPError
    from mcp.server.lowlevel import NotificationOptions
    from mcp.server.subscriptions import ListenHandler

    served = as_served(toolset)

    async def list_tools(ctx: Any, params: Any) -> Any:
        served.listed_by(ctx)
        # A copy: the SDK may stamp fields (server info, cache hints) onto a returned result.
        return served.listing.model_copy(deep=True)

    async def run_call(ctx: Any, tools: ToolSet, call: ToolCall) -> ToolResult:
        """The call, under a progress sink (the SDK sends reports only when the client asked)
        and with the way to ask the client's user (`server_questions`: a served tree's run)."""
        async with forward_progress(ctx.session.report_progress) as sink:
            with progress_sink(sink), asking_client(session_asker(ctx)):
                return await tools.call(call, timeout=timeout)

    async def call_tool(ctx: Any, params: Any) -> Any:
        # One look at the served tools: a change while the guard decides must not swap the
        # tool between the check and the call.
        tools = served.toolset
        tool = tools.get(params.name)
        if tool is None:
            available = ", ".join(tools.names())
            raise MCPError(
                code=types.INVALID_PARAMS,
                message=f"Unknown tool: {params.name}; available: {available}",
            )
        output_schema = served.output_schemas.get(tool.name)
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
            return served_call_result(await run_call(ctx, tools, call), tool, output_schema)
        try:
            result = await run_call(ctx, tools, call)
        except BaseException:
            guard.record(call, tool, None)  # cancelled: it may have had its effect
            raise
        guard.record(call, tool, result.ok)
        return served_call_result(result, tool, output_schema)

    handlers: dict[str, Any] = {}
    for part in extras:
        handlers.update(part.handlers())
    server = _new_server(
        name,
        version=version or __version__,
        instructions=instructions,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_subscriptions_listen=ListenHandler(served.bus),
        get_tool_input_schema=lambda tool_name: served.input_schemas.get(tool_name),
        **handlers,
    )
    server.notification_options = NotificationOptions(
        tools_changed=True,
        prompts_changed=any(p.changes_prompts for p in extras),
        resources_changed=any(p.changes_resources for p in extras),
    )
    return server


@runtime_checkable
class ServerPart(Protocol):
    """More of the MCP protocol for `build_mcp_server(extras=...)`: resources, prompts."""

    changes_resources: bool
    changes_prompts: bool

    def handlers(self) -> dict[str, Any]:
        """`Server(...)` keyword arguments (`on_list_resources=...`, ...)."""
        ...


@functools.cache
def _server_class() -> type[Server]:
    from mcp.server.lowlevel import NotificationOptions, Server
    from mcp.server.models import InitializationOptions

    class JianmuServer(Server[Any]):
        """The SDK Server, advertising list-changed notices on every transport (the SDK's
        streamable HTTP manager builds its initialization options without arguments)."""

        notification_options: NotificationOptions | None = None

        def create_initialization_options(
            self,
            notification_options: NotificationOptions | None = None,
            experimental_capabilities: dict[str, dict[str, Any]] | None = None,
            extensions: dict[str, dict[str, Any]] | None = None,
        ) -> InitializationOptions:
            return super().create_initialization_options(
                notification_options or self.notification_options,
                experimental_capabilities,
                extensions,
            )

    return JianmuServer


def _new_server(*args: Any, **kwargs: Any) -> Any:
    return _server_class()(*args, **kwargs)


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
    access: ServedAccess | None = None,
) -> None:
    """Serve `server` over streamable HTTP at `http://host:port/path` until cancelled.

    The socket is bound before `on_ready(url)` is called, so `port=0` picks a free port and the
    URL passed to `on_ready` names it. Every request needs `access`'s bearer token and one of
    its Host names (`serve_access`); without `access`, a token is generated and printed once
    on stderr. Bound to a loopback host, the SDK's DNS-rebinding protection is on too.
    """
    import uvicorn

    from jianmu_bt.mcp.serve_access import ServedAccess, guarded_app

    announced = access is not None
    if access is None:
        access = ServedAccess.for_host(host)

    app = server.streamable_http_app(
        streamable_http_path=path, host=host, custom_starlette_routes=legacy_sse_routes(path)
    )
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
        access.port = bound_port
        guarded = guarded_app(refuse_legacy_get(app, path), access)
        config = uvicorn.Config(guarded, log_level="warning", lifespan="on")
        url = f"http://{url_host}:{bound_port}{path}"
        if on_ready is not None:
            on_ready(url)
        if not announced:
            notice = access.notice(url).strip()
            print(f"jianmu_bt MCP server: {notice}", file=sys.stderr, flush=True)
        await uvicorn.Server(config).serve(sockets=[sock])
    finally:
        sock.close()


async def serve(
    toolset: ToolSet | ServedTools,
    *,
    transport: Transport = "stdio",
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    path: str = DEFAULT_PATH,
    name: str = DEFAULT_NAME,
    guard: AnyGuard | None = None,
    timeout: float | None = None,
    on_ready: Callable[[str], None] | None = None,
    extras: Sequence[ServerPart] = (),
    access: ServedAccess | None = None,
) -> None:
    """Build the MCP server for `toolset` and serve it over `transport` ("stdio" or "http").

    `on_ready(where)` is called once the server accepts connections: the URL for HTTP, "stdio"
    for stdio. `extras` are passed to `build_mcp_server` (resources, prompts). Over HTTP,
    `access` says which token and Host names requests need (see `serve_http`).
    """
    server = build_mcp_server(toolset, name=name, guard=guard, timeout=timeout, extras=extras)
    if transport == "stdio":
        if on_ready is not None:
            on_ready("stdio")
        await serve_stdio(server)
    elif transport in ("http", "streamable-http"):
        await serve_http(server, host=host, port=port, path=path, on_ready=on_ready, access=access)
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
    "ServedTools",
    "ServerPart",
    "announce",
    "build_mcp_server",
    "describe_tool",
    "serve",
    "serve_http",
    "serve_stdio",
]
