"""Wakeup: the runner's "something changed" flag, raised from any thread, awaited with an
optional deadline.

Calling it raises the flag in the run loop's thread (at once from that thread, soon from another,
through its `LoopHandle` part), while a run loop has it open. Being callable itself, it is what
the runner gives its context, its state (as a subscriber) and a journal to wake it: no bound
method of the runner is kept for each of them, for as long as the run lasts.

The runner waits for it between ticks, once per tick, so it is kept small: a flag, and while
someone waits a bare asyncio future (about 100 bytes), awaited directly (no coroutine of its
own), instead of an `anyio.Event` (an anyio event wrapping an asyncio event and its waiter
deque, about 1.5 KiB, made afresh for each wait). The deadline is a loop timer that resolves
the same future, not a cancel scope. On event loops other than asyncio's an `anyio.Event`
stands in for the future.
"""

from __future__ import annotations

import asyncio
import math
from asyncio import events
from collections.abc import Awaitable
from typing import Any

import anyio

from jianmu_bt.runtime.context import LoopHandle


class Wakeup(LoopHandle):
    """A flag raised from any thread (by calling it) and awaited by one task at a time."""

    __slots__ = ("_is_set", "_open", "_timer", "_waiter")

    def __init__(self) -> None:  # no event loop yet: `open` binds the one a run loop runs in
        self._is_set = False
        self._open = False
        self._waiter: Any = None  # an asyncio future, or an anyio.Event off asyncio
        self._timer: asyncio.TimerHandle | None = None

    def open(self) -> None:
        """Let calls reach the event loop running in this thread (a run loop starts)."""
        self.bind()
        self._open = True

    def close(self) -> None:
        """Calls do nothing from now on (the run loop has ended)."""
        self._open = False

    @property
    def is_open(self) -> bool:
        """Whether a run loop has it open (between `open` and `close`)."""
        return self._open

    def __call__(self, *_changed: object) -> None:
        """Ask the open run loop for a tick: raise the flag in its thread, never blocking the
        caller (a state subscriber's changed keys are ignored); closed, do nothing."""
        if self._open and not self._is_set:
            self.call_soon(self.set)

    def is_set(self) -> bool:
        """Whether `set()` was called since the last `clear()`."""
        return self._is_set

    def clear(self) -> None:
        """Lower the flag (the runner does, before each tick)."""
        self._is_set = False

    def set(self) -> None:
        """Raise the flag and wake the waiting task (in the event loop's thread: else call it)."""
        if self._is_set:
            return
        self._is_set = True
        waiter = self._waiter
        if waiter is None:
            return
        if isinstance(waiter, asyncio.Future):
            self._resolve()
        else:
            waiter.set()

    def wait(self, timeout: float | None = None) -> Awaitable[None]:
        """What to await until the flag is set, or for `timeout` seconds (None: no deadline).

        On asyncio it is the waiting future itself (not a coroutine: no frame of its own while
        the runner waits); the timer that resolves it at the deadline is cancelled when the
        flag resolves it first. A cancelled wait leaves nothing behind: the next `wait`
        replaces the future, and a late timer finds it done.
        """
        loop = events._get_running_loop()
        if self._is_set or loop is None:
            return self._wait_other(timeout)
        if self._timer is not None:  # left by a cancelled wait: it must not end this one
            self._timer.cancel()
        self._waiter = future = loop.create_future()
        self._timer = None if timeout is None else loop.call_later(timeout, self._resolve)
        return future

    def _resolve(self) -> None:
        future, self._waiter = self._waiter, None
        timer, self._timer = self._timer, None
        if timer is not None:
            timer.cancel()
        if future is not None and not future.done():
            future.set_result(None)

    async def _wait_other(self, timeout: float | None) -> None:
        """`wait` when the flag is already set (returns at once) or off asyncio."""
        if self._is_set:
            return
        self._waiter = event = anyio.Event()
        try:
            with anyio.move_on_after(math.inf if timeout is None else timeout):
                await event.wait()
        finally:
            self._waiter = None
