"""Handing out a call of an external tool, and waiting for its result from outside.

`run_tool_call` comes here instead of running the tool. In a durable run the node has already
journaled the call `waiting` (with its deadline: `journaled.start_row`); the run then either
waits in this process, when someone attends the tree's external results (`Tree.attend_results`, the
viewer) and the run holds calls in process (`hold="wait"`), or pauses until a resume brings
the result (`jianmu resume RUN --result CALL_ID=JSON`). A run that is not durable waits in
process while someone attends its results, and otherwise takes the tool's default at once (or
fails). Past the deadline the call takes the tool's default, or fails.
"""

from __future__ import annotations

from typing import Any

from jianmu_bt.runtime.context import RunContext
from jianmu_bt.runtime.outside import (
    WAITING,
    deadline_after,
    expired,
    external_calls_of,
    timed_out_result,
    waiting_call,
    waiting_document,
)
from jianmu_bt.tools import Tool, ToolCall, ToolResult
from jianmu_bt.tools.argument_schema import schema_problems
from jianmu_bt.tools.external import NO_DEFAULT

NOBODY = "nobody attends the tree's external results and the run is not durable"


def external_document(tool: Tool, arguments: Any = None) -> dict[str, Any]:
    """The result document of an external call's `waiting` row: its schema, deadline, default,
    and the `arguments` it is handed out with."""
    document = waiting_document(
        "external",
        schema=getattr(tool, "result_schema", None),
        deadline=deadline_after(getattr(tool, "wait_timeout", None)),
        default=getattr(tool, "default", NO_DEFAULT),
    )
    document["arguments"] = arguments
    return document


async def hand_out(
    context: RunContext | None, node: str, tool: Tool, call: ToolCall, key: str | None
) -> ToolResult:
    """The result of `call` of an external tool, from outside (see the module docstring).
    `key` is the call's idempotency key in a durable run (None otherwise)."""
    if context is None:
        return await tool.call(call.arguments)  # no run: the tool says it cannot work alone
    journal = context.journal
    record = None
    if journal is not None and key is not None:
        record = journal.recorded(journal.step_of(key))
    if record is not None and record.status == WAITING:
        document = dict(record.result or {})
    else:
        document = external_document(tool, call.arguments)
    what = f"external call {call.name} [{call.id}]"
    problems = schema_problems(tool, call.arguments)
    if problems:  # never handed out with arguments its schema refuses
        return ToolResult.failure(
            call.name, f"Error: invalid arguments for {call.name}: " + "; ".join(problems)
        )
    if expired(document):
        return timed_out_result(call.name, document, what)
    store = external_calls_of(context)
    if journal is not None and not (journal.hold == "wait" and store.attended):
        context.events.emit("tool.call.waiting", node=node, tool=call.name, call_id=call.id)
        journal.ended()  # the pause must not wait for this call: it waits for the resume
        try:
            journal.request_pause(f"{what} waits for its result from outside")
            await journal.wait_for_halt()
        finally:
            journal.started()
    if not store.attended:  # not durable, and nobody in this process could supply it
        return timed_out_result(call.name, document, f"{what} ({NOBODY})")
    waiting = waiting_call(
        call, document.get("schema"), document.get("deadline"), context.run_id, node
    )
    result = await store.wait(
        waiting, lambda: context.events.emit("tool.call.waiting", node=node, **waiting.to_dict())
    )
    return result if result is not None else timed_out_result(call.name, document, what)
