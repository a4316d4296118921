"""One tool call as the tree nodes make it: events, timeout, retries with backoff, guard records.

Shared by ToolNode (an explicit step) and ToolExecutor (a batch from an LLM).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio

from jianmu_bt.nodes.handing_out import hand_out
from jianmu_bt.nodes.progress import progress_events
from jianmu_bt.runtime.context import RunContext
from jianmu_bt.runtime.events import EventBus
from jianmu_bt.runtime.services import RunGuard
from jianmu_bt.tools import Tool, ToolCall, ToolResult
from jianmu_bt.tools.call_context import (
    IDEMPOTENCY_PARAMETER,
    enter_call,
    leave_call,
    wants_idempotency_key,
)
from jianmu_bt.tools.external import is_external
from jianmu_bt.tools.retry import NO_RETRY, RetryPolicy
from jianmu_bt.tools.runners import ToolRunner

RUN_KEY = "__jianmu_run__"
"""The injected argument through which a tool that `needs_run` (an `AgentTool`) receives the
RunContext of the run calling it; such a tool runs in this process, never through a runner."""

RUNNER_KEY = "__jianmu_runner__"
"""The injected argument giving such a tool the runner its call would have gone to (a sandbox):
the tool sends its own inner calls there."""


@dataclass(frozen=True, slots=True)
class MeteredResult(ToolResult):
    """A tool result that also reports LLM usage spent making it (an `AgentTool`'s inner run):
    the executor adds `usage` to the run's `usage` when it publishes the result, from the
    journal too when the call is replayed, so a resumed run counts it again."""

    usage: dict[str, Any] = field(default_factory=dict)


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
    first: ToolResult | None = None,
    started: float | None = None,
    idempotency_key: str | None = None,
) -> ToolResult:
    """Run one call with events and retries; always a ToolResult (cancellation still propagates).

    Emits `tool.call.started`, then `tool.call.retry` per retry, then `tool.call.completed` or
    `tool.call.failed`. `guard` (a GuardEnforcer), when given, records every attempt.
    `first` is the result of a first attempt already made (started, and recorded with the
    guard) at `started` (`time.monotonic()`), as `run_calls_together` makes them: the call
    goes on from there.

    A retry never overlaps an earlier attempt: after a timed-out attempt whose thread still
    runs, the retry starts only once that thread has ended (`Tool.call` waits, within the
    retry's own timeout), and its `tool.call.retry` event says so with `overruns`, the number
    of such threads still running.

    `idempotency_key`, when given, is the key of the call: the tool reads it with
    `idempotency_key()` (and as its injected parameter when it declares one), and its progress
    reports become `tool.progress` events of `node` while the call runs.
    """
    events = context.events if context is not None else None
    if events is not None and not events.active:
        events = None  # nobody listens as the call starts: its events cost nothing
    if runner is None and context is not None:
        runner = context.tool_runner
    if getattr(tool, "needs_run", False) and context is not None:
        injected = {**(injected or {}), RUN_KEY: context, RUNNER_KEY: runner}
        runner = None
    outer = None  # the call scope this call replaces, put back at its end
    if idempotency_key is not None:
        if wants_idempotency_key(tool):
            injected = {**(injected or {}), IDEMPOTENCY_PARAMETER: idempotency_key}
        outer = enter_call(idempotency_key, progress_events(events, node, tool.name, call.id))
    try:
        if first is None:
            emit_started(events, node, tool, call)
            started = time.monotonic()
            if is_external(tool):  # handed out: its result comes from outside, never retried
                result = await hand_out(context, node, tool, call, idempotency_key)
                if guard is not None:
                    guard.record(call, tool, result.ok)
                emit_finished(events, node, tool, call, result, started, 1)
                return result
            result = await tool.call(
                call.arguments, injected=injected, runner=runner, timeout=timeout
            )
            if guard is not None:
                guard.record(call, tool, result.ok)
        else:
            result = first
            started = time.monotonic() if started is None else started
        attempts = 1
        if not result.ok and retryable(result, retry):
            result, attempts = await _retried(
                events, node, tool, call, result, retry, started, timeout, injected, runner, guard
            )
        if tool.overruns:
            # A timed-out attempt's thread still runs: the call has failed, but its slot (the next
            # step of a serial path, a place in a parallel batch) stays taken until the thread ends.
            _emit(events, "tool.call.overrun", node, tool, call, overruns=tool.overruns)
            await tool.wait_for_overruns()
        emit_finished(events, node, tool, call, result, started, attempts)
        return result
    finally:
        if outer is not None:
            leave_call(outer)


async def _retried(
    events: EventBus | None,
    node: str,
    tool: Tool,
    call: ToolCall,
    result: ToolResult,
    retry: RetryPolicy,
    started: float,
    timeout: float | None,
    injected: Mapping[str, Any] | None,
    runner: ToolRunner | None,
    guard: RunGuard | None,
) -> tuple[ToolResult, int]:
    """The retries of a failed call, as `retry` allows: the last result and the attempts made."""
    attempt = 0
    while not result.ok and retryable(result, retry):
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
        result = await tool.call(call.arguments, injected=injected, runner=runner, timeout=timeout)
        if guard is not None:
            guard.record(call, tool, result.ok)
    return result, attempt + 1


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


def emit_started(events: EventBus | None, node: str, tool: Tool, call: ToolCall) -> None:
    """Emit `tool.call.started` for `call` (when there is an event bus)."""
    _emit(events, "tool.call.started", node, tool, call, arguments=call.arguments)


def emit_finished(
    events: EventBus | None,
    node: str,
    tool: Tool,
    call: ToolCall,
    result: ToolResult,
    started: float,
    attempts: int,
) -> None:
    """Emit `tool.call.completed` or `tool.call.failed` for a call begun at `started`."""
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


def retryable(result: ToolResult, retry: RetryPolicy) -> bool:
    """Whether `retry` allows trying a call with this failed result again (a call of the wrong
    shape never is; a timed-out one only with `retry_timeouts`)."""
    error = result.error or ""
    if not retry.retry_timeouts and _TIMED_OUT in error:
        return False
    return not error.startswith(_NOT_RETRYABLE) and "expects a JSON object" not in error
