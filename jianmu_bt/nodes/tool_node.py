"""ToolNode: one tool as an explicit step of a behaviour tree.

The node reads its input from state (`input_key`, or `arguments` with `{key}` references), runs
the tool (through a runner when one is set), normalises the result with `ToolResult.from_raw`,
writes the output to `output_key` and succeeds; a failed result (including an "Error: ..." string)
is FAILURE with the error in `feedback_message`. The run's guard, when there is one, is asked
first: a refused call is FAILURE with the guard's reason, a PENDING one waits for approval.
How the call is made (retries, a per-call timeout) is one `CallOptions` object.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import anyio

from jianmu_bt.guard import GuardVerdict
from jianmu_bt.nodes import journaled
from jianmu_bt.nodes.calling import run_tool_call
from jianmu_bt.nodes.guarding import announce, verdicts_when_decided
from jianmu_bt.nodes.options import DEFAULT_CALL_OPTIONS, CallOptions
from jianmu_bt.runtime.async_node import AsyncNode
from jianmu_bt.runtime.context import RunContext
from jianmu_bt.runtime.journal import RunJournal
from jianmu_bt.runtime.services import RunGuard
from jianmu_bt.runtime.templates import render
from jianmu_bt.tools import Tool, ToolCall, ToolResult, new_call_id
from jianmu_bt.tools.base import set_node_factory
from jianmu_bt.tools.runners import ToolRunner


class ToolNode(AsyncNode):
    """Runs `tool` once per entry; SUCCESS when the tool succeeded, FAILURE otherwise.

    Input: `arguments` (a value or dict whose strings may hold `{key}` references to state) when
    given, else the state value at `input_key`, else no arguments. A dict input is passed as
    keyword arguments; `None` becomes `{}`; any other value is the tool's bare input (a tool with a
    string input schema, or a one-parameter function tool, takes it as is).

    `injected` values are merged into the arguments; `options` say how the call is made;
    `runner` where it runs (default: the run's `services["runner"]`, else this process);
    `timeout` bounds the whole step (seconds).
    """

    def __init__(
        self,
        tool: Tool,
        name: str | None = None,
        input_key: str | None = None,
        output_key: str | None = None,
        *,
        arguments: Any = None,
        injected: Mapping[str, Any] | None = None,
        options: CallOptions | None = None,
        runner: ToolRunner | None = None,
        timeout: float | None = None,
    ) -> None:
        super().__init__(name=name or tool.name, timeout=timeout)
        if options is not None and not isinstance(options, CallOptions):
            raise TypeError(f"options must be CallOptions, got {type(options).__name__}")
        self.tool = tool
        self.input_key = input_key
        self.output_key = output_key
        self.arguments = arguments
        self.injected = dict(injected) if injected else None
        self.options = options if options is not None else DEFAULT_CALL_OPTIONS
        self.runner = runner
        self.last_result: ToolResult | None = None

    def resolve_input(self) -> Any:
        """The arguments for this entry, from `arguments` or `input_key`."""
        if self.arguments is not None:
            return render(self.arguments, self.state.get)
        if self.input_key is not None:
            value = self.state.read_port(self.input_key)
            return {} if value is None else value
        return {}

    def run_async(self) -> Awaitable[ToolResult]:
        """The step's call: its ToolResult, which `work_ended` applies. A plain function: on the
        common path (no durable run, no guard) what it returns is the call itself, and no frame
        of the node's own waits while the tool runs."""
        context = self.context
        if context is not None and (context.journal is not None or context.guard is not None):
            return self._checked_call(context)
        call_id = new_call_id()
        return self._call(ToolCall(self.tool.name, self.resolve_input(), call_id), None, call_id)

    def work_ended(self, result: ToolResult) -> bool:
        """Apply the call's result as it ends: output to `output_key` and SUCCESS, or FAILURE
        with the error as the feedback message."""
        self.last_result = result
        if not result.ok:
            self.feedback_message = result.error or "the tool failed"
            return False
        if self.output_key is not None:
            self.state.write_port(self.output_key, result.output)
        return True

    async def _checked_call(self, context: RunContext) -> ToolResult:
        """The call of a durable run (journaled), or one the run's guard must allow first."""
        journal = context.journal
        if journal is not None:
            return await self._journaled(journal)
        call_id = new_call_id()
        call = ToolCall(self.tool.name, self.resolve_input(), call_id)
        guard = context.guard
        if guard is not None:
            refusal, call = await self._ask_guard(guard, call)
            if refusal is not None:  # refused, or answered by a reviewer in its place
                if not refusal.ok:
                    self.emit(
                        "tool.call.failed", tool=call.name, call_id=call.id, error=refusal.error
                    )
                return refusal
        return await self._call(call, guard, call_id)

    def _call(
        self, call: ToolCall, guard: RunGuard | None, idempotency_key: str
    ) -> Awaitable[ToolResult]:
        """The call with events, retries and its key (a plain function: no frame of its own)."""
        return run_tool_call(
            self.context,
            self.name,
            self.tool,
            call,
            retry=self.options.retry,
            timeout=self.options.call_timeout,
            injected=self.injected,
            runner=self.runner,
            guard=guard,
            idempotency_key=idempotency_key,
        )

    async def _journaled(self, journal: RunJournal) -> ToolResult:
        """One entry of the step in a durable run (see `jianmu_bt.nodes.journaled`)."""
        key = journal.next_key(self.node_key)
        record = journal.recorded(key)
        call = ToolCall(self.tool.name, self.resolve_input(), journaled.step_call_id(key))
        digest = journaled.call_digest(call)
        write = functools.partial(
            journaled.entry, journal, key, self.node_key, call, self.tool, digest=digest
        )
        if record is not None:
            journaled.check_matches(journal, record, call, digest)
            if journaled.is_finished(record):
                return journaled.recorded_result(record)
            if journaled.was_cancelled(record):
                await journal.wait_for_halt()
            if record.status == "running" and not journaled.may_run_again(self.tool):
                journal.write(write("in_doubt"))
                record = journal.recorded(key)
            if record is not None and record.status == "in_doubt":
                self.feedback_message = "in doubt: waiting for a decision"
                self.emit("tool.call.in_doubt", tool=call.name, call_id=call.id, key=key)
                journal.request_pause(journaled.in_doubt_reason(call))
                await journal.wait_for_halt()
        guard = self.context.guard if self.context else None
        run = call  # the call that runs: as a reviewer approved it
        if guard is not None:
            if record is not None and record.status == "approved":
                journaled.ensure_approved(guard, call, record)

            def held(verdict: GuardVerdict) -> None:
                current = journal.recorded(key)
                if current is None or current.status != "held":
                    journal.write(write("held", decision=journaled.hold_document(verdict)))
                if journal.hold == "pause":
                    journal.request_pause(f"{call.name} [{call.id}] waits for approval")

            refusal, run = await self._ask_guard(guard, call, on_hold=held)
            if refusal is not None:
                journal.write(write("denied", refusal))
                return refusal
        if journal.pausing:
            await journal.wait_for_halt()
        current = journal.recorded(key)
        approved = current is not None and current.status == "held"  # here, in this process
        # A call that may have a side effect is recorded before it starts (in doubt if the
        # process dies during it); one that may run again needs no record until it ends.
        decision = journaled.approval_document(guard, call) if approved and guard else None
        starts = [write("approved", decision=decision)] if approved else []
        start = journaled.start_row(write, self.tool, current, run)
        if start is not None:
            starts.append(start)
        if starts:
            journal.write(*starts)
        journal.started()
        try:
            result = await self._call(run, guard, journal.idempotency_key(key))
        except anyio.get_cancelled_exc_class():
            journal.ended()
            journal.cancelled(write("cancelled"))
            raise
        journal.ended()
        # An output the run cannot record: the call is a failed one (it ran; never again).
        result = journaled.recordable(result)
        journal.record_outcome(write("done" if result.ok else "failed", result))
        return result

    async def _ask_guard(
        self,
        guard: RunGuard,
        call: ToolCall,
        on_hold: Callable[[GuardVerdict], None] | None = None,
    ) -> tuple[ToolResult | None, ToolCall]:
        """The guard's refusal of `call` (None when it may run, after any wait for a
        reviewer) and the call to run: as the reviewer approved it, edited or not."""

        announced = False

        def held(pending: list[GuardVerdict]) -> None:
            # Called again on every change of the approval store while the call waits (its
            # own pending record among them): the hold is announced once.
            nonlocal announced
            self.feedback_message = "waiting for approval"
            if on_hold is not None:
                on_hold(pending[0])
            if not announced:
                announced = True
                for verdict in pending:
                    announce(self, call.name, call.id, verdict)

        approvals = guard.approvals
        (verdict,) = await verdicts_when_decided(
            guard, lambda: [guard.check(approvals.as_approved(call), self.tool)], held
        )
        self.feedback_message = ""
        run = approvals.as_approved(call)
        if verdict.allowed:
            return None, run
        announce(self, call.name, call.id, verdict)
        return verdict.to_result(), run


def _tool_node_factory(tool: Tool, **kwargs: Any) -> ToolNode:
    return ToolNode(tool, **kwargs)


set_node_factory(_tool_node_factory)
