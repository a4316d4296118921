"""MCPClient: one connection to one MCP server over stdio or streamable HTTP, with timeouts.

The official SDK's `mcp.Client` speaks the protocol (version negotiation, the handshake, typed
results). This class adds what a behaviour tree needs around it:

- every request has a timeout (the SDK has none by default, so a hung server would hang a tree);
- the connection lives in a background task of its own, so `connect`, calls and `close` may come
  from different tasks (tree nodes) without breaking anyio's rule that a cancel scope is left in
  the task that entered it;
- it notices when a stdio server's process ends, and the next call reconnects once;
- a stdio server runs in a process group of its own, ended as a whole on close (see
  `jianmu_bt.mcp.stdio`), and only the last `stderr_limit` bytes of its stderr are kept, for
  error messages to quote.

The background task needs asyncio (anyio's default backend).
"""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import IO, TYPE_CHECKING, Any, Literal, TypeVar

import anyio

from jianmu_bt.mcp import config as defaults
from jianmu_bt.mcp.client_features import ServerFeatures
from jianmu_bt.mcp.config import ElicitationOptions, MCPServerConfig, SamplingOptions
from jianmu_bt.mcp.connection import Connection
from jianmu_bt.mcp.deadlines import CallDeadlines
from jianmu_bt.mcp.errors import MCPClientError, MCPConnectionError, MCPTimeoutError, require_mcp
from jianmu_bt.mcp.faults import connect_fault, request_fault
from jianmu_bt.mcp.notices import Listener, Listeners, is_tools_changed
from jianmu_bt.mcp.roots import roots_callback
from jianmu_bt.mcp.stdio import StderrTail
from jianmu_bt.mcp.transports import looks_like_legacy_sse, open_transport

if TYPE_CHECKING:
    from mcp_types import CallToolResult, Implementation, Tool as MCPToolSpec

#: Extra seconds past a request's timeout before our own bound cancels it, in case the SDK's
#: timeout cannot fire (for example a transport stuck before the request was written).
BACKSTOP_SECONDS = 1.0
#: Characters of a server's stderr quoted in error messages.
STDERR_TAIL_CHARS = 1500

_Result = TypeVar("_Result")

ProgressCallback = Callable[[float, "float | None", "str | None"], None]
"""Receives `(progress, total, message)` of a call's progress notifications."""


