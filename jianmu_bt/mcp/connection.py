"""Connection: one live MCP connection, held open by a background asyncio task.

anyio requires a cancel scope (the SDK client's task groups) to be left in the task that entered
it. A behaviour tree connects, calls and closes from different tasks, so the SDK client is
entered and left by a task of its own; calls from any task go through its session. The
transport's read stream is watched, so the connection knows when a stdio server's process ends.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import AsyncIterator, Callable, Collection
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, Protocol

import anyio

from jianmu_bt._version import __version__
from jianmu_bt.mcp.config import MCPServerConfig
from jianmu_bt.mcp.errors import MCPClientError, MCPConnectionError, MCPTimeoutError
from jianmu_bt.mcp.resource_stream import ResourceStream

if TYPE_CHECKING:
    from mcp import Client, ClientSession
    from mcp_types import Implementation

logger = logging.getLogger(__name__)

#: Longest wait for a connection to wind down (stdio: close stdin, a grace period, SIGTERM to the
#: server's process group, another grace period, SIGKILL); beyond it the task is cancelled.
CLOSE_TIMEOUT = 10.0
#: Seconds before a tool-change listen stream that ended is opened again.
RELISTEN_DELAY = 1.0
#: Longest wait at connect for the tool-change listen stream's acknowledgement (and at most half
#: of `connect_timeout`); a server slower than that is used at once and heard from later.
LISTEN_ACK_WAIT = 5.0


class EndWatchingStream:
    """A transport's read stream that reports when it ends (the server went away).

    Forwards everything to the wrapped stream; the SDK dispatcher reads it unchanged.
    """

    def __init__(self, inner: Any, on_end: Callable[[], None]) -> None:
        self._inner = inner
        self._on_end = on_end

    @property
    def last_context(self) -> Any:
        # The SDK reads the sender's context from streams that carry one (`getattr`, optional).
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> Any:
        """The next message; calls `on_end` when the stream has ended or broken."""
        try:
            return await self._inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._on_end()
            raise

    def __aiter__(self) -> EndWatchingStream:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> EndWatchingStream:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


@asynccontextmanager
async def watched(transport: Any, on_end: Callable[[], None]) -> AsyncIterator[tuple[Any, Any]]:
    """`transport` (an SDK transport context) with its read stream watched for its end."""
    async with transport as (read_stream, write_stream):
        yield EndWatchingStream(read_stream, on_end), write_stream


def listens_for_tool_changes(client: Any) -> bool:
    """Whether `client` (connected) must open a listen stream to hear of tool-list changes:
    the server says it sends them, and the protocol (2026-07-28 on) carries them only there."""
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS

    tools = getattr(client.server_capabilities, "tools", None)
    changes = bool(tools is not None and tools.list_changed)
    return changes and client.protocol_version in MODERN_PROTOCOL_VERSIONS


def root_cause(exc: BaseException) -> BaseException:
    """The first leaf of (possibly nested) exception groups, for a readable message."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


class ConnectionOwner(Protocol):
    """What a Connection needs from the client that owns it (MCPClient is one)."""

    @property
    def name(self) -> str:
        """The server's name in messages."""
        ...

    @property
    def config(self) -> MCPServerConfig:
        """How to reach the server (timeouts, stop grace, description for messages)."""
        ...

    @property
    def mode(self) -> str:
        """How the protocol version is negotiated ("auto" or "legacy")."""
        ...

    def make_transport(self, abrupt: Callable[[], bool] | None = None) -> Any:
        """A fresh SDK transport (an async context manager yielding the stream pair); when
        `abrupt()` is true as it closes, the server is ended without a grace period."""
        ...

    def client_callbacks(self) -> dict[str, Any]:
        """Keyword arguments for the SDK `Client`: its notification and request callbacks."""
        ...

    async def tools_may_have_changed(self) -> None:
        """Tell the tool-change listeners (a notice may have been missed)."""
        ...

    async def resources_may_have_changed(self, uris: frozenset[str]) -> None:
        """Tell the resource-update listeners of `uris` (their updates may have been missed)."""
        ...

    def stderr_note(self) -> str:
        """The server's stderr tail for an error message, or ""."""
        ...

    def connect_error(self, exc: BaseException) -> MCPClientError:
        """A clear error for a failure while connecting."""
        ...


