"""Asking the run's guard about tool calls, and waiting while any call is PENDING."""

from __future__ import annotations

from collections.abc import Callable

import anyio

from jianmu_bt.guard import GuardVerdict
from jianmu_bt.runtime.async_node import ContextNode
from jianmu_bt.runtime.context import LoopHandle
from jianmu_bt.runtime.services import RunGuard


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
    guard: RunGuard,
    check: Callable[[], list[GuardVerdict]],
    on_pending: Callable[[list[GuardVerdict]], None],
) -> list[GuardVerdict]:
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


def announce(node: ContextNode, tool: str, call_id: str | None, verdict: GuardVerdict) -> None:
    """Emit the `guard.decision` event of a call the guard held or refused."""
    node.emit(
        "guard.decision",
        tool=tool,
        call_id=call_id,
        decision=verdict.decision.value,
        reason=verdict.reason,
    )
