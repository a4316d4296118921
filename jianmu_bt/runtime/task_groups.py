"""Task groups for a run's work: asyncio's own on asyncio, anyio's on other backends.

A task in an `asyncio.TaskGroup` costs about a quarter of one in an anyio task group (anyio 4.14+
gives every task a handle, a cancel scope and an event): a run with one async node spends about
36 µs on an anyio group and its task, 8 µs on asyncio's. anyio cancel scopes still work inside
asyncio's tasks, so the work in them is cancelled the same way.

On asyncio the work nodes spawn needs no group at all (`RunContext.spawn` makes a task of its own
and `RunContext.settle` waits for it): a run that needs a group for nothing else enters and
attaches `LOOP_TASKS` instead of making one (a group and its set of tasks: about 450 bytes a run).

`DeferredStarts` stands in for a task group while a tick runs outside the event loop's thread
(see `TreeRunner.tick`): it keeps the starts and makes them in the loop afterwards.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine
from contextlib import AbstractAsyncContextManager
from typing import Any

import anyio
import anyio.abc


class DeferredStarts:
    """Starts collected outside the event loop, to be made in it later in one go."""

    __slots__ = ("_starts",)

    def __init__(self) -> None:
        self._starts: list[tuple[Callable[..., None], tuple[Any, ...]]] = []

    def __len__(self) -> int:
        return len(self._starts)

    def defer(self, start: Callable[..., None], *args: Any) -> None:
        """Remember `start(*args)` (a plain function that starts a task); `run` calls it."""
        self._starts.append((start, args))

    def run(self) -> None:
        """Make every remembered start, in order (in the event loop's thread)."""
        starts, self._starts = self._starts, []
        for start, args in starts:
            start(*args)


class LoopTasks:
    """Attached in place of a task group on asyncio: spawned work becomes tasks of their own.

    A run that needs no group enters it where it would enter one (`async with LOOP_TASKS as
    group` gives LOOP_TASKS). Its `__aenter__` and `__aexit__` are static: entering binds no
    method object, where a with-block keeps the bound `__aexit__` for as long as the run lasts.
    """

    __slots__ = ()

    @staticmethod
    async def __aenter__() -> LoopTasks:
        return LOOP_TASKS

    @staticmethod
    async def __aexit__(*exc_info: object) -> None:
        return None

    def __repr__(self) -> str:
        return "LOOP_TASKS"


LOOP_TASKS = LoopTasks()
"""The one `LoopTasks`."""


LoopTaskGroup = asyncio.TaskGroup | anyio.abc.TaskGroup
TaskGroup = LoopTaskGroup | DeferredStarts | LoopTasks


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


def start_soon(
    group: LoopTaskGroup, fn: Callable[..., Coroutine[Any, Any, Any]], *args: Any
) -> None:
    """Start `fn(*args)` (a coroutine function) as a task of `group`."""
    if isinstance(group, asyncio.TaskGroup):
        group.create_task(fn(*args))
    else:
        group.start_soon(fn, *args)


async def within(scope: anyio.CancelScope, work: Callable[[], Awaitable[None]]) -> None:
    """Run `work()` inside `scope` (a task whose scope its starter keeps, to cancel it alone)."""
    with scope:
        await work()
