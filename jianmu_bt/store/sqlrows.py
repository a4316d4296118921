"""Pieces of the SQL run stores: statements, JSON text, row conversions and checks.

The statements use `?` placeholders, `{now}` (the dialect's clock, or NULL for this machine's) and
`{lock}` (the dialect's row lock); `SQLRunStore` renders them per dialect.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Iterator, Sequence
from datetime import UTC, datetime
from typing import Any, Protocol

from jianmu_bt.store import codec
from jianmu_bt.store.codec import loads
from jianmu_bt.store.deltas import apply_delta
from jianmu_bt.store.errors import StoreCorruptError, StoreFormatError
from jianmu_bt.store.records import RUN_STATUSES, Checkpoint, JournalEntry, RunRecord

__all__ = [
    "ALL_POSITIONS",
    "FORMAT_VERSION",
    "SCHEMA",
    "STATEMENTS",
    "TABLES",
    "Cursor",
    "ExecutingCursor",
    "check_data",
    "check_format",
    "check_status",
    "check_tables",
    "checkpoint_from_row",
    "checkpoints_from_rows",
    "create_tables",
    "dumps",
    "entry_from_row",
    "format_time",
    "iter_statements",
    "lease_held",
    "run_from_row",
    "run_row",
    "upgrade",
]

FORMAT_VERSION = 2
"""The store format this program writes and reads (kept in the `meta` table). Format 1 lacked
`runs.lease_token`; a format-1 store is upgraded in place when opened (see `upgrade`)."""

ALL_POSITIONS = 2**62
"""A journal position above every real one ("no upper bound")."""

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY, tree TEXT NOT NULL, status TEXT NOT NULL,
    started {real} NOT NULL, updated {real} NOT NULL, tree_path TEXT NOT NULL DEFAULT '',
    tree_digest TEXT NOT NULL DEFAULT '', inputs TEXT NOT NULL DEFAULT '{{}}',
    reason TEXT NOT NULL DEFAULT '', parent_run TEXT, parent_checkpoint {int},
    lease_owner TEXT, lease_expires {real}, lease_token {int} NOT NULL DEFAULT 0,
    last_position {int} NOT NULL DEFAULT 0, last_seq {int} NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS runs_started ON runs (started);
CREATE TABLE IF NOT EXISTS journal (
    run_id TEXT NOT NULL, position {int} NOT NULL, key TEXT NOT NULL, call_id TEXT NOT NULL,
    kind TEXT NOT NULL, node TEXT NOT NULL, tool TEXT NOT NULL, arguments TEXT NOT NULL,
    digest TEXT NOT NULL, status TEXT NOT NULL, result TEXT NOT NULL,
    effectful {bool} NOT NULL, idempotent {bool} NOT NULL, created {real} NOT NULL,
    PRIMARY KEY (run_id, position)
);
CREATE TABLE IF NOT EXISTS checkpoints (
    run_id TEXT NOT NULL, seq {int} NOT NULL, created {real} NOT NULL,
    position {int} NOT NULL, data TEXT NOT NULL, delta {int} NOT NULL DEFAULT 0,
    PRIMARY KEY (run_id, seq)
);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)
"""
"""The tables of a run store (format version 2), with the dialect's column types to fill in:
`{real}` (epoch seconds), `{int}` (positions, sequence numbers) and `{bool}`. The journal has
no index by key: a run's rows are read in position order (its primary key) and grouped by key
in memory, and such an index would make every write touch a page per row (stores made by
earlier versions keep theirs; it changes no result)."""

TABLES = ("runs", "journal", "checkpoints", "meta")
"""The tables SCHEMA creates (a store lacking any of them is corrupt)."""

