"""Task groups for a run's work: asyncio's own on asyncio, anyio's on other backends.

A task in an `asyncio.TaskGroup` costs about a quarter of one in an anyio task group (anyio 4.14+
gives every task a handle, a cancel scope and an event): a run with one async node spends about
36 µs on an anyio group and its task, 8 µs on asyncio's. anyio cancel scopes still work inside
asyncio's tasks, so the work in them is cancelled the same way.

`DeferredStarts` stands in for a task group while a tick runs outside the event loop's thread
(see `TreeRunner.tick`): it keeps the starts and hands them to the real group afterwards.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from contextlib import AbstractAsyncContextManager
from typing import Any

import anyio
import anyio.abc


class DeferredStarts:
    """Task starts collected outside the event loop, to be made in it later in one go."""

    __slots__ = ("_starts",)

    def __init__(self) -> None:
        self._starts: list[tuple[Callable[..., Coroutine[Any, Any, Any]], tuple[Any, ...]]] = []

    def __len__(self) -> int:
        return len(self._starts)

    def start_soon(self, fn: Callable[..., Coroutine[Any, Any, Any]], *args: Any) -> None:
        """Remember `fn(*args)`; `start_in` starts it."""
        self._starts.append((fn, args))

    def start_in(self, group: TaskGroup | None) -> None:
        """Start every remembered task in `group` (from the group's event loop), in order.

        With no group (the loop has been closed meanwhile) nothing starts: the work was halted.
        """
        starts, self._starts = self._starts, []
        if group is not None:
            for fn, args in starts:
                start_soon(group, fn, *args)


LoopTaskGroup = asyncio.TaskGroup | anyio.abc.TaskGroup
TaskGroup = LoopTaskGroup | DeferredStarts


def on_asyncio() -> bool:
    """True when the running event loop is asyncio's (not trio's)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def create_task_group() -> AbstractAsyncContextManager[LoopTaskGroup]:
    """A new task group for the running event loop (`async with create_task_group() as group`)."""
    return asyncio.TaskGroup() if on_asyncio() else anyio.create_task_group()


def start_soon(group: TaskGroup, fn: Callable[..., Coroutine[Any, Any, Any]], *args: Any) -> None:
    """Start `fn(*args)` (a coroutine function) as a task of `group`."""
    if isinstance(group, asyncio.TaskGroup):
        group.create_task(fn(*args))
    else:
        group.start_soon(fn, *args)
