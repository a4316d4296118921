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
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from jianmu_bt.store.errors import (
    StoreCorruptError,
    StoreError,
    StoreFormatError,
    StoreLockedError,
    StoreNotFoundError,
)
from jianmu_bt.store.sqlcommon import SQLRunStore
from jianmu_bt.store.sqlrows import FORMAT_VERSION, Cursor, iter_statements

__all__ = ["POSTGRES_SCHEMA", "PostgresStore"]

POSTGRES_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY, tree TEXT NOT NULL, status TEXT NOT NULL,
    started DOUBLE PRECISION NOT NULL, updated DOUBLE PRECISION NOT NULL,
    tree_path TEXT NOT NULL DEFAULT '', tree_digest TEXT NOT NULL DEFAULT '',
    inputs TEXT NOT NULL DEFAULT '{}', reason TEXT NOT NULL DEFAULT '',
    parent_run TEXT, parent_checkpoint BIGINT, lease_owner TEXT, lease_expires DOUBLE PRECISION,
    last_position BIGINT NOT NULL DEFAULT 0, last_seq BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS runs_started ON runs (started);
CREATE TABLE IF NOT EXISTS journal (
    run_id TEXT NOT NULL, position BIGINT NOT NULL, key TEXT NOT NULL, call_id TEXT NOT NULL,
    kind TEXT NOT NULL, node TEXT NOT NULL, tool TEXT NOT NULL, arguments TEXT NOT NULL,
    digest TEXT NOT NULL, status TEXT NOT NULL, result TEXT NOT NULL,
    effectful BOOLEAN NOT NULL, idempotent BOOLEAN NOT NULL, created DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (run_id, position)
);
CREATE INDEX IF NOT EXISTS journal_key ON journal (run_id, key);
CREATE TABLE IF NOT EXISTS checkpoints (
    run_id TEXT NOT NULL, seq BIGINT NOT NULL, created DOUBLE PRECISION NOT NULL,
    position BIGINT NOT NULL, data TEXT NOT NULL, PRIMARY KEY (run_id, seq)
);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)
"""
"""The tables of a PostgreSQL run store (format version 1)."""

_TABLES = ("runs", "journal", "checkpoints", "meta")
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


class _PgCursor:
    """`Cursor` over one psycopg cursor (psycopg prepares statements it sees repeatedly)."""

    __slots__ = ("_cur",)

    def __init__(self, cur: Any) -> None:
        self._cur = cur

    def one(self, sql: str, params: Sequence[Any] = ()) -> tuple[Any, ...] | None:
        return self._cur.execute(sql, params).fetchone()

    def all(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return self._cur.execute(sql, params).fetchall()

    def run(self, sql: str, params: Sequence[Any] = ()) -> int:
        return self._cur.execute(sql, params).rowcount

    def many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        self._cur.executemany(sql, rows)


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
        self._connect()
        try:
            with self._conn.transaction():
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

    def _connect(self) -> None:
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
            raise StoreError(f"cannot connect to {self._location}: {self._message(exc)}") from None
        self._cursor = _PgCursor(self._conn.cursor())

    def _prepare(self, create: bool) -> None:
        """Check the database holds a run store this program reads; create the tables if none."""
        conn = self._conn
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
        rows = conn.execute(
            "SELECT relname FROM pg_class WHERE relkind IN ('r', 'p') AND relname = ANY(%s) "
            "AND pg_table_is_visible(oid)",
            (list(_TABLES),),
        ).fetchall()
        tables = {row[0] for row in rows}
        if not tables:
            if not create:
                raise StoreNotFoundError(f"{self._location} has no run store (nothing to open)")
            for statement in iter_statements(POSTGRES_SCHEMA):
                conn.execute(statement)
            conn.execute(
                "INSERT INTO meta (key, value) VALUES ('format_version', %s)",
                (str(FORMAT_VERSION),),
            )
            return
        if "meta" not in tables:
            raise StoreCorruptError(
                f"{self._location} has tables {', '.join(sorted(tables))} but no meta table: "
                "not a jianmu run store"
            )
        row = conn.execute("SELECT value FROM meta WHERE key = 'format_version'").fetchone()
        version = int(row[0]) if row and str(row[0]).isdigit() else None
        if version is None:
            raise StoreCorruptError(f"{self._location} has no valid format_version in table meta")
        if version > FORMAT_VERSION:
            raise StoreFormatError(
                f"the run store in {self._location} was written in store format {version}; this "
                f"program reads format {FORMAT_VERSION} (upgrade jianmu-bt)",
                found=version,
                supported=FORMAT_VERSION,
            )
        missing = [name for name in _TABLES if name not in tables]
        if missing:
            raise StoreCorruptError(f"{self._location} is missing tables: {', '.join(missing)}")

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
            return StoreError(f"lost the connection to {self._location}: {text}")
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