_RUN_FIELDS = tuple(f.name for f in dataclasses.fields(RunRecord))
"""The `runs` columns that hold a RunRecord: named as its fields, in their order."""
_RUN = ", ".join(_RUN_FIELDS)
_ENTRY = (
    "position, key, call_id, kind, node, tool, arguments, digest, status, result, "
    "effectful, idempotent, created"
)
_CP = "run_id, seq, created, position, data, delta"
_PROGRESS = (
    "UPDATE runs SET status = COALESCE(?, status), reason = COALESCE(?, reason), "
    "updated = ?, last_position = ?, last_seq = ?"
)
"""What `append` sets on the run (`release_run` also lets the lease go)."""

STATEMENTS = {
    "insert_run": f"INSERT INTO runs ({_RUN}, last_position, last_seq) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (run_id) DO NOTHING",
    "get_run": f"SELECT {_RUN} FROM runs WHERE run_id = ?",
    "lock_run": "SELECT lease_owner, lease_expires, last_position, last_seq, {now}, "
    "lease_token "
    "FROM runs WHERE run_id = ?{lock}",
    "runs": f"SELECT {_RUN} FROM runs ORDER BY started DESC, run_id DESC",
    "runs_limit": f"SELECT {_RUN} FROM runs ORDER BY started DESC, run_id DESC LIMIT ?",
    "recent": "SELECT run_id FROM runs ORDER BY started DESC, run_id DESC LIMIT 5",
    "update_run": f"{_PROGRESS} WHERE run_id = ?",
    "release_run": f"{_PROGRESS}, lease_owner = NULL, lease_expires = NULL WHERE run_id = ?",
    "set_lease": "UPDATE runs SET lease_owner = ?, lease_expires = ?, lease_token = ? "
    "WHERE run_id = ?",
    "delete_run": "DELETE FROM runs WHERE run_id = ?",
    "insert_entry": f"INSERT INTO journal (run_id, {_ENTRY}) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    "journal": "SELECT "
    + ", ".join("j." + c.strip() for c in _ENTRY.split(","))
    + " FROM journal j JOIN (SELECT key, MIN(position) AS first_pos, MAX(position) AS last_pos "
    "FROM journal WHERE run_id = ? AND position <= ? GROUP BY key) f "
    "ON j.position = f.last_pos WHERE j.run_id = ? ORDER BY f.first_pos",
    "journal_log": f"SELECT {_ENTRY} FROM journal WHERE run_id = ? AND position <= ? "
    "ORDER BY position",
    "delete_journal": "DELETE FROM journal WHERE run_id = ?",
    "insert_cp": f"INSERT INTO checkpoints ({_CP}) VALUES (?, ?, ?, ?, ?, ?)",
    # A checkpoint with the deltas that lead to it from the last full one at or before it.
    "cp_chain": f"SELECT {_CP} FROM checkpoints WHERE run_id = ? AND seq <= ? AND seq >= "
    "(SELECT COALESCE(MAX(seq), 0) FROM checkpoints WHERE run_id = ? AND seq <= ? AND delta = 0) "
    "ORDER BY seq",
    "checkpoint": f"SELECT {_CP} FROM checkpoints WHERE run_id = ? AND seq = ?",
    "latest_cp": f"SELECT {_CP} FROM checkpoints WHERE run_id = ? ORDER BY seq DESC LIMIT 1",
    "history": f"SELECT {_CP} FROM checkpoints WHERE run_id = ? ORDER BY seq",
    "cp_range": "SELECT MIN(seq), MAX(seq) FROM checkpoints WHERE run_id = ?",
    "delete_cps": "DELETE FROM checkpoints WHERE run_id = ?",
}
"""The statements, with `?` placeholders, `{now}` (clock or NULL) and `{lock}` (row lock)."""


class Cursor(Protocol):
    """What a dialect's transaction yields: run statements, fetch rows."""

    def one(self, sql: str, params: Sequence[Any] = ()) -> tuple[Any, ...] | None:
        """The first row of a query, None when it has none."""
        ...

    def all(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Every row of a query."""
        ...

    def run(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Run a statement; the number of rows it changed."""
        ...

    def many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        """Run a statement once per row of parameters."""
        ...


class Executes(Protocol):
    """A DB-API connection or cursor: `execute` returns something to fetch rows from."""

    def execute(self, sql: str, params: Sequence[Any], /) -> Any:
        """Run one statement."""
        ...

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]], /) -> Any:
        """Run one statement per row of parameters."""
        ...


