"""Tool calls in a durable run: what the journal says about a call, and how a node acts on it.

Shared by ToolNode and ToolExecutor (see `jianmu_bt.runtime.journal` for the journal itself).
For each call a node looks up its record first:

- no record: ask the guard, record `running` (unless the call may run again), run the call,
  record `done`/`failed` (`RunJournal.record_outcome`);
- `done`, `failed`, `denied`, `skipped`: take the recorded result; the tool does not run;
- `held`: ask the guard again (a reviewer may have decided since);
- `approved`: give the guard the reviewer's approval (bound to the arguments), then as above;
- `running` (the process stopped during the call, or its outcome could not be recorded): run
  it again when the tool is declared read-only or idempotent, else record `in_doubt`;
- `in_doubt`: wait for a decision (the run pauses);
- `cancelled` (the tree cancelled it: a Timeout, a parent that moved on): wait until the tree
  cancels it again, so the replay takes the path the run took.

A record whose tool or arguments differ from the call the node makes now means the tree, its
tools or its inputs changed since the run began: JournalMismatchError.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

from jianmu_bt.guard import GuardVerdict
from jianmu_bt.nodes.calling import MeteredResult, id_of
from jianmu_bt.nodes.handing_out import external_document
from jianmu_bt.runtime.journal import CANCELLED, FINISHED_CALL, RunJournal
from jianmu_bt.runtime.outside import WAITING, SuppliedResult
from jianmu_bt.runtime.services import RunGuard
from jianmu_bt.store import JournalEntry, digest_arguments
from jianmu_bt.store.codec import UnrecordableValueError, check
from jianmu_bt.tools import Tool, ToolCall, ToolResult
from jianmu_bt.tools.effects import may_run_again as declared_safe
from jianmu_bt.tools.external import is_external

IN_DOUBT_REASON = (
    "it was running when the run stopped and its tool is not declared read-only or idempotent: "
    "it may or may not have happened; decide with `jianmu resume RUN --approve {call_id}` (run "
    "it again) or `--deny {call_id}` (skip it)"
)


def step_call_id(key: str) -> str:
    """The call id of a tool step, the same in every process of a run."""
    return "call_" + hashlib.sha1(key.encode()).hexdigest()[:10]


def entry(
    journal: RunJournal,
    key: str,
    node: str,
    call: ToolCall,
    tool: Tool | None,
    status: str,
    result: ToolResult | None = None,
    *,
    digest: str,
    decision: dict[str, Any] | None = None,
) -> JournalEntry:
    """The journal record of `call` in `status` (with its result when it has one, or the
    reviewer's `decision` on an `approved` row: `approval_document`); `digest` is
    `call_digest(call)`, worked out once per call (a call writes two rows or more)."""
    document = result_document(result) if result is not None else decision
    return JournalEntry(
        key=key,
        call_id=call.id or "",
        kind="tool",
        node=node,
        tool=call.name,
        arguments=call.arguments,
        digest=digest,
        status=status,
        result=document,
        effectful=not may_run_again(tool),
        idempotent=bool(getattr(tool, "idempotent", False)),
    )


def result_document(result: ToolResult) -> dict[str, Any]:
    """A ToolResult as the JSON document the journal keeps (with a MeteredResult's usage)."""
    document = {"tool": result.tool, "ok": result.ok, "output": result.output}
    document["error"] = result.error
    if isinstance(result, MeteredResult):
        document["usage"] = result.usage
    elif isinstance(result, SuppliedResult):
        document["by"] = result.by
    return document


def recordable(result: ToolResult) -> ToolResult:
    """`result` when a run can record it exactly; else a failed result that says so.

    A call whose output has no exact record (an object of a class the run's typed encoding does
    not know, a class defined inside a function) has run: its effects happened. Call this on the
    result before its `done`/`failed` row is built, and use what it returns as the call's result:
    the call is then journaled `failed` (finished: a resume answers it from the journal and never
    runs it again) and the run, live or replayed, goes on as after any failed call, with an error
    naming where the value is, its type, and that the call ran.
    """
    try:
        check(result.output, "output")
        if isinstance(result, MeteredResult):
            check(result.usage, "usage")
    except UnrecordableValueError as exc:
        error = (
            f"Error: {result.tool} ran (its effects happened), but its result cannot be recorded "
            f"in the run's journal, so it is recorded as failed and will not run again: {exc}"
        )
        if isinstance(result, MeteredResult) and _fits(result.usage):
            return MeteredResult(result.tool, False, None, error, usage=result.usage)
        return ToolResult(result.tool, False, None, error)
    return result


def _fits(value: Any) -> bool:
    try:
        check(value)
    except UnrecordableValueError:
        return False
    return True


def recorded_result(record: JournalEntry) -> ToolResult:
    """The ToolResult a finished record holds (a MeteredResult when it recorded usage)."""
    data = record.result if isinstance(record.result, dict) else {}
    tool, ok = str(data.get("tool") or record.tool), bool(data.get("ok"))
    output, error = data.get("output"), data.get("error")
    if isinstance(data.get("usage"), dict):
        return MeteredResult(tool, ok, output, error, usage=data["usage"])
    return ToolResult(tool, ok, output, error)


def call_digest(call: ToolCall) -> str:
    """The digest of a call's tool and arguments, as its journal rows keep it."""
    return digest_arguments(call.name, call.arguments)


def check_matches(journal: RunJournal, record: JournalEntry, call: ToolCall, digest: str) -> None:
    """JournalMismatchError when the recorded call is not the call made now (`digest`: the
    call's `call_digest`)."""
    if record.digest != digest:
        raise journal.mismatch(
            f"step {record.key} was recorded as {record.tool}({_short(record.arguments)}) but "
            f"now calls {call.name}({_short(call.arguments)}): the tree, its tools or its inputs "
            "changed since the run began; start a new run"
        )


def may_run_again(tool: Tool | None) -> bool:
    """A call in flight at a crash may run again: its tool is read-only or idempotent.

    A tool that declares neither is taken to have side effects, effect tags or not (unknown
    effects are effects: `jianmu_bt.tools.effects`). None (no tool of that name: the call only
    fails as an unknown tool, touching nothing) may run again.
    """
    return tool is None or declared_safe(tool)


def was_cancelled(record: JournalEntry | None) -> bool:
    """True when the tree cancelled the step: replay waits to be cancelled the same way."""
    return record is not None and record.status == CANCELLED


def is_finished(record: JournalEntry | None) -> bool:
    """True when the record ends the call (its result is in the journal)."""
    return record is not None and record.status in FINISHED_CALL


def ensure_approved(guard: RunGuard, call: ToolCall, record: JournalEntry) -> None:
    """Give the guard a reviewer's approval recorded in the journal (`record`, an `approved`
    row), bound to this exact call, with the arguments the reviewer approved instead if any.
    The journal's word wins over an approval the guard's restored snapshot may hold."""
    decision = record.result if isinstance(record.result, dict) else {}
    guard.approvals.adopt(
        call,
        note=decision.get("note") or "approved for this run (journal)",
        arguments=decision.get("arguments"),
        by=decision.get("by"),
    )


def start_row(
    make: Callable[..., JournalEntry],
    tool: Tool | None,
    current: JournalEntry | None,
    run: ToolCall,
) -> JournalEntry | None:
    """The row a call writes before it starts, if any: `running` for a call that may have a
    side effect (in doubt if the process dies during it), `waiting` for an external tool's call
    not handed out yet (with its deadline, and `run`'s arguments: the call as handed out, a
    reviewer's edit included). `make(status, result, decision=...)` builds a row."""
    if tool is not None and is_external(tool):
        if current is not None and current.status == WAITING:
            return None  # handed out before this process: not again
        return make(WAITING, decision=external_document(tool, run.arguments))
    return None if may_run_again(tool) else make("running")


def hold_document(verdict: GuardVerdict) -> dict[str, Any]:
    """What a `held` row keeps of the guard's verdict: why it holds the call, and which policy
    (every desk shows them, also to a reviewer deciding later from the journal)."""
    return {"reason": verdict.reason, "policy": verdict.policy}


def approval_document(guard: RunGuard, call: ToolCall) -> dict[str, Any] | None:
    """What an `approved` row keeps of the reviewer's decision on `call`: the arguments they
    approved instead (when they edited it), who decided and their note; None when the guard
    knows nothing more than that the call was approved."""
    record = guard.approvals.get(id_of(call))
    if record is None:
        return None
    document = {"by": record.decided_by, "note": record.note}
    if record.edited:
        document["arguments"] = record.approved_arguments
    return document


def in_doubt_reason(call: ToolCall) -> str:
    """Why a call waits for a decision after a crash, and how to decide."""
    return f"{call.name} [{call.id}]: " + IN_DOUBT_REASON.format(call_id=call.id)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
