"""A ToolExecutor batch in a durable run: each call answered from the journal or run and recorded.

The batch's calls are keyed `<executor>#<entry>/<call id>`. Calls with a finished record take
its result; the rest go through the guard together (as in a plain run) and are recorded `held`
while they wait, `denied` when refused, `running` before they start and `done`/`failed` as each
ends. A call in doubt after a crash holds the whole batch: the run pauses for a decision. See
`jianmu_bt.nodes.journaled` for what each record means.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import anyio

from jianmu_bt.nodes import journaled
from jianmu_bt.runtime.journal import RunJournal
from jianmu_bt.tools import ToolCall, ToolResult

if TYPE_CHECKING:
    from jianmu_bt.nodes.tool_executor import ToolExecutor


async def run_journaled_batch(
    executor: ToolExecutor,
    journal: RunJournal,
    calls: list[ToolCall],
    results: dict[str, ToolResult],
) -> None:
    """Run `calls` as `executor` would, recorded in `journal`; results land in `results`."""
    base = journal.next_key(executor.node_key)
    keys = {call.id: f"{base}/{call.id}" for call in calls}
    tools = {call.id: executor.toolset.get(call.name) for call in calls}

    def record(call: ToolCall, status: str, result: ToolResult | None = None) -> Any:
        return journaled.entry(
            journal, keys[call.id], executor.node_key, call, tools[call.id], status, result
        )

    live: list[ToolCall] = []
    approved: list[ToolCall] = []
    doubtful: list[ToolCall] = []
    cancelled: list[ToolCall] = []
    for call in calls:
        found = journal.recorded(keys[call.id])
        if found is None:
            live.append(call)
            continue
        journaled.check_matches(journal, found, call)
        if journaled.is_finished(found):
            results[call.id] = journaled.recorded_result(found)
        elif journaled.was_cancelled(found):
            cancelled.append(call)
        elif found.status == "running" and journaled.may_run_again(tools[call.id]):
            live.append(call)
        elif found.status in ("running", "in_doubt"):
            doubtful.append(call)
        else:  # held or approved: the guard decides with what the reviewers said
            live.append(call)
            if found.status == "approved":
                approved.append(call)
    if doubtful:
        await _hold_in_doubt(executor, journal, doubtful, record)
    if cancelled:  # the tree cancelled this batch before: it waits to be cancelled again
        await journal.wait_for_halt()

    guard = executor._guard()
    runnable = live
    if guard is not None and live:
        for call in approved:
            journaled.ensure_approved(guard, call)

        def held(pending: list[Any]) -> None:
            by_id = {call.id: call for call in live}
            rows = []
            for verdict in pending:
                call = by_id.get(verdict.call_id)
                current = journal.recorded(keys[call.id]) if call is not None else None
                if call is not None and (current is None or current.status != "held"):
                    rows.append(record(call, "held"))
            if rows:
                journal.write(*rows)
            if journal.hold == "pause":
                journal.request_pause(
                    f"{len(pending)} call(s) of {executor.name} wait for approval"
                )

        runnable = await executor._preflight(guard, live, results, on_hold=held)
        refused = [call for call in live if call.id in results]
        if refused:
            rows = (record(call, "denied", results[call.id]) for call in refused)
            journal.write(*rows, full=False)
    if not runnable:
        return
    if journal.pausing:
        await journal.wait_for_halt()
    rows = []
    for call in runnable:
        current = journal.recorded(keys[call.id])
        if current is not None and current.status == "held":  # approved here, in this process
            rows.append(record(call, "approved"))
        rows.append(record(call, "running"))
    journal.write(*rows)
    executor.idempotency_keys = {c.id: journal.idempotency_key(keys[c.id]) for c in runnable}
    unfinished = {call.id for call in runnable}
    journal.started(len(unfinished))

    def finished(call: ToolCall, result: ToolResult) -> None:
        unfinished.discard(call.id)
        journal.ended()
        journal.write(record(call, "done" if result.ok else "failed", result), full=False)

    try:
        await executor._execute(runnable, results, after=finished)
    except anyio.get_cancelled_exc_class():
        journal.ended(len(unfinished))
        rows = [record(call, "cancelled") for call in runnable if call.id in unfinished]
        if rows:
            journal.cancelled(*rows)
        raise
    finally:
        executor.idempotency_keys = {}


async def _hold_in_doubt(
    executor: ToolExecutor, journal: RunJournal, calls: list[ToolCall], record: Any
) -> None:
    """Record the calls `in_doubt` and wait (the run pauses) for a reviewer's decision."""
    rows = []
    for call in calls:
        found = journal.recorded(record(call, "in_doubt").key)
        if found is not None and found.status == "running":  # first found in doubt now
            rows.append(record(call, "in_doubt"))
        executor.emit("tool.call.in_doubt", tool=call.name, call_id=call.id)
    if rows:
        journal.write(*rows)
    executor.feedback_message = f"{len(calls)} call(s) in doubt: waiting for a decision"
    journal.request_pause("; ".join(journaled.in_doubt_reason(call) for call in calls))
    await journal.wait_for_halt()
