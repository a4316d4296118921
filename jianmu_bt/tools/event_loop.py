"""asyncio's running-loop functions for the tool layer, imported on their first call.

Loading and checking a tree file (`jianmu validate`) builds its tools but runs no event loop, so
the tool layer does not import asyncio with its modules (about 16 ms of that command with
anyio). `get_running_loop` and `set_running_loop` are asyncio's own `_get_running_loop` and
`_set_running_loop` from their first call on: read them as attributes of this module, and a call
after the first pays what a direct call of asyncio's costs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from asyncio import AbstractEventLoop


def _first_get_running_loop() -> AbstractEventLoop | None:
    global get_running_loop
    from asyncio import events

    get_running_loop = events._get_running_loop
    return get_running_loop()


def _first_set_running_loop(loop: AbstractEventLoop | None) -> None:
    global set_running_loop
    from asyncio import events

    set_running_loop = events._set_running_loop
    set_running_loop(loop)


#: The event loop running in this thread, or None (on trio too).
get_running_loop: Callable[[], AbstractEventLoop | None] = _first_get_running_loop
#: Make `loop` this thread's running loop (None: none), as a worker thread has none.
set_running_loop: Callable[[AbstractEventLoop | None], None] = _first_set_running_loop
