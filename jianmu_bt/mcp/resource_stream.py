"""ResourceStream: the `subscriptions/listen` stream of a 2026-07-28 connection for its
subscribed resources.

A 2026-07-28 server announces resource updates only on a `subscriptions/listen` stream; one
stream carries every subscribed URI, so a change of the set replaces the stream. The
replacement is opened and acknowledged first, and only then is the old one stopped: no update
is lost in between (one may arrive twice, which listeners take as they take any repeat), and
a replacement that fails leaves the old stream, and the subscriptions it holds, as they were.
The server must honour every URI asked for, else the change is refused.

Streams run in the connection's task group, so they end with the connection. One that ends
after its acknowledgement (the server closed it, an idle HTTP stream timed out) is opened
again after a delay that grows up to a bound, and its URIs are reported as possibly changed:
updates are not replayed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Coroutine
from typing import Any

import anyio

from jianmu_bt.mcp.errors import MCPClientError

logger = logging.getLogger(__name__)

#: Longest wait for a stopped stream's task to end.
STOP_TIMEOUT = 5.0
#: Seconds before a stream that ended is opened again; doubled after each failed reopening.
REOPEN_DELAY = 1.0
#: The longest delay between two reopenings.
REOPEN_DELAY_MAX = 30.0

Spawn = Callable[[Callable[[], Coroutine[Any, Any, None]]], object]
"""Starts a task in the connection's task group (`TaskGroup.start_soon`)."""
Reopened = Callable[[frozenset[str]], Coroutine[Any, Any, None]]
"""Awaited with the URIs of a stream that was opened again (their updates may be missed)."""


class _Held:
    """One stream's task: its URIs, how to stop it, and what happened at its start."""

    def __init__(self, uris: frozenset[str]) -> None:
        self.uris = uris
        self.scope = anyio.CancelScope()
        self.acknowledged = anyio.Event()
        self.ended = anyio.Event()
        self.failure: BaseException | None = None


class ResourceStream:
    """The resource-subscription stream of one connection (see the module's docstring).

    `spawn` starts a task in the connection's task group, `usable()` says whether the
    connection still stands, `reopened(uris)` is told of a stream opened again.
    """

    def __init__(
        self, server: str, spawn: Spawn, usable: Callable[[], bool], reopened: Reopened
    ) -> None:
        self.server = server
        self._spawn = spawn
        self._usable = usable
        self._reopened = reopened
        self._current: _Held | None = None

    @property
    def uris(self) -> frozenset[str]:
        """The URIs the stream in place carries (empty when there is none)."""
        return self._current.uris if self._current is not None else frozenset()

    async def hold(self, client: Any, uris: Collection[str]) -> None:
        """Carry exactly `uris` from now on (no stream when empty), on `client` (the SDK
        `Client`). Returns once the new stream is acknowledged and the old one stopped; on any
        failure (cancellation included) the old stream stays and the error is raised."""
        wanted = frozenset(uris)
        if wanted == self.uris:
            return
        fresh: _Held | None = None
        if wanted:
            fresh = _Held(wanted)
            self._spawn(lambda: self._run(fresh, client))
            try:
                await fresh.acknowledged.wait()
                if fresh.failure is not None:
                    raise fresh.failure
            except BaseException:
                await self._stop(fresh)
                raise
        old, self._current = self._current, fresh
        if old is not None:
            await self._stop(old)

    @staticmethod
    async def _stop(held: _Held) -> None:
        held.scope.cancel()
        with anyio.CancelScope(shield=True), anyio.move_on_after(STOP_TIMEOUT):
            await held.ended.wait()

    async def _run(self, held: _Held, client: Any) -> None:
        """The stream's task: open, check, drain; reopen while the connection stands."""
        delay = REOPEN_DELAY
        first = True
        with held.scope:
            try:
                while True:
                    try:
                        await self._listen(held, client, first)
                        delay = REOPEN_DELAY  # it stood, so the next reopening starts afresh
                    except Exception as exc:
                        if first:
                            held.failure = exc
                            return
                        logger.warning(
                            "MCP server '%s': resource updates stopped (%s: %s); reopening",
                            self.server,
                            type(exc).__name__,
                            exc,
                        )
                        delay = min(2 * delay, REOPEN_DELAY_MAX)
                    first = False
                    await anyio.sleep(delay)
                    if not self._usable():  # the server went away: the next call reconnects
                        return
            finally:
                held.acknowledged.set()  # a start that failed or was stopped wakes `hold`
                held.ended.set()

    async def _listen(self, held: _Held, client: Any, first: bool) -> None:
        async with client.listen(resource_subscriptions=sorted(held.uris)) as stream:
            honored = set(getattr(stream.honored, "resource_subscriptions", None) or ())
            refused = sorted(held.uris - honored)
            if refused:
                raise MCPClientError(
                    f"MCP server '{self.server}' did not honour the subscription to "
                    f"{', '.join(refused)} (its subscriptions/listen acknowledgement leaves "
                    "it out)"
                )
            held.acknowledged.set()
            if not first:  # in a task of its own: a listener may change the subscriptions
                uris = held.uris
                self._spawn(lambda: self._reopened(uris))
            async for _event in stream:  # its notifications reach the message handler too
                pass


__all__ = ["REOPEN_DELAY", "STOP_TIMEOUT", "ResourceStream"]
