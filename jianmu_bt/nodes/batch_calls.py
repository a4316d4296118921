"""The first attempts of a parallel batch's sync calls, made together instead of a task each.

Most calls an LLM asks for do little, so what a batch costs is mostly per-call machinery: a task,
a hop to a worker thread, a wake-up of the event loop. ToolExecutor hands the calls of sync tools
of this process here (`run_calls_together`), and the rest still get a task each:

- a call that runs on the loop (`Tool._runs_inline`: a quick sync tool) runs in the executor's
  own task, one after another (such a call never waits, so a task of its own buys nothing);
- calls that run in worker threads go to the threads in one hand-over, and their results come
  back in one wake-up of the loop for all that ended meanwhile;
- a timeout is a deadline, not a thread or a cancel scope per call: an inline call's is checked
  when it returns (`Tool.call`), the thread calls' by the one wait for all of them (a call past
  its deadline is abandoned as `Tool.call` abandons it, and fails the same way);
- what a first attempt leaves to do (a retry, waiting for the thread of a timed-out attempt)
  goes on in a task of its own, through `run_tool_call`.

Events, guard records and results are those of `run_tool_call` for each call.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable
from typing import Any, NamedTuple

from jianmu_bt.nodes.calling import emit_finished, emit_started, id_of, retryable, run_tool_call
from jianmu_bt.nodes.progress import progress_events
from jianmu_bt.runtime.context import RunContext
from jianmu_bt.runtime.services import RunGuard
from jianmu_bt.runtime.task_groups import LoopTaskGroup, start_soon
from jianmu_bt.tools import Tool, ToolCall, ToolResult
from jianmu_bt.tools.blocking import BlockingPool, blocking_pool
from jianmu_bt.tools.call_context import (
    ProgressSink,
    enter_call,
    leave_call,
    wants_idempotency_key,
)
from jianmu_bt.tools.retry import RetryPolicy


def can_run_together(tool: Tool | None, call: ToolCall) -> bool:
    """True when `run_calls_together` can make this call: a sync tool of this process (on the
    loop or in a worker thread), JSON-object arguments, no injected idempotency key and no
    abandoned call of the tool still running (those take the per-call path)."""
    return (
        tool is not None
        and not tool._run_is_async
        and (tool._runs_inline_on_asyncio or tool._runs_in_a_thread)
        and not isinstance(call.arguments, str)
        and not tool.overruns
        and not wants_idempotency_key(tool)
    )


class _Running(NamedTuple):
    tool: Tool
    call: ToolCall
    limit: float | None
    deadline: float


class _Batch:
    """One `run_calls_together`: where results go and how a call goes on after its first try."""

    def __init__(
        self,
        context: RunContext | None,
        node: str,
        results: dict[str, ToolResult],
        group: LoopTaskGroup,
        retry: RetryPolicy,
        timeout: float | None,
        guard: RunGuard | None,
    ) -> None:
        self.context = context
        self.events = context.events if context is not None else None
        self.node = node
        self.results = results
        self.group = group
        self.retry = retry
        self.timeout = timeout
        self.guard = guard
        self.started = time.monotonic()

    def progress(self, tool: Tool, call: ToolCall) -> ProgressSink | None:
        """Where the call's progress reports go: `tool.progress` events of this node."""
        return progress_events(self.events, self.node, tool.name, call.id)

    def finish(self, tool: Tool, call: ToolCall, result: ToolResult) -> None:
        """A first attempt ended: record it, and end the call or let it go on in a task."""
        if self.guard is not None:
            self.guard.record(call, tool, result.ok)
        goes_on = not result.ok and self.retry.max_retries > 0 and retryable(result, self.retry)
        if goes_on or tool.overruns:
            start_soon(self.group, self._go_on, tool, call, result)
            return
        emit_finished(self.events, self.node, tool, call, result, self.started, 1)
        self.results[id_of(call)] = result

    async def _go_on(self, tool: Tool, call: ToolCall, first: ToolResult) -> None:
        outer = enter_call(call.id, self.progress(tool, call))
        try:
            self.results[id_of(call)] = await run_tool_call(
                self.context,
                self.node,
                tool,
                call,
                retry=self.retry,
                timeout=self.timeout,
                guard=self.guard,
                first=first,
                started=self.started,
            )
        finally:
            leave_call(outer)

    async def run_inline(self, tool: Tool, call: ToolCall) -> None:
        """The first attempt of a call that runs on the loop: here, now."""
        emit_started(self.events, self.node, tool, call)
        outer = enter_call(call.id, self.progress(tool, call))
        try:
            result = await tool.call(call.arguments, timeout=self.timeout)
        finally:
            leave_call(outer)
        self.finish(tool, call, result)

    def submit(
        self, pool: BlockingPool, tool: Tool, call: ToolCall
    ) -> tuple[asyncio.Future[Any], _Running] | None:
        """Hand a call's first attempt to the worker threads (None: its arguments do not fit)."""
        emit_started(self.events, self.node, tool, call)
        try:
            job = tool._blocking_work(call.arguments)
        except Exception as exc:  # as in Tool.call: a tool fault is an observation
            job = tool._error_result(exc)
        if isinstance(job, ToolResult):
            self.finish(tool, call, job)
            return None
        outer = enter_call(call.id, self.progress(tool, call))  # the job runs in a copy
        try:
            future = pool.submit(job)
        finally:
            leave_call(outer)
        limit = tool.timeout if self.timeout is None else self.timeout
        deadline = float("inf") if limit is None else time.monotonic() + limit
        return future, _Running(tool, call, limit, deadline)