class ExecutingCursor:
    """`Cursor` over an sqlite3 connection or a psycopg cursor (both prepare repeated statements:
    sqlite3 through its statement cache, psycopg once it has seen a statement a few times)."""

    __slots__ = ("_target",)

    def __init__(self, target: Executes) -> None:
        self._target = target

    def one(self, sql: str, params: Sequence[Any] = ()) -> tuple[Any, ...] | None:
        """See `Cursor.one`."""
        row: tuple[Any, ...] | None = self._target.execute(sql, params).fetchone()
        return row

    def all(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """See `Cursor.all`."""
        rows: list[tuple[Any, ...]] = self._target.execute(sql, params).fetchall()
        return rows

    def run(self, sql: str, params: Sequence[Any] = ()) -> int:
        """See `Cursor.run`."""
        count: int = self._target.execute(sql, params).rowcount
        return count

    def many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        """See `Cursor.many`."""
        self._target.executemany(sql, rows)


def dumps(value: Any) -> str:
    """Compact JSON text of `value` in the run's typed encoding (`jianmu_bt.store.codec`): JSON
    values as they are, others tagged so that they read back equal; a value without an exact
    form is refused (UnrecordableValueError, a TypeError naming where it is and its type)."""
    return codec.dumps(value)


def format_time(moment: float, now: float) -> str:
    """`2026-12-03 10:00:00Z (in 12.0 s)` or `(3.0 s ago)`, for messages."""
    stamp = datetime.fromtimestamp(moment, UTC).strftime("%Y-%m-%d %H:%M:%SZ")
    delta = moment - now
    return f"{stamp} (in {delta:.1f} s)" if delta >= 0 else f"{stamp} ({-delta:.1f} s ago)"


def lease_held(lease_owner: str | None, lease_expires: float | None, now: float) -> bool:
    """Whether a lease is in force (a lease without an expiry counts as expired)."""
    return lease_owner is not None and lease_expires is not None and lease_expires > now


def run_from_row(row: Sequence[Any]) -> RunRecord:
    """The RunRecord of a `runs` row selected in `run_id … lease_expires` order."""
    values = dict(zip(_RUN_FIELDS, row, strict=False))
    values["inputs"] = loads(values["inputs"])
    return RunRecord(**values)


def entry_from_row(row: Sequence[Any]) -> JournalEntry:
    """The JournalEntry of a `journal` row selected in `position … created` order."""
    position, key, call_id, kind, node, tool, arguments, digest, status, result = row[:10]
    return JournalEntry(
        key,
        call_id,
        kind,
        node,
        tool,
        loads(arguments),
        digest,
        status,
        loads(result),
        bool(row[10]),
        bool(row[11]),
        position,
        row[12],
    )


def checkpoint_from_row(row: Sequence[Any]) -> Checkpoint:
    """The Checkpoint of a full `checkpoints` row (`run_id, seq, created, position, data,
    delta`); see `checkpoints_from_rows` for rows that may be deltas."""
    return Checkpoint(row[0], row[1], row[2], row[3], loads(row[4]))


def checkpoints_from_rows(rows: Sequence[Sequence[Any]]) -> list[Checkpoint]:
    """The Checkpoints of consecutive `checkpoints` rows starting at a full one, each delta row
    applied to the document before it (`jianmu_bt.store.deltas`)."""
    found: list[Checkpoint] = []
    document: dict[str, Any] = {}
    for row in rows:
        data = loads(row[4])
        document = apply_delta(document, data) if row[5] else data
        found.append(Checkpoint(row[0], row[1], row[2], row[3], document))
    return found


def run_row(run: RunRecord, inputs: str) -> tuple[Any, ...]:
    """The `runs` columns of a run, in insert order, with its inputs already as JSON text."""
    return tuple(inputs if name == "inputs" else getattr(run, name) for name in _RUN_FIELDS)


def check_status(status: str) -> None:
    """Raise ValueError unless `status` is one of RUN_STATUSES."""
    if status not in RUN_STATUSES:
        raise ValueError(
            f"unknown run status {status!r}; expected one of {', '.join(RUN_STATUSES)}"
        )


def check_data(checkpoint: Any) -> str:
    """The JSON text of a checkpoint document (TypeError unless it is a dict)."""
    if not isinstance(checkpoint, dict):
        raise TypeError(f"a checkpoint is a dict, not {type(checkpoint).__name__}")
    return dumps(checkpoint)


def check_format(where: str, value: Any) -> int:
    """Refuse a store whose `format_version` (`value`, from its meta table) is missing or newer
    than this program reads; `where` names the store ("run store /path/runs.db"). Returns the
    version found."""
    text = "" if value is None else str(value).strip()
    if not text.isdigit():
        raise StoreCorruptError(f"{where} has no valid format_version in its meta table")
    if int(text) > FORMAT_VERSION:
        raise StoreFormatError(
            f"{where} was written in store format {text}; this program reads format "
            f"{FORMAT_VERSION} (upgrade jianmu-bt)",
            found=int(text),
            supported=FORMAT_VERSION,
        )
    return int(text)


def iter_statements(script: str) -> Iterator[str]:
    """The `;`-separated statements of a schema script (no `;` inside statements)."""
    return (part.strip() for part in script.split(";") if part.strip())


_READ_FORMAT = "SELECT value FROM meta WHERE key = 'format_version'"
# The version is a constant integer, so it is written into the statement (no parameter style).
_WRITE_FORMAT = (
    f"INSERT INTO meta (key, value) VALUES ('format_version', '{FORMAT_VERSION}') "
    "ON CONFLICT (key) DO NOTHING"
)


def check_tables(where: str, tables: Collection[str], conn: Executes) -> int:
    """Refuse an existing database that is not a run store this program reads (StoreCorruptError,
    StoreFormatError): `tables` (those of SCHEMA it has) without `meta`, a missing or newer
    format version, or a missing table. `where` names the store in messages. Returns the format
    version found (older ones are upgraded with `upgrade`)."""
    if "meta" not in tables:
        raise StoreCorruptError(
            f"{where} is not a jianmu run store (it has tables {', '.join(sorted(tables))} "
            "but no meta table)"
        )
    row = conn.execute(_READ_FORMAT, ()).fetchone()
    found = check_format(where, row[0] if row else None)
    missing = [name for name in TABLES if name not in tables]
    if missing:
        raise StoreCorruptError(f"{where} is missing tables: {', '.join(missing)}")
    return found


_UPGRADES = {
    1: [
        "ALTER TABLE runs ADD COLUMN lease_token {int} NOT NULL DEFAULT 0",
        "ALTER TABLE checkpoints ADD COLUMN delta {int} NOT NULL DEFAULT 0",
    ],
}
"""The statements that bring a store from each older format to the next one."""


def upgrade(conn: Executes, int_type: str) -> None:
    """Bring the store to FORMAT_VERSION, inside the caller's write transaction (which must
    hold the database's write lock: two processes opening an old store upgrade it once)."""
    row = conn.execute(_READ_FORMAT, ()).fetchone()
    found = int(row[0]) if row else FORMAT_VERSION
    for version in range(found, FORMAT_VERSION):
        for statement in _UPGRADES[version]:
            conn.execute(statement.format(int=int_type), ())
    if found < FORMAT_VERSION:
        conn.execute(f"UPDATE meta SET value = '{FORMAT_VERSION}' WHERE key = 'format_version'", ())


def create_tables(conn: Executes, schema: str) -> None:
    """Create the tables (`schema`: SCHEMA in the dialect's types) and record the format version;
    inside the caller's transaction. Tables and a version already there are kept."""
    for statement in iter_statements(schema):
        conn.execute(statement, ())
    conn.execute(_WRITE_FORMAT, ())
