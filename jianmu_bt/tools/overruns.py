"""Overruns: calls abandoned by a timeout or cancellation while their worker thread still runs.

`run_blocking` (jianmu_bt.tools.blocking) leaves an `Overrun` on the CancelledError of a call it
abandons; `Tool.execute` files it in the tool's `Overruns`, which the tool's next call waits on, so
that two calls of one tool never overlap. Calls that are not abandoned pay nothing for this.
"""

from __future__ import annotations

import contextlib
import importlib
import threading
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import anyio

# Guards every Overrun and Overruns. Taken only when a call is abandoned, when an abandoned call
# ends and around waits, never on the path of a call that runs to its end; never held while a
# pool's lock is taken.
_overrun_lock = threading.Lock()
_OVERRUN_ATTRIBUTE = "_jianmu_overrun"


class Overrun:
    """A call abandoned (timeout or cancellation) while a worker thread still runs it.

    `ended` turns True when the thread returns from the call. `Overruns.add` files it with the
    calls of one tool, whose waiters it wakes when it ends.
    """

    __slots__ = ("_owner", "_started", "ended")

    def __init__(self) -> None:
        self.ended = False
        self._started = True  # False only on the anyio path, until the thread takes the call
        self._owner: Overruns | None = None

    def _end(self) -> None:
        """The thread has returned from the call (called from that thread)."""
        with _overrun_lock:
            self.ended = True
            owner, self._owner = self._owner, None
            wake = owner._discard(self) if owner is not None else []
        for waker in wake:
            waker()

    def __repr__(self) -> str:
        return f"<Overrun {'ended' if self.ended else 'running'}>"


class Overruns:
    """The abandoned calls of one tool whose threads still run: what its next call waits for.

    `count` is read without a lock as a quick check (0: nothing to wait for); `wait()` is exact.
    """

    __slots__ = ("_running", "_waiters", "count")

    def __init__(self) -> None:
        self._running: set[Overrun] = set()
        self._waiters: list[Callable[[], None]] = []
        #: Threads still running abandoned calls.
        self.count = 0

    def add(self, overrun: Overrun) -> bool:
        """File a running overrun here; False (and nothing to wait for) when it has ended."""
        with _overrun_lock:
            if overrun.ended or overrun._owner is not None:
                return False
            overrun._owner = self
            self._running.add(overrun)
            self.count = len(self._running)
        return True

    async def wait(self) -> None:
        """Return once none of these calls' threads still runs (also those added meanwhile).

        No polling: the last thread to end wakes the waiters through their event loop.
        Cancellable; a cancelled wait leaves nothing behind.
        """
        import anyio  # here, not with the module: loading a tree file runs no event loop

        while self.count:
            event = anyio.Event()
            waker = _waker(event)
            with _overrun_lock:
                if not self._running:
                    return
                self._waiters.append(waker)
            try:
                await event.wait()
            finally:
                with _overrun_lock, contextlib.suppress(ValueError):
                    self._waiters.remove(waker)

    @property
    def waiting(self) -> int:
        """Calls waiting in `wait()` right now."""
        return len(self._waiters)

    def _discard(self, overrun: Overrun) -> list[Callable[[], None]]:
        """Forget an ended overrun; the waiters to wake when none is left. Holds the lock."""
        self._running.discard(overrun)
        self.count = len(self._running)
        if self._running:
            return []
        waiters, self._waiters = self._waiters, []
        return waiters

    def __repr__(self) -> str:
        return f"<Overruns running={self.count}>"


def has_overruns(tools: Iterable[object]) -> bool:
    """True when any of `tools` still runs an abandoned call in a thread (`Tool.overruns`).

    A cheap synchronous check (no await) to guard `wait_for_overruns` on a hot path.
    """
    for item in tools:
        record = getattr(item, "_overruns", None)
        if record is not None and record.count:
            return True
    return False


async def wait_for_overruns(tools: Iterable[object]) -> None:
    """Return once no thread still runs an abandoned (timed-out or cancelled) call of `tools`.

    Waits on each tool's record in turn until all are clear, also for overruns that appear
    meanwhile; no polling (the ending thread wakes the waiter). No time limit of its own: cancel
    the caller to stop waiting (a cancelled wait leaves nothing behind).

    `Tool.call` already makes the next call of the same tool wait; call this where a turn or a
    concurrency slot must stay taken while a timed-out call's thread runs on (ToolExecutor: after
    each call of a serial batch, and inside the slot of a parallel one). Guard it with
    `has_overruns(tools)` where even an await that returns at once counts.
    """
    pending = list(tools)
    while True:
        for item in pending:
            record = getattr(item, "_overruns", None)
            if record is not None and record.count:
                await record.wait()
                break
        else:
            return


def _waker(event: anyio.Event) -> Callable[[], None]:
    """A function any thread may call to set `event` in the running event loop."""
    import asyncio  # as `anyio` in `Overruns.wait`

    try:
        schedule = asyncio.get_running_loop().call_soon_threadsafe
    except RuntimeError:  # anyio's other backend; trio is optional, hence no static import
        trio = importlib.import_module("trio")
        schedule = trio.lowlevel.current_trio_token().run_sync_soon

    def wake() -> None:
        with contextlib.suppress(RuntimeError):  # the loop has closed: nobody waits any more
            schedule(event.set)

    return wake


def _mark(exc: BaseException, overrun: Overrun | None) -> None:
    if overrun is not None:
        with contextlib.suppress(AttributeError, TypeError):
            setattr(exc, _OVERRUN_ATTRIBUTE, overrun)


def overrun_of(exc: BaseException) -> Overrun | None:
    """The Overrun a cancelled `run_blocking` left on its CancelledError, taken off it (so the
    innermost caller that files it is the only one), or None."""
    overrun = getattr(exc, _OVERRUN_ATTRIBUTE, None)
    if overrun is not None:
        with contextlib.suppress(AttributeError):
            delattr(exc, _OVERRUN_ATTRIBUTE)
    return overrun
