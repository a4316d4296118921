"""The embedded run store: one SQLite file (stdlib `sqlite3`, WAL mode).

With the default `synchronous="NORMAL"` in WAL mode every committed transaction survives a killed
process; the last transactions before a power loss or OS crash may be lost (never corrupted). Pass
`synchronous="FULL"` to survive power loss too, at the cost of an fsync per write.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from jianmu_bt.store.errors import (
    StoreCorruptError,
    StoreError,
    StoreLockedError,
    StoreNotFoundError,
    StoreUnavailableError,
)
from jianmu_bt.store.private_files import create_private_file, non_regular_problem
from jianmu_bt.store.sqlcommon import SQLRunStore
from jianmu_bt.store.sqlrows import (
    FORMAT_VERSION,
    SCHEMA,
    TABLES,
    Cursor,
    ExecutingCursor,
    check_tables,
    create_tables,
    upgrade,
)

__all__ = ["SQLITE_SCHEMA", "SQLiteStore"]

SQLITE_SCHEMA = SCHEMA.format(real="REAL", int="INTEGER", bool="INTEGER")
"""The tables of a run store file (format version 2)."""

_SYNC_MODES = ("OFF", "NORMAL", "FULL", "EXTRA")
# SQLite result codes of a write that may succeed later: SQLITE_IOERR, SQLITE_FULL (a full
# disk, a file size limit), SQLITE_CANTOPEN (a WAL file that cannot be made now), SQLITE_PROTOCOL.
_TRANSIENT_CODES = frozenset({10, 13, 14, 15})


class SQLiteStore(SQLRunStore):
    """A run store in one SQLite file, shared safely by the threads and processes using it.

    `create=False` refuses a missing file (StoreNotFoundError); `busy_timeout` is how long a write
    waits for another writer before StoreLockedError. A file that is not a run store, or one in a
    newer format, is refused without being modified.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        create: bool = True,
        busy_timeout: float = 5.0,
        synchronous: str = "NORMAL",
    ) -> None:
        sync = synchronous.upper()
        if sync not in _SYNC_MODES:
            raise ValueError(
                f"synchronous must be one of {', '.join(_SYNC_MODES)}, not {synchronous!r}"
            )
        self._path = Path(path)
        self._location = os.path.abspath(self._path)
        self._busy_timeout = busy_timeout
        self._lock = threading.RLock()
        self._conn: sqlite3.Connection | None = None
        problem = non_regular_problem(self._path)
        if problem:  # refused before SQLite writes a `-journal` file beside a device
            raise StoreError(f"run store {problem}")
        if not self._path.exists():
            if not create:
                raise StoreNotFoundError(
                    f"run store {self._location} does not exist (nothing to open)"
                )
            try:  # its state, arguments and results are the owner's alone (and its WAL's)
                create_private_file(self._path)
            except OSError as exc:
                raise StoreError(f"cannot create run store {self._location}: {exc}") from exc
        try:
            conn = sqlite3.connect(
                self._path,
                timeout=busy_timeout,
                isolation_level=None,
                check_same_thread=False,
                cached_statements=64,
            )
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open run store {self._location}: {exc}") from exc
        try:
            self._prepare(conn, create, sync)
        except sqlite3.Error as exc:
            conn.close()
            raise self._translate(exc) from exc
        except BaseException:
            conn.close()
            raise
        self._conn = conn
        self._cursor = ExecutingCursor(conn)

    @property
    def location(self) -> str:
        """The absolute path of the store file."""
        return self._location

    @property
    def path(self) -> Path:
        """The store file as given."""
        return self._path

    def _prepare(self, conn: sqlite3.Connection, create: bool, sync: str) -> None:
        """Check the file is a run store this program reads; create the tables in a new one."""
        rows = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
        tables = {row[0] for row in rows}
        found = FORMAT_VERSION
        if tables:
            found = check_tables(f"run store {self._location}", tables, conn)
        elif not create:
            raise StoreCorruptError(
                f"run store {self._location} is an empty database, not a jianmu run store"
            )
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute(f"PRAGMA synchronous = {sync}")
        if found < FORMAT_VERSION:
            self._write_once(conn, lambda: upgrade(conn, "INTEGER"))
        if not tables:
            self._write_once(conn, lambda: create_tables(conn, SQLITE_SCHEMA))
            # Another process may have created the store meanwhile: check what is there now.
            check_tables(f"run store {self._location}", TABLES, conn)

    @staticmethod
    def _write_once(conn: sqlite3.Connection, write: Callable[[], None]) -> None:
        """Run `write` in one transaction holding the file's write lock."""
        conn.execute("BEGIN IMMEDIATE")
        try:
            write()
            conn.execute("COMMIT")
        except BaseException:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
            raise

    def _translate(self, exc: sqlite3.Error) -> StoreError:
        """The StoreError for an sqlite3 error."""
        text = str(exc)
        low = text.lower()
        if "locked" in low or "busy" in low:
            return StoreLockedError(
                f"run store {self._location} is locked by another connection (waited "
                f"{self._busy_timeout:g} s): {text}"
            )
        if "not a database" in low or "malformed" in low:
            return StoreCorruptError(f"run store {self._location} is not a usable database: {text}")
        if "no such table" in low:
            return StoreCorruptError(f"run store {self._location} is missing a table: {text}")
        if (getattr(exc, "sqlite_errorcode", 0) & 0xFF) in _TRANSIENT_CODES:
            return StoreUnavailableError(f"run store {self._location} cannot write now: {text}")
        return StoreError(f"run store {self._location}: {text}")

    @contextmanager
    def _transaction(self, write: bool) -> Iterator[Cursor]:
        """Hold the lock; for writes run the block in `BEGIN IMMEDIATE` … `COMMIT`."""
        with self._lock:
            conn = self._conn
            if conn is None:
                raise StoreError(f"run store {self._location} is closed")
            try:
                if not write:
                    yield self._cursor
                    return
                conn.execute("BEGIN IMMEDIATE")
                try:
                    yield self._cursor
                    conn.execute("COMMIT")
                except BaseException:
                    if conn.in_transaction:
                        with contextlib.suppress(sqlite3.Error):
                            conn.execute("ROLLBACK")
                    raise
            except sqlite3.Error as exc:
                raise self._translate(exc) from exc

    def close(self) -> None:
        """Close the connection (the WAL is folded into the file when the last one closes)."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
