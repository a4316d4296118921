"""Opening a run store by its location: a PostgreSQL URL or an SQLite file path."""

from __future__ import annotations

import os
from pathlib import Path

from jianmu_bt.store.base import RunStore

__all__ = ["DEFAULT_STORE_PATH", "STORE_VARIABLE", "default_store", "open_store"]

DEFAULT_STORE_PATH = Path(".jianmu/runs.db")
"""Where runs are kept when no store is named (relative to the working folder)."""

STORE_VARIABLE = "JIANMU_STORE"
"""The environment variable naming the store to use when none is named (a path or a URL)."""


def default_store() -> str | Path:
    """The store used when none is named: `$JIANMU_STORE`, else `.jianmu/runs.db` under the
    working folder."""
    return os.environ.get(STORE_VARIABLE) or Path.cwd() / DEFAULT_STORE_PATH


_POSTGRES_SCHEMES = ("postgresql://", "postgres://")


def open_store(location: str | Path, *, create: bool = True) -> RunStore:
    """Open the run store at `location`: a `postgresql://` / `postgres://` URL or a file path.

    `create=False` refuses a store that does not exist yet (StoreNotFoundError).
    """
    # Each backend is imported only when it is used.
    if isinstance(location, str) and location.lower().startswith(_POSTGRES_SCHEMES):
        from jianmu_bt.store.postgres import PostgresStore

        return PostgresStore(location, create=create)
    from jianmu_bt.store.sqlite import SQLiteStore

    return SQLiteStore(location, create=create)
