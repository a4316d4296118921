"""The run store: runs, an append-only call journal, checkpoints and leases as plain records.

It knows nothing of trees, nodes, guards or tools. SQLite (one file, the default at
`.jianmu/runs.db`) is embedded; PostgreSQL (`pip install 'jianmu-bt[postgres]'`) lets many
processes or machines share runs. See docs/architecture.md, "Durable runs".

Each name is imported from its module on first use (`jianmu_bt._lazy`): a node that needs a
JournalEntry does not load the SQLite or PostgreSQL backends.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from jianmu_bt._lazy import lazy_exports

if TYPE_CHECKING:  # what type checkers and IDEs see
    from jianmu_bt.store.base import RunStore as RunStore
    from jianmu_bt.store.errors import (
        CheckpointNotFoundError as CheckpointNotFoundError,
        LeaseError as LeaseError,
        LeaseLostError as LeaseLostError,
        RunExistsError as RunExistsError,
        RunNotFoundError as RunNotFoundError,
        StoreCorruptError as StoreCorruptError,
        StoreError as StoreError,
        StoreFormatError as StoreFormatError,
        StoreLockedError as StoreLockedError,
        StoreNotFoundError as StoreNotFoundError,
        StoreUnavailableError as StoreUnavailableError,
    )
    from jianmu_bt.store.opening import (
        DEFAULT_STORE_PATH as DEFAULT_STORE_PATH,
        STORE_VARIABLE as STORE_VARIABLE,
        default_store as default_store,
        open_store as open_store,
    )
    from jianmu_bt.store.patience import (
        DEFAULT_PATIENCE as DEFAULT_PATIENCE,
        PATIENCE_VARIABLE as PATIENCE_VARIABLE,
        default_patience as default_patience,
        patiently as patiently,
    )
    from jianmu_bt.store.postgres import PostgresStore as PostgresStore
    from jianmu_bt.store.records import (
        CALL_KINDS as CALL_KINDS,
        CALL_STATUSES as CALL_STATUSES,
        FINISHED as FINISHED,
        RUN_STATUSES as RUN_STATUSES,
        Checkpoint as Checkpoint,
        JournalEntry as JournalEntry,
        RunRecord as RunRecord,
        digest_arguments as digest_arguments,
    )
    from jianmu_bt.store.sqlite import SQLiteStore as SQLiteStore
    from jianmu_bt.store.sqlrows import FORMAT_VERSION as FORMAT_VERSION


__getattr__, __dir__ = lazy_exports(__name__, globals())
