"""Where a sync tool runs when it did not say (`blocking=None`, the default of `@tool`).

A sync function may be a quick, pure computation (run it on the event loop: a call costs a few
microseconds) or it may block on I/O or a lock (run it in a worker thread, so the tree's event
loop keeps going: a hop costs about 0.05-0.1 ms). `Placement` learns which from the calls:

1. The first calls run in a worker thread, and each is timed there.
2. After `PROBATION` calls in a row that each took at most `SLOW_CALL`, the tool runs inline, on
   the event loop's thread, still timed. An inline call sees what a worker thread sees: a copy
   of the caller's context (contextvars) and no running event loop (so `asyncio.run` inside it
   works as it would in a thread).
3. An inline call that takes longer than `SLOW_CALL` sends the tool back to the threads. Each
   time this happens, the way back needs four times as many quick calls in a row (16, 64, 256,
   then `MAX_PROBATION`), so a tool that blocks now and then soon stays in the threads, while a
   quick tool that a busy machine happened to pause once comes back.

Why `SLOW_CALL` is 2 ms: a call that takes longer pays at most a few per cent for the hop to a
thread, while an inline call holds the tree's loop for no longer than a tick of a mid-sized tree
(and 50 times less than asyncio's own slow-callback warning, 100 ms). A call that blocks stalls
the loop at most once before the tool moves to the threads; a tool known to block (network, disk,
subprocesses, locks) should say so with `@tool(blocking=True)` and never run inline.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from contextvars import copy_context
from typing import TYPE_CHECKING, TypeVar

from jianmu_bt.tools import event_loop

if TYPE_CHECKING:
    from asyncio import AbstractEventLoop

T = TypeVar("T")

#: Seconds a call may take and still count as quick.
SLOW_CALL = 0.002
#: Quick calls in a row, in a thread, before a tool first runs inline.
PROBATION = 4
#: The longest probation after a tool was caught blocking inline again and again.
MAX_PROBATION = 1024

_clock = time.perf_counter


class Placement:
    """What the calls of one sync tool have shown so far: inline or in a worker thread.

    `inline` is read without a lock on the hot path; updates from worker threads take one.
    """

    __slots__ = ("_lock", "demotions", "inline", "needed", "streak")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        #: Whether calls run on the event loop's thread now.
        self.inline = False
        #: Quick calls in a row in a thread since the last slow one.
        self.streak = 0
        #: Quick calls in a row needed to run inline.
        self.needed = PROBATION
        #: Times an inline call was slow.
        self.demotions = 0

    def in_thread(self, work: Callable[[], T]) -> Callable[[], T]:
        """`work` for a worker thread, timed there (a call that raises is timed too)."""

        def timed() -> T:
            start = _clock()
            try:
                return work()
            finally:
                self._ran_in_thread(_clock() - start)

        return timed

    def run_inline(self, work: Callable[[], T], loop: AbstractEventLoop) -> T:
        """Run `work` here, on the thread of `loop` (running), as a worker thread would."""
        event_loop.set_running_loop(None)
        start = _clock()
        try:
            return copy_context().run(work)
        finally:
            elapsed = _clock() - start
            event_loop.set_running_loop(loop)
            if elapsed > SLOW_CALL:
                self._ran_slow_inline()

    def _ran_in_thread(self, seconds: float) -> None:
        with self._lock:
            if seconds > SLOW_CALL:  # also when it went inline meanwhile: not yet, then
                self.inline = False
                self.streak = 0
                return
            self.streak += 1
            if self.streak >= self.needed:
                self.inline = True

    def _ran_slow_inline(self) -> None:
        with self._lock:
            if not self.inline:  # another slow call got here first
                return
            self.inline = False
            self.streak = 0
            self.demotions += 1
            self.needed = min(MAX_PROBATION, PROBATION * 4**self.demotions)

    def __repr__(self) -> str:
        where = "inline" if self.inline else f"thread ({self.streak}/{self.needed} quick)"
        return f"<Placement {where}>"
