"""Asking the run's guard about tool calls, and waiting while any call is PENDING."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio

from jianmu_bt.runtime.context import LoopHandle


class ThreadSafeEvent:
    """An anyio Event that may be set from any thread (approvals can come from anywhere)."""

    def __init__(self) -> None:
        self._event = anyio.Event()
        self._loop = LoopHandle()

    def set(self) -> None:
        """Wake the waiter, from the loop's thread or any other (never blocks the caller)."""
        self._loop.call_soon(self._event.set)

    def clear(self) -> None:
        """Re-arm after a wake-up."""
        if self._event.is_set():
            self._event = anyio.Event()

    async def wait(self) -> None:
        """Until `set` is called."""
        await self._event.wait()


async def verdicts_when_decided(
    guard: Any,
    check: Callable[[], list[Any]],
    on_pending: Callable[[list[Any]], None],
) -> list[Any]:
    """`check()` again each time the approval store changes, until no verdict is PENDING.

    `on_pending(pending_verdicts)` runs whenever the calls are held (to emit events, save state).
    """
    changed = ThreadSafeEvent()
    unsubscribe = guard.approvals.on_change(lambda _change: changed.set())
    try:
        while True:
            verdicts = check()
            pending = [v for v in verdicts if v.decision.value == "pending"]
            if not pending:
                return verdicts
            on_pending(pending)
            await changed.wait()
            changed.clear()
    finally:
        unsubscribe()
