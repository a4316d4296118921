"""Progress of a served call: the tool's `report_progress(...)` becomes `notifications/progress`.

When a client's `tools/call` carries a `progressToken`, the call runs under a `progress_sink`
(`jianmu_bt.tools.call_context`) that hands each report to this forwarder. A sync tool reports
from its worker thread, so the sink only queues the report and wakes the server's event loop
(`call_soon_threadsafe`); one task on the loop sends the notifications, in order, and the queue
is drained before the call's result goes out. The sink is installed for every served call: over
JSON-RPC the SDK sends nothing unless the request carried a `progressToken`, and in-process it
calls the client's callback directly. Reports are bounded: the queue keeps the latest
`MAX_PENDING`, and a report that does not move forward (MCP requires progress to increase) is
dropped, so a tool that floods reports cannot flood the client or grow memory.

```python
async with forward_progress(ctx.session.report_progress) as sink:
    with progress_sink(sink):
        result = await toolset.call(call)
```
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import threading
from collections.abc import AsyncIterator, Awaitable, Callable

import anyio
import anyio.lowlevel

from jianmu_bt.tools.call_context import ProgressSink

logger = logging.getLogger(__name__)

#: Reports waiting to be sent at most; older ones are dropped first.
MAX_PENDING = 64
#: Seconds the last reports of a finished call may take to send before they are dropped.
FLUSH_TIMEOUT = 5.0

Report = tuple[float, "float | None", "str | None"]
Send = Callable[[float, "float | None", "str | None"], Awaitable[None]]


class ProgressForwarder:
    """Queues reports from any thread and sends them from the event loop, in order.

    Nothing runs until the first report: then one task drains the queue (and ends when it is
    empty), so a call that reports nothing costs no task.
    """

    def __init__(self, send: Send, loop: asyncio.AbstractEventLoop) -> None:
        self._send = send
        self._loop = loop
        self._loop_thread = threading.get_ident()
        self._pending: collections.deque[Report] = collections.deque(maxlen=MAX_PENDING)
        self._task: asyncio.Task[None] | None = None
        self._closed = False
        self._last: float | None = None
        self.sent = 0
        self.dropped = 0

    def sink(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        """The `ProgressSink`: safe to call from the loop and from worker threads."""
        report = (float(progress), None if total is None else float(total), message)
        if threading.get_ident() == self._loop_thread:
            self._queue(report)
        else:
            with contextlib.suppress(RuntimeError):  # the loop is closing: nobody to tell
                self._loop.call_soon_threadsafe(self._queue, report)

    def _queue(self, report: Report) -> None:
        if self._closed:
            return
        if len(self._pending) == self._pending.maxlen:
            self.dropped += 1
        self._pending.append(report)
        if self._task is None or self._task.done():
            self._task = self._loop.create_task(self._drain())

    async def _drain(self) -> None:
        while self._pending:
            progress, total, message = self._pending.popleft()
            if self._last is not None and progress <= self._last:
                self.dropped += 1  # MCP: progress must increase with each notification
                continue
            self._last = progress
            try:
                await self._send(progress, total, message)
            except Exception as exc:
                # The client went away, or the notice could not be sent: progress stops, the
                # call goes on (a report is never the call's error).
                if not isinstance(exc, (anyio.BrokenResourceError, anyio.ClosedResourceError)):
                    logger.warning("a progress notification could not be sent: %r", exc)
                self._closed = True
                self.dropped += len(self._pending) + 1
                self._pending.clear()
                return
            self.sent += 1

    async def finish(self) -> None:
        """Send what is queued (the call returned), then stop taking reports."""
        await anyio.lowlevel.checkpoint()  # let call_soon_threadsafe hand-offs land
        self._closed = True
        if self._task is not None:
            with anyio.CancelScope(shield=True), anyio.move_on_after(FLUSH_TIMEOUT):
                await self._task

    def abandon(self) -> None:
        """Stop at once (the call was cancelled or failed)."""
        self._closed = True
        self._pending.clear()
        if self._task is not None:
            self._task.cancel()


@contextlib.asynccontextmanager
async def forward_progress(send: Send) -> AsyncIterator[ProgressSink]:
    """A sink whose reports `send(progress, total, message)` delivers from this event loop.

    On leaving normally, the reports still queued (those made from the loop, and those threads
    handed over before the call returned) are sent first; on an exception they are dropped.
    """
    forwarder = ProgressForwarder(send, asyncio.get_running_loop())
    try:
        yield forwarder.sink
    except BaseException:
        forwarder.abandon()
        raise
    await forwarder.finish()


__all__ = ["FLUSH_TIMEOUT", "MAX_PENDING", "ProgressForwarder", "forward_progress"]
