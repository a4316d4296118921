"""A durable run's history as viewer events: its journal (calls and LLM turns) and its
checkpoints (node statuses, and the whole state when it changed), in the order they were written.

The store keeps plain records; this turns them into the events a live run sends, so the page
replays both the same way. A checkpoint becomes a `checkpoint` event with `statuses` (by the
loader's stable node id) and `state`; a journal row becomes the call event its status says.
"""

from __future__ import annotations

from typing import Any

#: Journal statuses of tool calls -> the event type a live run emits for them.
CALL_EVENTS = {
    "running": "tool.call.started",
    "done": "tool.call.completed",
    "failed": "tool.call.failed",
    "denied": "tool.call.failed",
    "skipped": "tool.call.failed",
    "cancelled": "tool.call.failed",
}
#: A finished run's status -> the root status a live `tree.finished` event carries.
FINISHED = {"succeeded": "SUCCESS", "failed": "FAILURE"}
#: Journal statuses that are guard decisions (held for a reviewer, then decided).
DECISIONS = {"held": "pending", "in_doubt": "pending", "approved": "approved", "denied": "deny"}


def journal_events(entry: Any) -> list[dict[str, Any]]:
    """The events of one journal row (a JournalEntry)."""
    base = {"node": entry.node, "time": entry.created, "call_id": entry.call_id}
    result = entry.result if isinstance(entry.result, dict) else {}
    if entry.kind == "llm":
        if entry.status != "done":
            return [{**base, "type": "llm.request", "messages": entry.arguments}]
        return [
            {
                **base,
                "type": "llm.response",
                "text": result.get("text", ""),
                "tool_calls": result.get("tool_calls", []),
            }
        ]
    events = []
    call = {**base, "tool": entry.tool, "arguments": entry.arguments, "status": entry.status}
    if entry.status in DECISIONS:
        reason = result.get("error") or ("in doubt" if entry.status == "in_doubt" else "")
        events.append(
            {
                **call,
                "type": "guard.decision",
                "decision": DECISIONS[entry.status],
                "reason": reason,
            }
        )
    if entry.status in CALL_EVENTS:
        event = {**call, "type": CALL_EVENTS[entry.status]}
        if entry.status == "done":
            event["output"] = result.get("output")
        elif entry.status != "running":
            event["error"] = result.get("error") or entry.status
        events.append(event)
    return events


def checkpoint_event(checkpoint: Any) -> dict[str, Any]:
    """A checkpoint as a `checkpoint` event: node statuses by stable id, and the state."""
    data: dict[str, Any] = checkpoint.data if isinstance(checkpoint.data, dict) else {}
    progress = data.get("progress")
    nodes = progress.get("nodes") if isinstance(progress, dict) else None
    nodes = nodes if isinstance(nodes, dict) else {}
    statuses = {
        key: value.get("status")
        for key, value in nodes.items()
        if isinstance(value, dict) and isinstance(value.get("status"), str)
    }
    event: dict[str, Any] = {
        "type": "checkpoint",
        "node": None,
        "time": checkpoint.created,
        "seq": checkpoint.seq,
        "statuses": statuses,
    }
    # A checkpoint holds the state only when it changed since the one before.
    if isinstance(data.get("state"), dict):
        event["state"] = data["state"]
    return event


def run_history_events(store: Any, run_id: str) -> list[dict[str, Any]]:
    """Every event of the run `run_id` in `store`, in the order it happened (StoreError for an
    unknown run)."""
    record = store.get_run(run_id)
    entries = sorted(store.journal_log(run_id), key=lambda e: e.position)
    checkpoints = sorted(store.history(run_id), key=lambda c: c.seq)
    events: list[dict[str, Any]] = [
        {
            "type": "run.record",
            "node": None,
            "time": record.started,
            "run_id": record.run_id,
            "tree": record.tree,
            "status": record.status,
            "reason": record.reason,
        }
    ]
    pending = list(checkpoints)
    for entry in entries:
        while pending and pending[0].position < entry.position:
            events.append(checkpoint_event(pending.pop(0)))
        events.extend(journal_events(entry))
    events.extend(checkpoint_event(checkpoint) for checkpoint in pending)
    if record.status in ("succeeded", "failed"):
        events.append(
            {
                "type": "tree.finished",
                "node": None,
                "time": record.updated,
                "status": FINISHED[record.status],
                "reason": record.reason,
            }
        )
    return events
