"""BackgroundLoop: the event loop that step-by-step ticks (`TreeRunner.tick`) hand work to.

A tick from synchronous code runs in the calling thread; the async work it starts needs an
event loop that keeps running between ticks. This is that loop: a blocking portal's thread whose
host task holds the task group the nodes' work is spawned into. The runner starts it on first
need; `close()` halts the work it holds, waits for it to clean up, and stops the thread.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio
from anyio.from_thread import BlockingPortal, start_blocking_portal

from jianmu_bt.runtime.context import LoopHandle, RunContext
from jianmu_bt.runtime.task_groups import DeferredStarts, create_task_group


class BackgroundLoop:
    """An event loop in a thread of its own, holding the work of one run's nodes."""

    def __init__(
        self, context: RunContext, wake: Callable[[], None], halt: Callable[[], None]
    ) -> None:
        """Start the loop; returns once the nodes' work can be spawned into it.

        `context` is attached to the loop's task group (with `wake`), and `halt` (stop every
        node, cancel every task) runs in the loop when it closes.
        """
        self._context, self._wake, self._halt = context, wake, halt
        self._loop: LoopHandle | None = None
        self._done: anyio.Event | None = None
        self._portal_cm = start_blocking_portal()
        self.portal: BlockingPortal = self._portal_cm.__enter__()
        self.portal.start_task(self._host)

    async def _host(self, *, task_status: Any = anyio.TASK_STATUS_IGNORED) -> None:
        self._loop = LoopHandle()
        self._done = anyio.Event()
        async with create_task_group() as task_group:
            self._context.attach(task_group, self._wake)
            task_status.started()
            await self._done.wait()
            self._halt()  # cancels every task the nodes started
            await self._context.settle()
        self._context.attach(None, self._wake)

    def start(self, starts: DeferredStarts) -> None:
        """Make the starts a tick deferred, in the loop (soon; the caller does not wait)."""
        if self._loop is not None:  # set by the host before the loop is handed out
            self._loop.call_soon(starts.run)

    def close(self) -> None:
        """Halt the work, wait for it to end, and stop the loop's thread."""
        if self._done is not None:
            self.portal.call(self._done.set)
        self._portal_cm.__exit__(None, None, None)
