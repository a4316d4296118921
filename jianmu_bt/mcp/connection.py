"""Connection: one live MCP connection, held open by a background asyncio task.

anyio requires a cancel scope (the SDK client's task groups) to be left in the task that entered
it. A behaviour tree connects, calls and closes from different tasks, so the SDK client is
entered and left by a task of its own; calls from any task go through its session. The
transport's read stream is watched, so the connection knows when a stdio server's process ends.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, Protocol

import anyio

from jianmu_bt._version import __version__
from jianmu_bt.mcp.config import MCPServerConfig
from jianmu_bt.mcp.errors import MCPClientError, MCPConnectionError, MCPTimeoutError

if TYPE_CHECKING:
    from mcp import ClientSession
    from mcp_types import Implementation

#: Longest wait for a connection to wind down (stdio: close stdin, a grace period, SIGTERM to the
#: server's process group, another grace period, SIGKILL); beyond it the task is cancelled.
CLOSE_TIMEOUT = 10.0


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

    def make_transport(self) -> Any:
        """A fresh SDK transport (an async context manager yielding the stream pair)."""
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
        self.server_info: Implementation | None = None
        self.lost = False
        self.error: BaseException | None = None
        self._ready = anyio.Event()
        self._stop = anyio.Event()
        self._task: asyncio.Task[None] | None = None
        self._scope: anyio.CancelScope | None = None

    @property
    def usable(self) -> bool:
        """True while the handshake is done and the server has not gone away."""
        return self.session is not None and not self.lost

    def require_session(self) -> ClientSession:
        """The SDK session of this open connection (MCPConnectionError once it is gone)."""
        if self.session is None:
            raise MCPConnectionError(f"MCP server '{self.owner.name}' is not connected")
        return self.session

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
                watched(self.owner.make_transport(), self._mark_lost),
                read_timeout_seconds=self.owner.config.timeout,
                mode=self.owner.mode,
                cache=None,
                client_info=Implementation(name="jianmu_bt", version=__version__),
            )
            async with client:
                self.session = client.session
                self.server_info = client.server_info
                self._ready.set()
                await self._stop.wait()
        except Exception as exc:  # reported by `open`, or by the next call as a lost connection
            self.error = root_cause(exc)
        finally:
            self.lost = True
            self._ready.set()

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
