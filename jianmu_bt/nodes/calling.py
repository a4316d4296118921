"""One tool call as the tree nodes make it: events, timeout, retries with backoff, guard records.

Shared by ToolNode (an explicit step) and ToolExecutor (a batch from an LLM).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import anyio

from jianmu_bt.runtime.context import RunContext
from jianmu_bt.tools import Tool, ToolCall, ToolResult
from jianmu_bt.tools.base import has_overruns, wait_for_overruns
from jianmu_bt.tools.blocking import blocking_pool


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

    A retry never overlaps an earlier attempt: after a timed-out attempt whose thread still
    runs, the retry starts only once that thread has ended (`Tool.call` waits, within the
    retry's own timeout), and its `tool.call.retry` event says so with `overruns`, the number
    of such threads still running.
    """
    events = context.events if context is not None else None
    if runner is None and context is not None:
        runner = context.services.get("runner")
    _started(events, node, tool, call)
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
            overruns = tool.overruns  # the retry waits for these threads before it starts
            events.emit(
                "tool.call.retry",
                node=node,
                tool=tool.name,
                call_id=call.id,
                attempt=attempt,
                delay=delay,
                error=result.error,
                **({"overruns": overruns} if overruns else {}),
            )
        await anyio.sleep(delay)
    if tool.overruns:
        # A timed-out attempt's thread still runs: the call has failed, but its slot (the next
        # step of a serial path, a place in a parallel batch) stays taken until the thread ends.
        if events is not None:
            events.emit(
                "tool.call.overrun",
                node=node,
                tool=tool.name,
                call_id=call.id,
                overruns=tool.overruns,
            )
        await tool.wait_for_overruns()
    _finished(events, node, tool, call, result, started, attempt + 1)
    return result


async def run_blocking_calls(
    context: RunContext | None,
    node: str,
    work: list[tuple[Tool, ToolCall, Callable[[], Any] | ToolResult]],
    results: dict[str, ToolResult],
    *,
    guard: Any = None,
) -> None:
    """Run many blocking calls at once: one hand-over to the worker threads, results as they end.

    `work` holds each call's `tool.blocking_work(...)`: the bound function, or the ToolResult
    error of arguments that do not fit. Events and guard records are those of `run_tool_call`
    with no retries and no timeout, the only case callers use this for; what it saves is a task
    and a separate wake-up per call. Results land in `results` as each call ends, so a halt
    keeps the finished ones; calls still running are abandoned (see `jianmu_bt.tools.blocking`)
    and recorded as their tools' overruns. Like `Tool.call`, the batch starts only once no
    abandoned call of its tools still runs.
    """
    events = context.events if context is not None else None
    if has_overruns(tool for tool, _, _ in work):
        await wait_for_overruns(tool for tool, _, _ in work)
    pool = await blocking_pool()
    started = time.monotonic()
    running: dict[asyncio.Future[Any], tuple[Tool, ToolCall]] = {}

    def finish(tool: Tool, call: ToolCall, result: ToolResult) -> None:
        if guard is not None:
            guard.record(call, tool, result.ok)
        _finished(events, node, tool, call, result, started, 1)
        results[call.id] = result

    for tool, call, job in work:
        _started(events, node, tool, call)
        if isinstance(job, ToolResult):
            finish(tool, call, job)
        else:
            running[pool.submit(job)] = (tool, call)
    try:
        while running:
            done, _ = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
            for future in done:
                tool, call = running.pop(future)
                error = future.exception()
                if error is None:
                    finish(tool, call, tool.to_result(future.result()))
                elif isinstance(error, Exception):
                    finish(tool, call, tool.error_result(error))
                else:  # KeyboardInterrupt and the like are not tool faults
                    raise error
    finally:
        for future, (tool, _) in running.items():  # a halt: files the calls still running
            tool.record_overrun(pool.abandon(future))


def _started(events: Any, node: str, tool: Tool, call: ToolCall) -> None:
    if events is not None:
        events.emit(
            "tool.call.started",
            node=node,
            tool=tool.name,
            call_id=call.id,
            arguments=call.arguments,
        )


def _finished(
    events: Any,
    node: str,
    tool: Tool,
    call: ToolCall,
    result: ToolResult,
    started: float,
    attempts: int,
) -> None:
    if events is not None:
        outcome = {"output": result.output} if result.ok else {"error": result.error}
        events.emit(
            "tool.call.completed" if result.ok else "tool.call.failed",
            node=node,
            tool=tool.name,
            call_id=call.id,
            duration=time.monotonic() - started,
            attempts=attempts,
            **outcome,
        )


_NOT_RETRYABLE = ("Error: invalid arguments", "Error: unknown tool")


def _retryable(result: ToolResult) -> bool:
    error = result.error or ""
    return not error.startswith(_NOT_RETRYABLE) and "expects a JSON object" not in error
