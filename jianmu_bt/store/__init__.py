"""The run store: runs, an append-only call journal, checkpoints and leases as plain records.

It knows nothing of trees, nodes, guards or tools. SQLite (one file, the default at
`.jianmu/runs.db`) is embedded; PostgreSQL (`pip install 'jianmu-bt[postgres]'`) lets many
processes or machines share runs. See docs/architecture.md, "Durable runs".
"""

from __future__ import annotations

from pathlib import Path

from jianmu_bt.store.base import RunStore
from jianmu_bt.store.errors import (
    CheckpointNotFoundError,
    LeaseError,
    LeaseLostError,
    RunExistsError,
    RunNotFoundError,
    StoreCorruptError,
    StoreError,
    StoreFormatError,
    StoreLockedError,
    StoreNotFoundError,
)
from jianmu_bt.store.postgres import PostgresStore
from jianmu_bt.store.records import (
    CALL_KINDS,
    CALL_STATUSES,
    FINISHED,
    RUN_STATUSES,
    Checkpoint,
    JournalEntry,
    RunRecord,
    digest_arguments,
)
from jianmu_bt.store.sqlite import SQLiteStore
from jianmu_bt.store.sqlrows import FORMAT_VERSION

__all__ = [
    "CALL_KINDS",
    "CALL_STATUSES",
    "DEFAULT_STORE_PATH",
    "FINISHED",
    "FORMAT_VERSION",
    "RUN_STATUSES",
    "Checkpoint",
    "CheckpointNotFoundError",
    "JournalEntry",
    "LeaseError",
    "LeaseLostError",
    "PostgresStore",
    "RunExistsError",
    "RunNotFoundError",
    "RunRecord",
    "RunStore",
    "SQLiteStore",
    "StoreCorruptError",
    "StoreError",
    "StoreFormatError",
    "StoreLockedError",
    "StoreNotFoundError",
    "digest_arguments",
    "open_store",
]

DEFAULT_STORE_PATH = Path(".jianmu/runs.db")
"""Where runs are kept when no store is named (relative to the working folder)."""

_POSTGRES_SCHEMES = ("postgresql://", "postgres://")


def open_store(location: str | Path, *, create: bool = True) -> RunStore:
    """Open the run store at `location`: a `postgresql://` / `postgres://` URL or a file path.

    `create=False` refuses a store that does not exist yet (StoreNotFoundError).
    """
    if isinstance(location, str) and location.lower().startswith(_POSTGRES_SCHEMES):
        return PostgresStore(location, create=create)
    return SQLiteStore(location, create=create)
