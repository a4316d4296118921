"""Pieces of the SQL run stores: statements, JSON text, row conversions and checks.

The statements use `?` placeholders, `{now}` (the dialect's clock, or NULL for this machine's) and
`{lock}` (the dialect's row lock); `SQLRunStore` renders them per dialect.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from typing import Any, Protocol

from jianmu_bt.store.records import RUN_STATUSES, Checkpoint, JournalEntry, RunRecord

__all__ = [
    "ALL_POSITIONS",
    "FORMAT_VERSION",
    "STATEMENTS",
    "Cursor",
    "check_data",
    "check_status",
    "checkpoint_from_row",
    "dumps",
    "entry_from_row",
    "format_time",
    "iter_statements",
    "lease_held",
    "run_from_row",
    "run_row",
]

FORMAT_VERSION = 1
"""The store format this program writes and reads (kept in the `meta` table)."""

ALL_POSITIONS = 2**62
"""A journal position above every real one ("no upper bound")."""

_RUN = (
    "run_id, tree, status, started, updated, tree_path, tree_digest, inputs, reason, "
    "parent_run, parent_checkpoint, lease_owner, lease_expires"
)
_ENTRY = (
    "position, key, call_id, kind, node, tool, arguments, digest, status, result, "
    "effectful, idempotent, created"
)
_CP = "run_id, seq, created, position, data"

STATEMENTS = {
    "insert_run": f"INSERT INTO runs ({_RUN}, last_position, last_seq) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (run_id) DO NOTHING",
    "get_run": f"SELECT {_RUN} FROM runs WHERE run_id = ?",
    "lock_run": "SELECT lease_owner, lease_expires, last_position, last_seq, {now} "
    "FROM runs WHERE run_id = ?{lock}",
    "runs": f"SELECT {_RUN} FROM runs ORDER BY started DESC, run_id DESC",
    "runs_limit": f"SELECT {_RUN} FROM runs ORDER BY started DESC, run_id DESC LIMIT ?",
    "recent": "SELECT run_id FROM runs ORDER BY started DESC, run_id DESC LIMIT 5",
    "update_run": "UPDATE runs SET status = COALESCE(?, status), reason = COALESCE(?, reason), "
    "updated = ?, last_position = ?, last_seq = ? WHERE run_id = ?",
    "set_lease": "UPDATE runs SET lease_owner = ?, lease_expires = ? WHERE run_id = ?",
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
    "insert_cp": f"INSERT INTO checkpoints ({_CP}) VALUES (?, ?, ?, ?, ?)",
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


def dumps(value: Any) -> str:
    """Compact JSON text of `value`; values JSON cannot represent are written as their `str()`."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:  # lone surrogates: keep them as \\u escapes
            text = json.dumps(value, separators=(",", ":"), default=str)
    return text


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
    return RunRecord(*row[:7], json.loads(row[7]), *row[8:13])


def entry_from_row(row: Sequence[Any]) -> JournalEntry:
    """The JournalEntry of a `journal` row selected in `position … created` order."""
    position, key, call_id, kind, node, tool, arguments, digest, status, result = row[:10]
    return JournalEntry(
        key,
        call_id,
        kind,
        node,
        tool,
        json.loads(arguments),
        digest,
        status,
        json.loads(result),
        bool(row[10]),
        bool(row[11]),
        position,
        row[12],
    )


def checkpoint_from_row(row: Sequence[Any]) -> Checkpoint:
    """The Checkpoint of a `checkpoints` row (`run_id, seq, created, position, data`)."""
    return Checkpoint(row[0], row[1], row[2], row[3], json.loads(row[4]))


def run_row(run: RunRecord, inputs: str) -> tuple[Any, ...]:
    """The `runs` columns of a run, in insert order, with its inputs already as JSON text."""
    return (
        run.run_id,
        run.tree,
        run.status,
        run.started,
        run.updated,
        run.tree_path,
        run.tree_digest,
        inputs,
        run.reason,
        run.parent_run,
        run.parent_checkpoint,
        run.lease_owner,
        run.lease_expires,
    )


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


def iter_statements(script: str) -> Iterator[str]:
    """The `;`-separated statements of a schema script (no `;` inside statements)."""
    return (part.strip() for part in script.split(";") if part.strip())