class Connection:
    """One live connection: a background asyncio task that holds the SDK client open."""

    def __init__(self, owner: ConnectionOwner) -> None:
        self.owner = owner
        self.session: ClientSession | None = None
        #: The SDK `Client` of this connection (its calls drive input-required rounds).
        self.client: Client | None = None
        self.server_info: Implementation | None = None
        self.lost = False
        self.error: BaseException | None = None
        self._ready = anyio.Event()
        self._stop = anyio.Event()
        self._task: asyncio.Task[None] | None = None
        self._scope: anyio.CancelScope | None = None
        self._resources: ResourceStream | None = None

    @property
    def usable(self) -> bool:
        """True while the handshake is done and the server has not gone away."""
        return self.session is not None and not self.lost

    def require_client(self) -> Client:
        """The SDK client of this open connection (MCPConnectionError once it is gone)."""
        if self.client is None:
            raise MCPConnectionError(f"MCP server '{self.owner.name}' is not connected")
        return self.client

    def require_session(self) -> ClientSession:
        """The SDK session of this open connection (MCPConnectionError once it is gone)."""
        if self.session is None:
            raise MCPConnectionError(f"MCP server '{self.owner.name}' is not connected")
        return self.session

    async def listen_resources(self, uris: Collection[str]) -> None:
        """Hold a 2026-07-28 `subscriptions/listen` stream for exactly `uris` (none when
        empty), in this connection's task group, so it ends with the connection. The new
        stream replaces the old one once acknowledged; on failure the old one stays (see
        `jianmu_bt.mcp.resource_stream`)."""
        if self._resources is None or not self.usable:
            raise MCPConnectionError(f"MCP server '{self.owner.name}' is not connected")
        await self._resources.hold(self.require_client(), uris)

    @property
    def resource_uris(self) -> frozenset[str]:
        """The URIs the resource-subscription stream carries now."""
        return self._resources.uris if self._resources is not None else frozenset()

    def _mark_lost(self) -> None:
        self.lost = True

    async def open(self, timeout: float) -> None:
        """Start the background task and wait for the handshake; raise what went wrong."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError as exc:
            raise MCPClientError(
                "MCPClient keeps its connection in an asyncio task: run it under asyncio "
                "(anyio's default backend)"
            ) from exc
        self._task = loop.create_task(self._run(), name=f"mcp-client:{self.owner.name}")
        try:
            with anyio.move_on_after(timeout):
                await self._ready.wait()
        except BaseException:
            await self.shutdown()
            raise
        if self.session is None:
            await self.shutdown()
            if self.error is None:
                raise MCPTimeoutError(
                    f"MCP server '{self.owner.name}' ({self.owner.config.describe()}) did not "
                    f"complete the MCP handshake within {timeout}s{self.owner.stderr_note()}"
                )
            raise self.owner.connect_error(self.error)

    async def _run(self) -> None:
        # Stopped through this scope, not `task.cancel()`: anyio's shielded clean-up (ending a
        # stdio server's process group) holds against a scope's cancellation, not a native one.
        with anyio.CancelScope() as self._scope:
            await self._serve()

    async def _serve(self) -> None:
        try:
            from mcp import Client
            from mcp_types import Implementation

            client = Client(
                # Until the handshake is done there is nothing to wind down: a server that
                # missed `connect_timeout` is ended at once, not given a grace period more.
                watched(self.owner.make_transport(lambda: self.session is None), self._mark_lost),
                # No default: the handshake is bounded by `connect_timeout` (a slow-starting
                # server must not fail it by `timeout`), every later request by its own bound.
                read_timeout_seconds=None,
                mode=self.owner.mode,
                cache=None,
                client_info=Implementation(name="jianmu_bt", version=__version__),
                **self.owner.client_callbacks(),
            )
            async with client, anyio.create_task_group() as tasks:
                self.session = client.session
                self.client = client
                self.server_info = client.server_info
                self._resources = ResourceStream(
                    self.owner.name,
                    functools.partial(tasks.start_soon, name=f"mcp-resources:{self.owner.name}"),
                    lambda: self.usable,
                    self.owner.resources_may_have_changed,
                )
                if listens_for_tool_changes(client):
                    # Ready only once the stream is acknowledged: a change the server made
                    # before that (a first call that adds a tool) would never be heard.
                    settled = anyio.Event()
                    tasks.start_soon(self._listen, client, settled)
                    wait = min(LISTEN_ACK_WAIT, self.owner.config.connect_timeout / 2)
                    with anyio.move_on_after(wait):
                        await settled.wait()
                self._ready.set()
                await self._stop.wait()
                tasks.cancel_scope.cancel()
        except Exception as exc:  # reported by `open`, or by the next call as a lost connection
            self.error = root_cause(exc)
        finally:
            self.lost = True
            self._ready.set()

    async def _listen(self, client: Any, settled: anyio.Event) -> None:
        """Keep a `subscriptions/listen` stream for tool-list changes open (2026-07-28 servers
        send `notifications/tools/list_changed` only on one); the notifications it carries
        reach the client's message handler, so the events themselves are only drained.

        A stream the server never acknowledges (no support) is given up, with a log line. One
        that ends later (an idle HTTP stream timing out, the server closing it) is opened
        again after RELISTEN_DELAY, and the tools are listed again: changes are not replayed.
        `settled` is set once the first stream is acknowledged or given up.
        """
        while True:
            acknowledged = False
            try:
                async with client.listen(tools_list_changed=True) as subscription:
                    acknowledged = True
                    settled.set()
                    async for _event in subscription:
                        pass
            except Exception as exc:
                settled.set()
                if not acknowledged:  # the tools just stay as listed; calls are unaffected
                    logger.info(
                        "MCP server '%s': no tool-change notifications (%s: %s)",
                        self.owner.name,
                        type(exc).__name__,
                        exc,
                    )
                    return
            await anyio.sleep(RELISTEN_DELAY)
            if not self.usable:  # the server went away: the next call reconnects, not this
                return
            await self.owner.tools_may_have_changed()

    async def shutdown(self) -> None:
        """End the connection (and a stdio server's process); bounded, shielded from cancel."""
        self._stop.set()
        self.lost = True
        task = self._task
        if task is None or task.done():
            return
        if self.session is None:
            # Still connecting: nothing to wind down gracefully. A task that has not started
            # yet has spawned nothing, so a native cancel is safe there.
            if self._scope is not None:
                self._scope.cancel()
            else:
                task.cancel()
        # Two grace periods (stdin closed, then SIGTERM) plus a margin for the SIGKILL step.
        limit = max(CLOSE_TIMEOUT, 2 * self.owner.config.stop_grace + 5)
        with anyio.CancelScope(shield=True):
            done, _ = await asyncio.wait({task}, timeout=limit)
            if not done:
                task.cancel()  # the transport's last resort still SIGKILLs the group
                await asyncio.wait({task}, timeout=CLOSE_TIMEOUT)