class MCPClient(ServerFeatures):
    """A client for one MCP server: `connect`, `list_tools`, `call_tool`, `close`; its
    resources and prompts too (`list_resources`, `read_resource`, `get_prompt`, ...: see
    `jianmu_bt.mcp.client_features`).

    Give either `command` (with `args`, `env`, `cwd`) to spawn a server that speaks MCP over
    stdio, or `url` (with `headers`) for a streamable HTTP endpoint. `timeout` bounds every request;
    `connect_timeout` bounds starting the server and the handshake. A stdio server's environment is
    the SDK's minimal safe one (PATH, HOME, ...) plus `env`. It runs in a process group of its
    own; closing the client ends the whole group (stdin closed, `stop_grace` seconds, SIGTERM,
    `stop_grace` seconds, SIGKILL), children and grandchildren included. The last
    `stderr_limit` bytes of its stderr are kept in memory for error messages (and also copied
    to `errlog` when one is given).

    When the server goes away, the call in flight fails with MCPConnectionError and the next call
    reconnects once; if that fails too, it raises MCPConnectionError saying so. `close` ends the
    connection and the server process; a closed client refuses calls until `connect` is called.
    Also an async context manager.
    """

    def __init__(
        self,
        *,
        command: str | None = None,
        args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        url: str | None = None,
        headers: Mapping[str, str] | None = None,
        name: str | None = None,
        timeout: float = defaults.DEFAULT_TIMEOUT,
        connect_timeout: float = defaults.DEFAULT_CONNECT_TIMEOUT,
        mode: str = "auto",
        errlog: IO[Any] | None = None,
        stderr_limit: int = defaults.DEFAULT_STDERR_LIMIT,
        max_message_bytes: int = defaults.DEFAULT_MAX_MESSAGE_BYTES,
        stop_grace: float = defaults.DEFAULT_STOP_GRACE,
        progress_resets_timeout: bool = False,
        roots: Sequence[str | os.PathLike[str]] | None = None,
        transport: Literal["stdio", "http", "sse"] | None = None,
        sampling: SamplingOptions | Mapping[str, Any] | bool | None = None,
        elicitation: ElicitationOptions | Mapping[str, Any] | str | None = None,
    ) -> None:
        # Passed on only when chosen: by default `transport` follows from `command` / `url`.
        given = {"transport": transport, "sampling": sampling, "elicitation": elicitation}
        chosen: dict[str, Any] = {key: value for key, value in given.items() if value is not None}
        config = MCPServerConfig(
            **chosen,
            progress_resets_timeout=progress_resets_timeout,
            roots=[os.fspath(root) for root in roots] if roots is not None else None,
            name=name,
            command=command,
            args=list(args),
            env=dict(env) if env is not None else None,
            cwd=os.fspath(cwd) if cwd is not None else None,
            url=url,
            headers=dict(headers) if headers is not None else None,
            timeout=timeout,
            connect_timeout=connect_timeout,
            stderr_limit=stderr_limit,
            max_message_bytes=max_message_bytes,
            stop_grace=stop_grace,
        )
        self.config = config
        #: How the protocol version is negotiated: "auto" (the SDK default) or "legacy".
        self.mode = mode
        #: Reconnections made after the server went away.
        self.reconnects = 0
        self._user_errlog = errlog
        self._stderr = StderrTail(config.stderr_limit)
        self._conn: Connection | None = None
        self._server_info: Implementation | None = None
        self._lock: anyio.Lock | None = None
        self._closed = False
        self._tools_changed = Listeners("tools-changed")
        self._request_callbacks: dict[str, Any] = {}
        #: The deadlines of calls in flight, held while the server's own request is answered.
        self.deadlines = CallDeadlines()
        # Checked now, so a bad root is an error at construction, not on the server's ask.
        self._list_roots = roots_callback(config.roots) if config.roots else None

    @classmethod
    def from_config(
        cls,
        config: MCPServerConfig | Mapping[str, Any],
        *,
        mode: str = "auto",
        errlog: IO[Any] | None = None,
    ) -> MCPClient:
        """A client for a validated `MCPServerConfig` (or a mapping of its fields)."""
        options = MCPServerConfig.coerce(config).client_options()
        return cls(**options, mode=mode, errlog=errlog)

    # -- identity and state ----------------------------------------------------------------

    @property
    def name(self) -> str:
        """The server's name in messages: the configured name, else the name the server gave
        on its last connection, else the command's file name or the URL's host."""
        if self.config.name:
            return self.config.name
        if self._server_info is not None and self._server_info.name:
            return self._server_info.name
        return self.config.label

    @property
    def connected(self) -> bool:
        """True while a connection is open and has not been lost."""
        return self._conn is not None and self._conn.usable

    @property
    def server_info(self) -> Implementation | None:
        """What the server said about itself (name, version) on the last connection."""
        return self._server_info

    def stderr_tail(self, limit: int = STDERR_TAIL_CHARS) -> str:
        """The last `limit` characters a stdio server wrote to stderr (from the bounded tail)."""
        return self._stderr.text(limit).strip()

    @property
    def stderr_bytes_seen(self) -> int:
        """How many bytes of stderr the server wrote since the tail was last cleared."""
        return self._stderr.total

    def stderr_note(self) -> str:
        """The stderr tail as `; server stderr: ...` when there is one, else an empty string."""
        tail = self.stderr_tail()
        return f"; server stderr: {tail}" if tail else ""

    # -- lifecycle -------------------------------------------------------------------------

    async def connect(self) -> None:
        """Start or reach the server and complete the MCP handshake (no-op when connected)."""
        self._closed = False
        await self._live_connection()

    async def close(self) -> None:
        """End the connection; a stdio server's process is stopped (and killed if it must be)."""
        self._closed = True
        conn, self._conn = self._conn, None
        if conn is not None:
            await conn.shutdown()
        self._stderr.clear()

    async def __aenter__(self) -> MCPClient:
        await self.connect()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    # -- requests --------------------------------------------------------------------------

    async def list_tools(self) -> list[MCPToolSpec]:
        """Every tool the server offers (all pages, within the client's `timeout` in all), as
        the SDK's Tool models."""
        conn = await self._live_connection()
        fetch = conn.require_session().list_tools
        return await self._all_pages(conn, "tools/list", fetch, lambda page: page.tools)

    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
        progress: ProgressCallback | None = None,
    ) -> CallToolResult:
        """Call a tool by its name on the server and return the SDK's CallToolResult.

        The request carries a progress token: the server's progress notifications go to
        `progress(progress, total, message)` (called in the connection's task). With the
        config's `progress_resets_timeout`, each notification restarts `timeout`, which then
        bounds the silence between two signs of life rather than the whole call.

        A tool's own failure is a result with `is_error` set, not an exception. Faults raise:
        MCPTimeoutError (no answer within `timeout`, default the client's), MCPConnectionError
        (server gone, or not restartable), MCPClientError (protocol error such as an unknown
        tool, or a malformed result).
        """
        conn = await self._live_connection()
        limit = timeout if timeout is not None else self.config.timeout
        args = dict(arguments) if arguments is not None else None
        what = f"tools/call '{name}'"
        idle: anyio.CancelScope | None = None
        # A deadline of our own when it must move: on progress, and held while the server's
        # own request (a question for a person) is answered (see CallDeadlines).
        if self.config.progress_resets_timeout or self._request_callbacks:
            idle = anyio.CancelScope(deadline=anyio.current_time() + limit)

        report = progress

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            if idle is not None and self.config.progress_resets_timeout:
                self.deadlines.restart(idle, limit)  # a sign of life: the silence starts again
            if report is not None:
                report(progress, total, message)

        send = functools.partial(
            # The SDK client's call (not the bare session's) answers a 2026-07-28 server's
            # input-required rounds (its roots/list asks) and re-lists on a header mismatch.
            conn.require_client().call_tool,
            name,
            args,
            # With an idle deadline of our own, the SDK's fixed one must not cut the call short.
            read_timeout_seconds=math.inf if idle is not None else limit,
            progress_callback=on_progress,
        )
        with self.deadlines.track(idle):
            result = await self._request(conn, what, send, limit, idle=idle, sdk_timeout=True)
        from mcp_types import CallToolResult

        if not isinstance(result, CallToolResult):  # the SDK raises for the other kinds today
            raise MCPClientError(
                f"MCP server '{self.name}' answered {what} with a {type(result).__name__}, "
                "not a tool result"
            )
        return result

    async def _request(
        self,
        conn: Connection,
        what: str,
        send: Callable[[], Awaitable[_Result]],
        timeout: float | None,
        *,
        idle: anyio.CancelScope | None = None,
        sdk_timeout: bool = False,
    ) -> _Result:
        """Run one request with a timeout, translating every fault into an MCPClientError.

        `sdk_timeout`: the SDK bounds this request itself (with `timeout`), and our own bound
        is only a backstop a little later; otherwise our bound is the timeout. `idle`, when
        given, is the request's own deadline (moved on by progress notifications) instead."""
        limit = self.config.timeout if timeout is None else timeout
        try:
            if idle is None:
                with anyio.fail_after(limit + (BACKSTOP_SECONDS if sdk_timeout else 0)):
                    return await send()
            with idle:
                return await send()
        except Exception as exc:
            error, lost = request_fault(exc, self.name, what, limit, self.stderr_note())
            if lost:
                conn.lost = True
            raise error from None
        quiet = " and sent no progress for" if self.config.progress_resets_timeout else " within"
        raise MCPTimeoutError(  # only the idle deadline ends a request without an outcome
            f"MCP server '{self.name}' did not answer {what}{quiet} {limit}s"
        )

    # -- connection management -------------------------------------------------------------

    async def _live_connection(self) -> Connection:
        conn = self._conn
        if conn is not None and conn.usable:
            return conn
        if self._closed:
            raise MCPConnectionError(
                f"the client for MCP server '{self.name}' is closed; call connect() to reopen it"
            )
        if self._lock is None:
            self._lock = anyio.Lock()
        async with self._lock:
            conn = self._conn
            if conn is not None and conn.usable:
                return conn
            reconnecting = conn is not None
            if conn is not None:
                self._conn = None
                await conn.shutdown()
            require_mcp()
            fresh = Connection(self)
            started = anyio.current_time()
            try:
                await fresh.open(self.config.connect_timeout)
            except MCPClientError as exc:
                self._stderr.clear()  # its tail is in the message; the next attempt starts afresh
                if await self._legacy_sse(exc, started):
                    raise MCPConnectionError(
                        f"MCP server '{self.name}' ({self.config.url}) speaks the legacy "
                        "HTTP+SSE transport; set transport: sse"
                    ) from exc
                if reconnecting:
                    raise MCPConnectionError(
                        f"MCP server '{self.name}' went away and could not be restarted: {exc}"
                    ) from exc
                raise
            self._conn = fresh
            self._server_info = fresh.server_info
            self.reconnects += reconnecting
            return fresh

    async def _legacy_sse(self, failure: MCPClientError, started: float) -> bool:
        """Whether a failed streamable-HTTP connect met a legacy HTTP+SSE server: probed only
        after a failure that is not a timeout, within what is left of `connect_timeout`."""
        if self.config.transport != "http" or isinstance(failure, MCPTimeoutError):
            return False
        left = self.config.connect_timeout - (anyio.current_time() - started)
        return left > 0 and await looks_like_legacy_sse(self.config, left)

    def make_transport(self, abrupt: Callable[[], bool] | None = None) -> Any:
        """The transport (an async context manager yielding the stream pair) for the config;
        `abrupt()` true at close ends a stdio server without a grace period."""
        return open_transport(self.config, self._stderr, self._user_errlog, abrupt)

    # -- what the server may send --------------------------------------------------------

    def on_tools_changed(self, listener: Listener) -> Callable[[], None]:
        """Await `listener()` whenever the server says its tool list changed
        (`notifications/tools/list_changed`); returns a function that removes it."""
        return self._tools_changed.add(listener)

    def set_request_callbacks(self, callbacks: Mapping[str, Any]) -> None:
        """The SDK `Client` callbacks answering the server's requests (`sampling_callback`,
        `elicitation_callback`) from the next connection on, whose handshake declares them
        (a tree sets them for each run: `MCPToolProvider.attach_run`)."""
        self._request_callbacks = dict(callbacks)

    def client_callbacks(self) -> dict[str, Any]:
        """The SDK `Client`'s callbacks: notifications, roots when configured, and those of
        `set_request_callbacks` (without them the capability is not declared: a server asking
        anyway gets the SDK's "not supported" error and the call goes on)."""
        callbacks: dict[str, Any] = {"message_handler": self._on_message}
        if self._list_roots is not None:
            callbacks["list_roots_callback"] = self._list_roots
        callbacks.update(self._request_callbacks)
        return callbacks

    async def tools_may_have_changed(self) -> None:
        """Tell the tool-change listeners, as a `tools/list_changed` notice would."""
        await self._tools_changed.notify(self.name)

    async def _on_message(self, message: Any) -> None:
        if is_tools_changed(message):
            await self.tools_may_have_changed()
        await self.resource_notice(message)  # no-op for a message that is not about resources

    def connect_error(self, exc: BaseException) -> MCPClientError:
        """A clear MCPClientError for a failure while connecting."""
        where = f"MCP server '{self.name}' ({self.config.describe()})"
        return connect_fault(exc, where, self.stderr_note())

    def __repr__(self) -> str:
        state = "connected" if self.connected else "closed" if self._closed else "not connected"
        return f"<MCPClient {self.name!r} {self.config.transport} {state}>"
