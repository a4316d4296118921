"""The plain records a run store keeps: runs, journal entries and checkpoints.

The store knows nothing of trees, nodes, guards or tools: these are rows and JSON documents.
Times are epoch seconds (`time.time()`).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from jianmu_bt.store.codec import canonical

__all__ = [
    "CALL_KINDS",
    "CALL_STATUSES",
    "FINISHED",
    "RUN_STATUSES",
    "Checkpoint",
    "JournalEntry",
    "RunRecord",
    "digest_arguments",
]

RUN_STATUSES: tuple[str, ...] = ("running", "paused", "succeeded", "failed")
"""Every status a run can have."""

FINISHED: tuple[str, ...] = ("succeeded", "failed")
"""The run statuses after which a run never continues."""

CALL_KINDS: tuple[str, ...] = ("tool", "llm", "input")
"""What a journal entry records: a tool call, an LLM turn, or an input the run read from outside
once (an agent's attachments), which a replay takes from the journal instead of reading again."""

CALL_STATUSES: tuple[str, ...] = (
    "held",
    "approved",
    "running",
    "done",
    "failed",
    "denied",
    "skipped",
    "in_doubt",
    "cancelled",
    "waiting",
)
"""Every status a journalled call can have (each change is a new journal row); `waiting`: a
question or an external call waits for a value from outside (`jianmu_bt.runtime.outside`)."""


@dataclass(frozen=True, slots=True)
class RunRecord:
    """One run: which tree it executes, its status, its inputs, its lineage and its lease.

    `parent_run`/`parent_checkpoint` name the run and checkpoint it was forked from. The lease
    (`lease_owner` until `lease_expires`, on the store's clock) says which process drives the
    run; `lease_token` is its fencing token, raised by one each time the lease is taken.
    """

    run_id: str
    tree: str
    status: str
    started: float
    updated: float
    tree_path: str = ""
    tree_digest: str = ""
    inputs: dict[str, Any] = field(default_factory=dict)
    reason: str = ""
    parent_run: str | None = None
    parent_checkpoint: int | None = None
    lease_owner: str | None = None
    lease_expires: float | None = None
    lease_token: int = 0


@dataclass(frozen=True, slots=True)
class JournalEntry:
    """One row of a run's append-only call journal.

    `key` identifies the call across its rows (each status change appends a new row with the same
    key); `digest` binds decisions to the exact arguments (see `digest_arguments`). `position` is
    assigned by the store (1, 2, 3… per run in append order), `created` too when left at 0.
    """

    key: str
    call_id: str
    kind: str
    node: str
    tool: str
    arguments: Any
    digest: str
    status: str
    result: Any = None
    effectful: bool = False
    idempotent: bool = False
    position: int = 0
    created: float = 0.0


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """A JSON document from which a run can continue, opaque to the store.

    `seq` counts a run's checkpoints from 1; `position` is the run's last journal position when
    the checkpoint was written (0 when the journal was empty).
    """

    run_id: str
    seq: int
    created: float
    position: int
    data: dict[str, Any]


def digest_arguments(tool: str, arguments: Any) -> str:
    """The first 32 hex digits of the SHA-256 of `[tool, arguments]` as canonical JSON.

    Canonical: the run's typed encoding (`jianmu_bt.store.codec.canonical`) with keys and set
    members sorted, so equal arguments give equal digests whatever their order, also after a
    round trip through the store; plain JSON arguments keep the digest of
    `json.dumps([tool, arguments], sort_keys=True, separators=(",", ":"), ensure_ascii=False)`.
    Arguments a run cannot record are refused (UnrecordableValueError naming `arguments[...]`).
    """
    text = f"[{_CANONICAL(tool)},{canonical(arguments, 'arguments')}]"
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


# Built once (`json.dumps` with options makes a new encoder per call): a digest per journal row.
_CANONICAL = json.JSONEncoder(ensure_ascii=False).encode
