"""One tool call as the tree nodes make it: events, timeout, retries with backoff, guard records.

Shared by ToolNode (an explicit step) and ToolExecutor (a batch from an LLM).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import anyio

from jianmu_bt.runtime.context import RunContext
from jianmu_bt.tools import Tool, ToolCall, ToolResult


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """`max_retries` extra attempts after a failure, waiting `backoff * 2**(attempt-1)` seconds.

    Failures of the call's shape (invalid arguments, unknown tool) are never retried: the same
    call would fail the same way.
    """

    max_retries: int = 0
    backoff: float = 0.5
    max_delay: float = 30.0

    def delay(self, attempt: int) -> float:
        """Seconds to wait before retry number `attempt` (1-based)."""
        return min(self.backoff * (2 ** (attempt - 1)), self.max_delay)


async def run_tool_call(
    context: RunContext | None,
    node: str,
    tool: Tool,
    call: ToolCall,
    *,
    retry: RetryPolicy = RetryPolicy(),
    timeout: float | None = None,
    injected: Mapping[str, Any] | None = None,
    runner: Any = None,
    guard: Any = None,
) -> ToolResult:
    """Run one call with events and retries; always a ToolResult (cancellation still propagates).

    Emits `tool.call.started`, then `tool.call.retry` per retry, then `tool.call.completed` or
    `tool.call.failed`. `guard` (a GuardEnforcer), when given, records every attempt.
    """
    events = context.events if context is not None else None
    if runner is None and context is not None:
        runner = context.services.get("runner")
    if events is not None:
        events.emit(
            "tool.call.started",
            node=node,
            tool=tool.name,
            call_id=call.id,
            arguments=call.arguments,
        )
    started = time.monotonic()
    attempt = 0
    while True:
        result = await tool.call(call.arguments, injected=injected, runner=runner, timeout=timeout)
        if guard is not None:
            guard.record(call, tool, result.ok)
        if result.ok or attempt >= retry.max_retries or not _retryable(result):
            break
        attempt += 1
        delay = retry.delay(attempt)
        if events is not None:
            events.emit(
                "tool.call.retry",
                node=node,
                tool=tool.name,
                call_id=call.id,
                attempt=attempt,
                delay=delay,
                error=result.error,
            )
        await anyio.sleep(delay)
    if events is not None:
        outcome = {"output": result.output} if result.ok else {"error": result.error}
        events.emit(
            "tool.call.completed" if result.ok else "tool.call.failed",
            node=node,
            tool=tool.name,
            call_id=call.id,
            duration=time.monotonic() - started,
            attempts=attempt + 1,
            **outcome,
        )
    return result


_NOT_RETRYABLE = ("Error: invalid arguments", "Error: unknown tool")


def _retryable(result: ToolResult) -> bool:
    error = result.error or ""
    return not error.startswith(_NOT_RETRYABLE) and "expects a JSON object" not in error