async def run_calls_together(
    context: RunContext | None,
    node: str,
    calls: Iterable[tuple[Tool, ToolCall]],
    results: dict[str, ToolResult],
    group: LoopTaskGroup,
    *,
    retry: RetryPolicy,
    timeout: float | None = None,
    guard: RunGuard | None = None,
) -> None:
    """Make the first attempt of each call (`can_run_together`) as the module docstring says.

    Results land in `results` as each call ends; a call that goes on (a retry, an abandoned
    thread to wait for) does so in a task of `group`. A halt keeps the finished results; the
    thread calls still running are abandoned and recorded as their tools' overruns.
    """
    batch = _Batch(context, node, results, group, retry, timeout, guard)
    inline: list[tuple[Tool, ToolCall]] = []
    running: dict[asyncio.Future[Any], _Running] = {}
    pool: BlockingPool | None = None
    try:
        for tool, call in calls:  # the threads get to work first, then the loop does its share
            if tool._runs_inline_on_asyncio:  # (the executor runs calls here only on asyncio)
                inline.append((tool, call))
                continue
            if pool is None:
                pool = await blocking_pool()
            submitted = batch.submit(pool, tool, call)
            if submitted is not None:
                running[submitted[0]] = submitted[1]
        for tool, call in inline:
            await batch.run_inline(tool, call)
        if pool is not None and running:
            await _collect(batch, pool, running)
    finally:
        for future, item in running.items():  # a halt: files the calls still running
            item.tool.record_overrun(pool.abandon(future) if pool is not None else None)


async def _collect(
    batch: _Batch, pool: BlockingPool, running: dict[asyncio.Future[Any], _Running]
) -> None:
    """Finish the thread calls as they end, or as their deadlines pass (one wait for all)."""
    timed = any(item.limit is not None for item in running.values())
    while running:
        wait = None
        if timed:  # until the nearest deadline
            deadline = min(item.deadline for item in running.values())
            wait = None if deadline == float("inf") else max(0.0, deadline - time.monotonic())
        done, _ = await asyncio.wait(running, timeout=wait, return_when=asyncio.FIRST_COMPLETED)
        for future in done:
            tool, call, _, _ = running.pop(future)
            error = future.exception()
            if error is None:
                batch.finish(tool, call, tool._to_result(future.result()))
            elif isinstance(error, Exception):
                batch.finish(tool, call, tool._error_result(error))
            else:  # KeyboardInterrupt and the like are not tool faults
                raise error
        now = time.monotonic()
        for future, item in list(running.items()) if timed else ():
            if item.deadline <= now and item.limit is not None:
                del running[future]
                item.tool.record_overrun(pool.abandon(future))
                batch.finish(item.tool, item.call, item.tool._timed_out(item.limit))
