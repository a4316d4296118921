"""ToolExecutor: runs the batch of ToolCalls an LLM node wrote to `actions`.

On each entry the executor:

1. reads `actions` (ToolCalls) and gives every call an id of its own (written back, so ids survive a
   snapshot); calls that already have a tool message in `messages` ran before and are skipped;
2. asks the guard about the whole batch: DENY and CONFIRM calls get a refusal observation; if any
   call is PENDING the whole batch waits (the node stays RUNNING) until a reviewer decides through
   the approval store, then the batch is checked again;
3. runs the allowed calls serially or in parallel (`options.execution_mode`: auto = parallel only
   when every tool of the batch is parallel-safe), with bounded concurrency, timeouts and retries;
   one failing call never loses its siblings' results; the first attempts of a parallel batch's
   sync calls are made together (`run_calls_together`: quick ones on the loop in the executor's
   task, blocking ones handed to the worker threads at once), not as a task each;
4. appends one tool message per call (with its `tool_call_id`) in the batch's order, adds the
   successful calls' effects to `tool_effects` (their effect tags; `unknown` for a tool that
   declares none and is not read-only), saves the guard's state, and clears `actions`.

It ends in SUCCESS once the batch is observed: deciding that the agent is finished belongs to the
loop around it, not to the executor. How it runs calls is one `ExecutorOptions` object.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Iterable, Mapping
from typing import Any, Literal, TypeVar

import anyio

from jianmu_bt.guard import GuardVerdict
from jianmu_bt.nodes.batch_calls import can_run_together, run_calls_together
from jianmu_bt.nodes.calling import MeteredResult, id_of, run_tool_call
from jianmu_bt.nodes.guarding import announce, edit_noted, verdicts_when_decided
from jianmu_bt.nodes.journaled_batch import run_journaled_batch
from jianmu_bt.nodes.options import ExecutorOptions
from jianmu_bt.runtime.async_node import AsyncNode
from jianmu_bt.runtime.services import RunGuard
from jianmu_bt.runtime.task_groups import create_task_group, on_asyncio, start_soon
from jianmu_bt.tools import Tool, ToolCall, ToolResult, ToolSet
from jianmu_bt.tools.effects import counted_effects
from jianmu_bt.tools.runners import ToolRunner

USAGE_KEY = "usage"
"""The state field LLM usage spent inside tools is added to (as the LLM nodes add theirs)."""

T = TypeVar("T")


async def run_all(work: Callable[[T], Coroutine[Any, Any, None]], items: Iterable[T]) -> None:
    """Await `work(item)` for every item concurrently; a failure cancels the others."""
    async with create_task_group() as group:
        for item in items:
            start_soon(group, work, item)


class ToolExecutor(AsyncNode):
    """Executes `actions` through a ToolSet, under a guard (`guard=` or `services["guard"]`).

    `options` say how calls run and which state fields the batch uses; `runner` where calls run
    (default: the toolset's, else the run's `services["runner"]`, else this process); `timeout`
    bounds the whole batch (seconds).
    """

    def __init__(
        self,
        toolset: ToolSet | Iterable[Tool] | None = None,
        name: str = "ToolExecutor",
        *,
        options: ExecutorOptions | None = None,
        runner: ToolRunner | None = None,
        guard: RunGuard | None = None,
        timeout: float | None = None,
    ) -> None:
        super().__init__(name=name, timeout=timeout)
        if options is not None and not isinstance(options, ExecutorOptions):
            raise TypeError(f"options must be ExecutorOptions, got {type(options).__name__}")
        self.toolset: ToolSet
        if isinstance(toolset, ToolSet) or toolset is None:
            self.toolset = ToolSet() if toolset is None else toolset
        else:
            self.toolset = ToolSet.from_tools(toolset)
        self.options = options if options is not None else ExecutorOptions()
        self.runner = runner
        self.guard = guard
        self.last_results: dict[str, ToolResult] = {}

    def register_tool(self, tool: Tool) -> None:
        """Add a tool (it replaces a same-named one)."""
        self.toolset = self.toolset.with_tools([tool])

    # -- the work --------------------------------------------------------------------------

    async def run_async(self) -> bool:
        state = self.state
        options = self.options
        given = ToolCall.from_list(state.read_port(options.actions_key))
        if not given:
            return True
        calls = ToolCall.with_unique_ids(given)
        if any(c.id != g.id for c, g in zip(calls, given, strict=True)):
            state.set(options.actions_key, calls)  # the new ids must survive a snapshot
        answered = _answered_ids(state.read_port(options.messages_key) or ())
        todo = [c for c in calls if c.id not in answered]
        results: dict[str, ToolResult] = {}
        complete = False
        journal = self.context.journal if self.context else None
        try:
            if journal is not None:
                await run_journaled_batch(self, journal, todo, results)
            else:
                guard = self.active_guard()
                runnable = todo
                if guard is not None:
                    runnable = await self.preflight(guard, todo, results)
                await self.execute(runnable, results)
            complete = True
        finally:
            # Also on a halt mid-batch: the calls that finished are recorded, so they do not
            # run again when the executor is entered again; the rest stay in `actions`.
            self.last_results = results
            if results or complete:
                self._publish(todo, results, complete)
        return True

    def active_guard(self) -> RunGuard | None:
        """This executor's own guard, else the run's `services["guard"]`, else None."""
        if self.guard is not None:
            return self.guard
        return self.context.guard if self.context else None

    async def preflight(
        self,
        guard: RunGuard,
        calls: list[ToolCall],
        results: dict[str, ToolResult],
        on_hold: Callable[[list[GuardVerdict]], None] | None = None,
    ) -> list[ToolCall]:
        """Verdicts for the batch; waits while any call is PENDING. Returns the calls to run,
        with the arguments a reviewer approved instead where they edited a call.

        Refused calls get their refusal in `results`; `on_hold(pending_verdicts)` runs each
        time the batch is found held."""

        announced: set[str | None] = set()

        def held(pending: list[GuardVerdict]) -> None:
            self._save_guard(guard)  # on every change: a snapshot keeps the latest approvals
            if on_hold is not None:
                on_hold(pending)
            self.feedback_message = f"waiting for approval of {len(pending)} call(s)"
            for verdict in pending:
                if verdict.call_id in announced:  # one pending event per held call
                    continue
                announced.add(verdict.call_id)
                announce(self, verdict.tool, verdict.call_id, verdict)

        approvals = guard.approvals
        verdicts = await verdicts_when_decided(
            guard,
            lambda: guard.preflight([approvals.as_approved(c) for c in calls], self.toolset),
            held,
        )
        self.feedback_message = ""
        runnable = []
        for call, verdict in zip(map(approvals.as_approved, calls), verdicts, strict=True):
            if verdict.allowed:
                runnable.append(call)
                continue
            results[id_of(call)] = verdict.to_result()
            announce(self, call.name, call.id, verdict)
        return runnable

    def resolve_mode(self, calls: list[ToolCall]) -> Literal["serial", "parallel"]:
        """auto: one call is serial; several are parallel only when every tool is parallel-safe."""
        mode = self.options.execution_mode
        if mode != "auto":
            return mode
        if len(calls) < 2:
            return "serial"
        names = [c.name for c in calls]
        return "parallel" if self.toolset.is_parallel_safe(names) else "serial"

    async def execute(
        self,
        calls: list[ToolCall],
        results: dict[str, ToolResult],
        after: Callable[[ToolCall, ToolResult], None] | None = None,
        idempotency_keys: Mapping[str, str] | None = None,
    ) -> None:
        """Run the calls; each result lands in `results` (and goes to `after`) as it ends.

        `idempotency_keys` (by call id) are a durable run's own; a call without one uses its id.
        """
        keys = idempotency_keys or {}

        async def one(call: ToolCall) -> None:
            call_id = id_of(call)
            results[call_id] = result = await self._one(call, keys.get(call_id, call_id))
            if after is not None:
                after(call, result)

        if self.resolve_mode(calls) == "serial":
            for call in calls:
                await one(call)
            return
        bound = self.options.max_concurrency
        if len(calls) > bound:
            limiter = anyio.CapacityLimiter(bound)

            async def bounded(call: ToolCall) -> None:
                async with limiter:
                    await one(call)

            await run_all(bounded, calls)
            return
        # Within the bound no limiter is needed (each acquire is a trip through the loop), and
        # the first attempts of sync calls are made together instead of a task each.
        together, alone = self._together(calls) if after is None else ([], calls)
        if not together:
            await run_all(one, calls)
            return
        async with create_task_group() as group:
            for call in alone:
                start_soon(group, one, call)
            await run_calls_together(
                self.context,
                self.name,
                together,
                results,
                group,
                retry=self.options.retry,
                timeout=self.options.call_timeout,
                guard=self.active_guard(),
            )

    def _together(
        self, calls: list[ToolCall]
    ) -> tuple[list[tuple[Tool, ToolCall]], list[ToolCall]]:
        """Split off the calls `run_calls_together` makes (`can_run_together`): sync tools of
        this process, on asyncio, with no runner."""
        if self._runner() is not None or not on_asyncio():
            return [], calls
        together: list[tuple[Tool, ToolCall]] = []
        alone: list[ToolCall] = []
        for call in calls:
            found = self.toolset.get(call.name)
            if found is not None and can_run_together(found, call):
                together.append((found, call))
            else:
                alone.append(call)
        return together, alone

    async def _one(self, call: ToolCall, idempotency_key: str) -> ToolResult:
        found = self.toolset.get(call.name)
        if found is None:
            available = ", ".join(self.toolset.names()) or "none"
            result = ToolResult.failure(
                call.name, f"Error: unknown tool '{call.name}'; available tools: {available}"
            )
            self.emit("tool.call.failed", tool=call.name, call_id=call.id, error=result.error)
            return result
        if isinstance(call.arguments, str):
            # ToolCall.from_dict keeps undecodable text as a string: tell the LLM, don't guess.
            params = ", ".join(found.to_schema()["parameters"].get("properties", {}))
            result = ToolResult.failure(
                call.name,
                f"Error: the arguments for '{call.name}' are not a valid JSON object "
                f"({call.arguments[:200]!r}); send a JSON object with: {params or 'no arguments'}",
            )
            self.emit("tool.call.failed", tool=call.name, call_id=call.id, error=result.error)
            return result
        return await run_tool_call(
            self.context,
            self.name,
            found,
            call,
            retry=self.options.retry,
            timeout=self.options.call_timeout,
            runner=self._runner(),
            guard=self.active_guard(),
            idempotency_key=idempotency_key,
        )

    def _runner(self) -> ToolRunner | None:
        """Where calls run: this executor's runner, its toolset's, the run's `services["runner"]`
        (a sandbox), or None for this process."""
        found = self.runner or self.toolset.runner
        if found is None and self.context is not None:
            found = self.context.tool_runner
        return found

    def _publish(
        self, calls: list[ToolCall], results: dict[str, ToolResult], complete: bool = True
    ) -> None:
        """Write observations, effects, guard state and, once the batch is complete, clear it —
        in one state update."""
        options, fields = self.options, self.state.fields
        done = [(c, results[c.id]) for c in calls if c.id is not None and c.id in results]
        guard = self.active_guard()
        updates: dict[str, Any] = {
            options.messages_key: [edit_noted(guard, call, result) for call, result in done],
        }
        if complete:
            updates[options.actions_key] = []
        if options.effects_key and options.effects_key in fields:
            effects: dict[str, int] = {}
            for call, result in done:
                found = self.toolset.get(call.name)
                if result.ok and found is not None:
                    for tag in counted_effects(found):
                        effects[tag] = effects.get(tag, 0) + 1
            if effects:
                updates[options.effects_key] = effects
        metered = [result.usage for _, result in done if isinstance(result, MeteredResult)]
        if metered and USAGE_KEY in fields:  # LLM usage spent inside tools (agents as tools)
            spent: dict[str, Any] = {}
            for usage in metered:
                for name, value in usage.items():
                    spent[name] = spent.get(name, 0) + value
            updates[USAGE_KEY] = spent
        if guard is not None and options.guard_key and options.guard_key in fields:
            updates[options.guard_key] = guard.snapshot()
        self.state.update(updates)

    def _save_guard(self, guard: RunGuard) -> None:
        key = self.options.guard_key
        if key and key in self.state.fields:
            self.state.set(key, guard.snapshot())


def _answered_ids(messages: Iterable[Any]) -> set[str]:
    """Ids of the tool messages since the last assistant message: calls of the current batch
    that already ran (a server may reuse ids across turns, so older answers do not count)."""
    answered: set[str] = set()
    for message in reversed(list(messages)):
        if not isinstance(message, Mapping):
            continue
        if message.get("role") == "assistant":
            break
        if message.get("role") == "tool" and message.get("tool_call_id"):
            answered.add(message["tool_call_id"])
    return answered
