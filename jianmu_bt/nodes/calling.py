"""One tool call as the tree nodes make it: events, timeout, retries with backoff, guard records.

Shared by ToolNode (an explicit step) and ToolExecutor (a batch from an LLM).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from typing import Any

import anyio

from jianmu_bt.runtime.context import RunContext
from jianmu_bt.runtime.events import EventBus
from jianmu_bt.runtime.services import RunGuard
from jianmu_bt.tools import Tool, ToolCall, ToolResult
from jianmu_bt.tools.base import has_overruns, wait_for_overruns
from jianmu_bt.tools.blocking import blocking_pool
from jianmu_bt.tools.retry import NO_RETRY, RetryPolicy
from jianmu_bt.tools.runners import ToolRunner

BlockingWork = tuple[Tool, ToolCall, Callable[[], Any] | ToolResult]
"""One call for `run_blocking_calls`: the tool, the call and its `tool._blocking_work(...)`."""


async def run_tool_call(
    context: RunContext | None,
    node: str,
    tool: Tool,
    call: ToolCall,
    *,
    retry: RetryPolicy = NO_RETRY,
    timeout: float | None = None,
    injected: Mapping[str, Any] | None = None,
    runner: ToolRunner | None = None,
    guard: RunGuard | None = None,
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
        runner = context.tool_runner
    _started(events, node, tool, call)
    started = time.monotonic()
    attempt = 0
    while True:
        result = await tool.call(call.arguments, injected=injected, runner=runner, timeout=timeout)
        if guard is not None:
            guard.record(call, tool, result.ok)
        if result.ok or not _retryable(result, retry):
            break
        delay = retry.decide(attempt + 1, time.monotonic() - started).delay
        if delay is None:
            break
        attempt += 1
        overruns = tool.overruns  # the retry waits for these threads before it starts
        _emit(
            events,
            "tool.call.retry",
            node,
            tool,
            call,
            attempt=attempt,
            delay=delay,
            error=result.error,
            **({"overruns": overruns} if overruns else {}),
        )
        await anyio.sleep(delay)
    if tool.overruns:
        # A timed-out attempt's thread still runs: the call has failed, but its slot (the next
        # step of a serial path, a place in a parallel batch) stays taken until the thread ends.
        _emit(events, "tool.call.overrun", node, tool, call, overruns=tool.overruns)
        await tool.wait_for_overruns()
    _finished(events, node, tool, call, result, started, attempt + 1)
    return result


async def run_blocking_calls(
    context: RunContext | None,
    node: str,
    work: list[BlockingWork],
    results: dict[str, ToolResult],
    *,
    guard: RunGuard | None = None,
) -> None:
    """Run many blocking calls at once: one hand-over to the worker threads, results as they end.

    `work` holds each call's `tool._blocking_work(...)`: the bound function, or the ToolResult
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
        results[id_of(call)] = result

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
                    finish(tool, call, tool._to_result(future.result()))
                elif isinstance(error, Exception):
                    finish(tool, call, tool._error_result(error))
                else:  # KeyboardInterrupt and the like are not tool faults
                    raise error
    finally:
        for future, (tool, _) in running.items():  # a halt: files the calls still running
            tool.record_overrun(pool.abandon(future))


def id_of(call: ToolCall) -> str:
    """The id of a call a node makes: every call of a batch has one (`with_unique_ids`)."""
    if call.id is None:
        raise ValueError(f"the call to {call.name!r} has no id; give it one with with_id()")
    return call.id


def _emit(
    events: EventBus | None, type: str, node: str, tool: Tool, call: ToolCall, **data: Any
) -> None:
    if events is not None:
        events.emit(type, node=node, tool=tool.name, call_id=call.id, **data)


def _started(events: EventBus | None, node: str, tool: Tool, call: ToolCall) -> None:
    _emit(events, "tool.call.started", node, tool, call, arguments=call.arguments)


def _finished(
    events: EventBus | None,
    node: str,
    tool: Tool,
    call: ToolCall,
    result: ToolResult,
    started: float,
    attempts: int,
) -> None:
    if events is not None:
        outcome = {"output": result.output} if result.ok else {"error": result.error}
        _emit(
            events,
            "tool.call.completed" if result.ok else "tool.call.failed",
            node,
            tool,
            call,
            duration=time.monotonic() - started,
            attempts=attempts,
            **outcome,
        )


_NOT_RETRYABLE = ("Error: invalid arguments", "Error: unknown tool")
_TIMED_OUT = "' timed out after "  # `Tool.call`'s error for an attempt past its timeout


def _retryable(result: ToolResult, retry: RetryPolicy) -> bool:
    error = result.error or ""
    if not retry.retry_timeouts and _TIMED_OUT in error:
        return False
    return not error.startswith(_NOT_RETRYABLE) and "expects a JSON object" not in error
