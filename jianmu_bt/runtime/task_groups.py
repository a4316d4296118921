"""Task groups for a run's work: asyncio's own on asyncio, anyio's on other backends.

A task in an `asyncio.TaskGroup` costs about a quarter of one in an anyio task group (anyio 4.14+
gives every task a handle, a cancel scope and an event): a run with one async node spends about
36 µs on an anyio group and its task, 8 µs on asyncio's. anyio cancel scopes still work inside
asyncio's tasks, so the work in them is cancelled the same way.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from contextlib import AbstractAsyncContextManager
from typing import Any

import anyio
import anyio.abc

TaskGroup = asyncio.TaskGroup | anyio.abc.TaskGroup


def on_asyncio() -> bool:
    """True when the running event loop is asyncio's (not trio's)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def create_task_group() -> AbstractAsyncContextManager[TaskGroup]:
    """A new task group for the running event loop (`async with create_task_group() as group`)."""
    return asyncio.TaskGroup() if on_asyncio() else anyio.create_task_group()


def start_soon(group: TaskGroup, fn: Callable[..., Coroutine[Any, Any, Any]], *args: Any) -> None:
    """Start `fn(*args)` (a coroutine function) as a task of `group`."""
    if isinstance(group, asyncio.TaskGroup):
        group.create_task(fn(*args))
    else:
        group.start_soon(fn, *args)
