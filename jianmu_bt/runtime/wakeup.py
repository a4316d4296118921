"""Wakeup: the runner's "something changed" flag, awaited with an optional deadline.

The runner waits for it between ticks, once per tick, so it is kept small: a flag, and while
someone waits a bare asyncio future (about 100 bytes) instead of an `anyio.Event` (an anyio
event wrapping an asyncio event and its waiter deque, about 1.5 KiB, made afresh for each
wait). The deadline is a loop timer that resolves the same future, not a cancel scope. On event
loops other than asyncio's an `anyio.Event` stands in for the future.
"""

from __future__ import annotations

import asyncio
import math
from typing import Any

import anyio


class Wakeup:
    """A flag set from the event loop's thread and awaited by one task at a time."""

    __slots__ = ("_is_set", "_waiter")

    def __init__(self) -> None:
        self._is_set = False
        self._waiter: Any = None  # an asyncio future, or an anyio.Event off asyncio

    def is_set(self) -> bool:
        """Whether `set()` was called since the last `clear()`."""
        return self._is_set

    def clear(self) -> None:
        """Lower the flag (the runner does, before each tick)."""
        self._is_set = False

    def set(self) -> None:
        """Raise the flag and wake the waiting task (call it in the event loop's thread)."""
        if self._is_set:
            return
        self._is_set = True
        waiter = self._waiter
        if waiter is None:
            return
        if isinstance(waiter, asyncio.Future):
            if not waiter.done():
                waiter.set_result(None)
        else:
            waiter.set()

    async def wait(self, timeout: float | None = None) -> None:
        """Return once the flag is set, or after `timeout` seconds (None: no deadline)."""
        if self._is_set:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # not asyncio
            loop = None
        if loop is None:
            self._waiter = event = anyio.Event()
            try:
                with anyio.move_on_after(math.inf if timeout is None else timeout):
                    await event.wait()
            finally:
                self._waiter = None
            return
        self._waiter = future = loop.create_future()
        timer = None if timeout is None else loop.call_later(timeout, _resolve, future)
        try:
            await future
        finally:
            self._waiter = None
            if timer is not None:
                timer.cancel()


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)
