"""Asking the run's guard about tool calls, and waiting while any call is PENDING."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import anyio

from jianmu_bt.guard import ApprovalStatus, GuardVerdict
from jianmu_bt.llm import tool_result_message
from jianmu_bt.runtime.async_node import ContextNode
from jianmu_bt.runtime.context import LoopHandle
from jianmu_bt.runtime.services import RunGuard
from jianmu_bt.tools import ToolCall, ToolResult


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


def edit_noted(guard: RunGuard | None, call: ToolCall, result: ToolResult) -> dict[str, Any]:
    """The tool message answering `call` with `result`; when a reviewer approved the call only
    with other arguments, it starts by saying so and with which (the result is that call's, or
    the guard's refusal of it), so the model knows what was asked in its name."""
    message = tool_result_message(call, result)
    record = guard.approvals.get(call.id) if guard is not None and call.id else None
    if record is None or not record.edited or record.status is not ApprovalStatus.APPROVED:
        return message
    edited = json.dumps(record.approved_arguments, ensure_ascii=False, sort_keys=True)
    note = f"[A reviewer approved this call only with changed arguments: {edited}.]"
    message["content"] = f"{note}\n{message['content']}"
    return message
