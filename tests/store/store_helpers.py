"""Builders of run store records for the store tests."""

import time
from typing import Any

from jianmu_bt.store import JournalEntry, RunRecord, RunStore, digest_arguments


def make_run(run_id: str = "run-1", started: float | None = None, **fields: Any) -> RunRecord:
    """A running run of tree `demo`, started now unless told."""
    now = time.time() if started is None else started
    fields.setdefault("status", "running")
    return RunRecord(run_id=run_id, tree="demo", started=now, updated=now, **fields)


def entry(key: str, status: str = "running", **fields: Any) -> JournalEntry:
    """A tool call journal row for call `key` (tool `echo`, arguments {"text": key})."""
    arguments = fields.pop("arguments", {"text": key})
    tool = fields.pop("tool", "echo")
    return JournalEntry(
        key=key,
        call_id=fields.pop("call_id", f"call-{key}"),
        kind=fields.pop("kind", "tool"),
        node=fields.pop("node", "step"),
        tool=tool,
        arguments=arguments,
        digest=fields.pop("digest", digest_arguments(tool, arguments)),
        status=status,
        **fields,
    )


def snapshot(store: RunStore, run_id: str) -> tuple:
    """Everything the store holds about a run, to compare before and after."""
    return (store.get_run(run_id), store.journal_log(run_id), store.history(run_id))
