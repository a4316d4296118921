"""The shared run store: PostgreSQL through psycopg 3 (`pip install 'jianmu-bt[postgres]'`).

Many processes or machines can share runs: every write is one transaction that locks the run's row
(`SELECT … FOR UPDATE`), so two processes taking a lease race safely, and leases are timed by the
database server's clock, so machines with skewed clocks agree. JSON documents are stored as TEXT,
exactly as in SQLite (JSONB would reorder keys and refuse NaN), in the tables `runs`, `journal`,
`checkpoints` and `meta` of the connection's schema.
"""

from __future__ import annotations

import math
import os
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from jianmu_bt.store.errors import (
    StoreCorruptError,
    StoreError,
    StoreLockedError,
    StoreNotFoundError,
    StoreUnavailableError,
)
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

__all__ = ["POSTGRES_SCHEMA", "PostgresStore"]

POSTGRES_SCHEMA = SCHEMA.format(real="DOUBLE PRECISION", int="BIGINT", bool="BOOLEAN")
"""The tables of a PostgreSQL run store (format version 2)."""

_SCHEMA_LOCK = 0x6A69616E6D75  # pg_advisory_xact_lock key serialising schema creation
_NOW = "EXTRACT(EPOCH FROM clock_timestamp())::float8"
_HOST_PORT = re.compile(r"(\[[^\]]*\]|[^:]*):(\d*)")
_KEYWORD = re.compile(r"(\w+)\s*=\s*('(?:[^'\\]|\\.)*'|\S*)")


def _psycopg(location: str) -> Any:
    """The psycopg module, or a StoreError saying how to install it."""
    try:
        import psycopg
    except ImportError as exc:
        raise StoreError(
            f"cannot open the run store in {location}: psycopg 3 is not installed "
            "(pip install 'jianmu-bt[postgres]')"
        ) from exc
    return psycopg


def _parse_dsn(dsn: str) -> dict[str, str]:
    """The connection parameters of a URL or `key=value` DSN (enough for messages)."""
    if "://" in dsn:
        parts = urlsplit(dsn)
        found = {key: values[-1] for key, values in parse_qs(parts.query).items()}
        netloc = parts.netloc.rpartition("@")[2]
        host, port = netloc, ""
        match = _HOST_PORT.fullmatch(netloc)
        if match:
            host, port = match.groups()
        found.setdefault("host", unquote(host))
        found.setdefault("port", port)
        found.setdefault("dbname", unquote(parts.path.lstrip("/")))
        found.setdefault("user", unquote(parts.username or ""))
        if parts.password:
            found["password"] = unquote(parts.password)
        return found
    return {key: value.strip("'") for key, value in _KEYWORD.findall(dsn)}


class PostgresStore(SQLRunStore):
    """A run store in a PostgreSQL database, shared by any number of processes and machines.

    `dsn` is a `postgresql://` URL or a libpq `key=value` string. The tables are created when
    missing (`create=False` refuses a database without them); a write waiting more than
    `busy_timeout` seconds for a row lock raises StoreLockedError. A broken connection is
    reopened on the next call.
    """

    _PARAM = "%s"
    _NOW = _NOW
    _LOCK = " FOR UPDATE"

    def __init__(
        self,
        dsn: str,
        *,
        connect_timeout: float = 5.0,
        create: bool = True,
        busy_timeout: float = 5.0,
    ) -> None:
        params = _parse_dsn(dsn)
        env = os.environ
        host = params.get("host") or env.get("PGHOST") or "localhost"
        port = params.get("port") or env.get("PGPORT") or "5432"
        db = params.get("dbname") or env.get("PGDATABASE") or params.get("user") or "postgres"
        self._location = f"PostgreSQL at {host}:{port}/{db}"
        self._secret = params.get("password") or ""
        self._dsn = dsn
        self._connect_timeout = connect_timeout
        self._busy_timeout = busy_timeout
        self._lock = threading.RLock()
        self._pg = _psycopg(self._location)
        self._closed = False
        self._conn: Any = None
        conn = self._connect()
        try:
            with conn.transaction():
                self._prepare(create)
        except self._pg.Error as exc:
            self.close()
            raise self._translate(exc) from exc
        except BaseException:
            self.close()
            raise

    @property
    def location(self) -> str:
        """`PostgreSQL at host:port/db` (never the password)."""
        return self._location

    def _message(self, exc: BaseException) -> str:
        """The first line of a driver error, without the password."""
        text = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        return text.replace(self._secret, "***") if self._secret else text

    def _connect(self) -> Any:
        """Open the connection (a psycopg Connection) and return it."""
        try:
            self._conn = self._pg.connect(
                self._dsn,
                autocommit=True,
                connect_timeout=max(2, math.ceil(self._connect_timeout)),
                application_name="jianmu-bt",
            )
            timeout_ms = max(1, round(self._busy_timeout * 1000))
            self._conn.execute(f"SET lock_timeout = {timeout_ms}")
        except self._pg.Error as exc:
            self._conn = None
            raise StoreUnavailableError(
                f"cannot connect to {self._location}: {self._message(exc)}"
            ) from None
        self._cursor = ExecutingCursor(self._conn.cursor())
        return self._conn

    def _prepare(self, create: bool) -> None:
        """Check the database holds a run store this program reads; create the tables if none."""
        conn = self._conn
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
        rows = conn.execute(
            "SELECT relname FROM pg_class WHERE relkind IN ('r', 'p') AND relname = ANY(%s) "
            "AND pg_table_is_visible(oid)",
            (list(TABLES),),
        ).fetchall()
        tables = {row[0] for row in rows}
        if not tables:
            if not create:
                raise StoreNotFoundError(f"{self._location} has no run store (nothing to open)")
            create_tables(conn, POSTGRES_SCHEMA)
            return
        if check_tables(f"the run store in {self._location}", tables, conn) < FORMAT_VERSION:
            upgrade(conn, "BIGINT")  # under the schema lock taken above

    def _translate(self, exc: BaseException) -> StoreError:
        """The StoreError for a psycopg error."""
        errors = self._pg.errors
        text = self._message(exc)
        if isinstance(exc, errors.LockNotAvailable | errors.DeadlockDetected):
            return StoreLockedError(
                f"{self._location} is locked by another connection (waited "
                f"{self._busy_timeout:g} s): {text}"
            )
        if isinstance(exc, errors.UndefinedTable):
            return StoreCorruptError(f"{self._location} is missing a run store table: {text}")
        if isinstance(exc, self._pg.OperationalError):
            # A dropped connection, a server shutting down or restarting, a full disk.
            return StoreUnavailableError(f"lost the connection to {self._location}: {text}")
        return StoreError(f"{self._location}: {text}")

    def _clock(self, cur: Cursor) -> float:
        """The database server's epoch time."""
        row = cur.one(f"SELECT {_NOW}")
        assert row is not None
        return float(row[0])

    @contextmanager
    def _transaction(self, write: bool) -> Iterator[Cursor]:
        """Hold the lock; for writes run the block in one transaction (rolled back on error)."""
        with self._lock:
            if self._closed:
                raise StoreError(f"the run store in {self._location} is closed")
            if self._conn is None or self._conn.broken or self._conn.closed:
                self._connect()
            try:
                if write:
                    with self._conn.transaction():
                        yield self._cursor
                else:
                    yield self._cursor
            except self._pg.Error as exc:
                raise self._translate(exc) from exc

    def close(self) -> None:
        """Close the connection; calling it again does nothing."""
        with self._lock:
            self._closed = True
            if self._conn is not None:
                self._conn.close()
                self._conn = None
