"""A ToolExecutor batch in a durable run: each call answered from the journal or run and recorded.

The batch's calls are keyed `<executor>#<entry>/<call id>`. Calls with a finished record take
its result; the rest go through the guard together (as in a plain run) and are recorded `held`
while they wait, `denied` when refused, `running` before they start (those that may have a side
effect) and `done`/`failed` as each ends. A call in doubt after a crash holds the whole batch: the
run pauses for a decision. See `jianmu_bt.nodes.journaled` for what each record means.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any, Protocol

import anyio

from jianmu_bt.guard import GuardVerdict
from jianmu_bt.nodes import journaled
from jianmu_bt.nodes.calling import id_of
from jianmu_bt.runtime.journal import RunJournal
from jianmu_bt.runtime.services import RunGuard
from jianmu_bt.store import JournalEntry
from jianmu_bt.tools import ToolCall, ToolResult, ToolSet


class BatchExecutor(Protocol):
    """What a journaled batch needs from the ToolExecutor that runs it."""

    feedback_message: str

    @property
    def name(self) -> str:
        """The executor's name (in pause reasons)."""
        ...

    @property
    def node_key(self) -> str:
        """The executor's key in its tree: the batch's journal keys start with it."""
        ...

    @property
    def toolset(self) -> ToolSet:
        """The tools the calls run."""
        ...

    def emit(self, type: str, **data: Any) -> None:
        """Emit an event about the executor."""
        ...

    def active_guard(self) -> RunGuard | None:
        """The guard in force for the batch, or None."""
        ...

    async def preflight(
        self,
        guard: RunGuard,
        calls: list[ToolCall],
        results: dict[str, ToolResult],
        on_hold: Callable[[list[GuardVerdict]], None] | None = None,
    ) -> list[ToolCall]:
        """The guard's verdicts (refusals land in `results`); returns the calls to run."""
        ...

    async def execute(
        self,
        calls: list[ToolCall],
        results: dict[str, ToolResult],
        after: Callable[[ToolCall, ToolResult], None] | None = None,
        idempotency_keys: Mapping[str, str] | None = None,
    ) -> None:
        """Run the calls; each result lands in `results` and goes to `after` as it ends."""
        ...


async def run_journaled_batch(
    executor: BatchExecutor,
    journal: RunJournal,
    calls: list[ToolCall],
    results: dict[str, ToolResult],
) -> None:
    """Run `calls` as `executor` would, recorded in `journal`; results land in `results`."""
    base = journal.next_key(executor.node_key)
    keys = {id_of(call): f"{base}/{call.id}" for call in calls}
    tools = {id_of(call): executor.toolset.get(call.name) for call in calls}
    digests = {id_of(call): journaled.call_digest(call) for call in calls}  # once per call

    proposed = {id_of(call): call for call in calls}

    def record(
        call: ToolCall,
        status: str,
        result: ToolResult | None = None,
        decision: dict[str, Any] | None = None,
    ) -> JournalEntry:
        # Every row of a call is the call as proposed (a reviewer's edit is on its `approved` row).
        key = id_of(call)
        return journaled.entry(
            journal,
            keys[key],
            executor.node_key,
            proposed[key],
            tools[key],
            status,
            result,
            digest=digests[key],
            decision=decision,
        )

    live: list[ToolCall] = []
    approved: list[tuple[ToolCall, JournalEntry]] = []
    doubtful: list[ToolCall] = []
    cancelled: list[ToolCall] = []
    for call in calls:
        found = journal.recorded(keys[id_of(call)])
        if found is None:
            live.append(call)
            continue
        journaled.check_matches(journal, found, call, digests[id_of(call)])
        if journaled.is_finished(found):
            results[id_of(call)] = journaled.recorded_result(found)
        elif journaled.was_cancelled(found):
            cancelled.append(call)
        elif found.status == "running" and journaled.may_run_again(tools[id_of(call)]):
            live.append(call)
        elif found.status in ("running", "in_doubt"):
            doubtful.append(call)
        else:  # held or approved: the guard decides with what the reviewers said
            live.append(call)
            if found.status == "approved":
                approved.append((call, found))
    if doubtful:
        await _hold_in_doubt(executor, journal, doubtful, record)
    if cancelled:  # the tree cancelled this batch before: it waits to be cancelled again
        await journal.wait_for_halt()

    guard = executor.active_guard()
    runnable = live
    if guard is not None and live:
        for call, found in approved:
            journaled.ensure_approved(guard, call, found)

        def held(pending: list[GuardVerdict]) -> None:
            by_id = {call.id: call for call in live}
            rows = []
            for verdict in pending:
                call = by_id.get(verdict.call_id)
                if call is None:
                    continue
                current = journal.recorded(keys[id_of(call)])
                if current is None or current.status != "held":
                    rows.append(record(call, "held", decision=journaled.hold_document(verdict)))
            if rows:
                journal.write(*rows)
            if journal.hold == "pause":
                journal.request_pause(
                    f"{len(pending)} call(s) of {executor.name} wait for approval"
                )

        runnable = await executor.preflight(guard, live, results, on_hold=held)
        refused = [call for call in live if call.id in results]
        if refused:
            denials = (record(call, "denied", results[id_of(call)]) for call in refused)
            journal.write(*denials)
    if not runnable:
        return
    if journal.pausing:
        await journal.wait_for_halt()
    starts = []
    for call in runnable:
        current = journal.recorded(keys[id_of(call)])
        if current is not None and current.status == "held":  # approved here, in this process
            decision = journaled.approval_document(guard, call) if guard is not None else None
            starts.append(record(call, "approved", decision=decision))
        make = functools.partial(record, call)
        start = journaled.start_row(make, tools[id_of(call)], current, call)
        if start is not None:  # see ToolNode
            starts.append(start)
    if starts:
        journal.write(*starts)
    idempotency_keys = {key: journal.idempotency_key(keys[key]) for key in map(id_of, runnable)}
    unfinished = {id_of(call) for call in runnable}
    journal.started(len(unfinished))

    def finished(call: ToolCall, result: ToolResult) -> None:
        unfinished.discard(id_of(call))
        journal.ended()
        # An output the run cannot record: the call is a failed one (it ran; never again).
        results[id_of(call)] = result = journaled.recordable(result)
        journal.record_outcome(record(call, "done" if result.ok else "failed", result))

    try:
        await executor.execute(runnable, results, finished, idempotency_keys)
    except anyio.get_cancelled_exc_class():
        journal.ended(len(unfinished))
        cancels = [record(call, "cancelled") for call in runnable if call.id in unfinished]
        if cancels:
            journal.cancelled(*cancels)
        raise


async def _hold_in_doubt(
    executor: BatchExecutor,
    journal: RunJournal,
    calls: list[ToolCall],
    record: Callable[[ToolCall, str], JournalEntry],
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
