"""The run store logic shared by the SQL databases (SQLite and PostgreSQL).

A dialect supplies a transaction (`SQLRunStore._transaction`) yielding a `Cursor`, its parameter
style, its clock and its row lock; the rules (leases, fencing, journal positions, fork) live here
once.
"""

from __future__ import annotations

import bisect
import dataclasses
import time
from abc import abstractmethod
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any

from jianmu_bt.store.base import RunStore
from jianmu_bt.store.deltas import check_delta
from jianmu_bt.store.errors import (
    CheckpointNotFoundError,
    LeaseError,
    LeaseLostError,
    RunExistsError,
    RunNotFoundError,
)
from jianmu_bt.store.records import CALL_KINDS, CALL_STATUSES, Checkpoint, JournalEntry, RunRecord
from jianmu_bt.store.sqlrows import (
    ALL_POSITIONS,
    STATEMENTS,
    Cursor,
    check_data,
    check_status,
    checkpoint_from_row,
    checkpoints_from_rows,
    dumps,
    entry_from_row,
    format_time,
    lease_held,
    run_from_row,
    run_row,
)

__all__ = ["SQLRunStore"]


class SQLRunStore(RunStore):
    """A `RunStore` over an SQL database; subclasses supply the connection and dialect."""

    _PARAM = "?"
    """The dialect's parameter placeholder."""
    _NOW = "NULL"
    """A SQL expression for the current epoch time, NULL to use this machine's clock."""
    _LOCK = ""
    """The suffix locking the selected runs row until the transaction ends."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Render the statements in the subclass's dialect once."""
        super().__init_subclass__(**kwargs)
        cls._sql = {
            name: sql.format(now=cls._NOW, lock=cls._LOCK).replace("?", cls._PARAM)
            for name, sql in STATEMENTS.items()
        }

    _sql: dict[str, str] = {}

    @abstractmethod
    def _transaction(self, write: bool) -> AbstractContextManager[Cursor]:
        """Hold the store's lock; for writes, one transaction committed at the end.

        Rolls back when the block raises and turns driver errors into StoreError.
        """

    def _clock(self, cur: Cursor) -> float:
        """The current epoch time used for leases and timestamps."""
        return time.time()

    # -- helpers -----------------------------------------------------------------------------

    def _not_found(self, cur: Cursor, run_id: str) -> RunNotFoundError:
        recent = [row[0] for row in cur.all(self._sql["recent"])]
        known = f"recent runs: {', '.join(recent)}" if recent else "the store has no runs"
        return RunNotFoundError(
            f"no run {run_id!r} in run store {self.location} ({known})", run_id=run_id
        )

    def _lock_run(
        self, cur: Cursor, run_id: str
    ) -> tuple[str | None, float | None, int, int, float, int]:
        """The run's lease owner, expiry, last position, last checkpoint, the time now and the
        lease's fencing token, with the run's row locked until the transaction ends."""
        row = cur.one(self._sql["lock_run"], (run_id,))
        if row is None:
            raise self._not_found(cur, run_id)
        owner, expires, position, seq, now, token = row
        return owner, expires, position, seq, (time.time() if now is None else now), token

    def _require_run(self, cur: Cursor, run_id: str) -> None:
        if cur.one(self._sql["get_run"], (run_id,)) is None:
            raise self._not_found(cur, run_id)

    def _lease_error(
        self, run_id: str, holder: str | None, expires: float | None, now: float
    ) -> LeaseError:
        until = "further notice" if expires is None else format_time(expires, now)
        return LeaseError(
            f"run {run_id!r} in {self.location} is leased by {holder!r} until {until}",
            holder=holder,
            expires=expires,
        )

    def _lost(
        self, run_id: str, owner: str, holder: str | None, expires: float | None, now: float
    ) -> LeaseLostError:
        if holder is None or expires is None:
            now_held = "nobody holds it"
        elif holder == owner:
            now_held = f"it expired at {format_time(expires, now)}"
        elif lease_held(holder, expires, now):
            now_held = f"{holder!r} holds it until {format_time(expires, now)}"
        else:
            now_held = f"{holder!r} held it until {format_time(expires, now)}"
        return LeaseLostError(
            f"{owner!r} does not hold the lease on run {run_id!r} in {self.location} "
            f"({now_held}); the write was refused",
            holder=holder,
            expires=expires,
        )

    # -- runs ----------------------------------------------------------------------------------

    def create_run(
        self,
        run: RunRecord,
        checkpoint: dict[str, Any] | None = None,
        owner: str | None = None,
        lease_seconds: float = 30.0,
    ) -> RunRecord:
        """See `RunStore.create_run`."""
        check_status(run.status)
        inputs = dumps(run.inputs)
        data = None if checkpoint is None else check_data(checkpoint)
        with self._transaction(True) as cur:
            now = self._clock(cur)
            if owner is not None:
                run = dataclasses.replace(
                    run, lease_owner=owner, lease_expires=now + lease_seconds, lease_token=1
                )
            row = (*run_row(run, inputs), 0, 0 if data is None else 1)
            if not cur.run(self._sql["insert_run"], row):
                raise RunExistsError(
                    f"run {run.run_id!r} already exists in run store {self.location}",
                    run_id=run.run_id,
                )
            if data is not None:
                cur.run(self._sql["insert_cp"], (run.run_id, 1, now, 0, data, 0))
        return run

    def get_run(self, run_id: str) -> RunRecord:
        """See `RunStore.get_run`."""
        with self._transaction(False) as cur:
            row = cur.one(self._sql["get_run"], (run_id,))
            if row is None:
                raise self._not_found(cur, run_id)
        return run_from_row(row)

    def runs(self, limit: int | None = None) -> list[RunRecord]:
        """See `RunStore.runs`."""
        with self._transaction(False) as cur:
            if limit is None:
                rows = cur.all(self._sql["runs"])
            else:
                rows = cur.all(self._sql["runs_limit"], (max(0, int(limit)),))
        return [run_from_row(row) for row in rows]

    def delete_run(self, run_id: str) -> None:
        """See `RunStore.delete_run`."""
        with self._transaction(True) as cur:
            if not cur.run(self._sql["delete_run"], (run_id,)):
                raise self._not_found(cur, run_id)
            cur.run(self._sql["delete_journal"], (run_id,))
            cur.run(self._sql["delete_cps"], (run_id,))

    # -- progress ------------------------------------------------------------------------------

    def append(
        self,
        run_id: str,
        owner: str | None,
        entries: Sequence[JournalEntry] = (),
        checkpoint: dict[str, Any] | None = None,
        status: str | None = None,
        reason: str | None = None,
        *,
        release: bool = False,
        fence: int | None = None,
        delta: bool = False,
    ) -> int:
        """See `RunStore.append`."""
        if status is not None:
            check_status(status)
        if delta and checkpoint is not None:
            check_delta(checkpoint)
        rows = []
        for e in entries:
            if e.status not in CALL_STATUSES:
                raise ValueError(
                    f"journal entry {e.key!r}: unknown call status {e.status!r}; expected one "
                    f"of {', '.join(CALL_STATUSES)}"
                )
            if e.kind not in CALL_KINDS:
                raise ValueError(
                    f"journal entry {e.key!r}: unknown kind {e.kind!r}; "
                    f"expected {', '.join(CALL_KINDS)}"
                )
            arguments, result = dumps(e.arguments), dumps(e.result)
            rows.append(
                [
                    run_id,
                    0,  # the position, assigned below
                    e.key,
                    e.call_id,
                    e.kind,
                    e.node,
                    e.tool,
                    arguments,
                    e.digest,
                    e.status,
                    result,
                    bool(e.effectful),
                    bool(e.idempotent),
                    e.created,
                ]
            )
        data = None if checkpoint is None else check_data(checkpoint)
        with self._transaction(True) as cur:
            holder, expires, position, seq, now, token = self._lock_run(cur, run_id)
            if owner is not None:
                # With its fencing token a writer is refused once anyone else took the run; an
                # expired lease nobody took since is still its own (a busy holder late to renew).
                held = lease_held(holder, expires, now) if fence is None else fence == token
                if holder != owner or not held:
                    raise self._lost(run_id, owner, holder, expires, now)
            elif holder is not None and lease_held(holder, expires, now):
                raise self._lease_error(run_id, holder, expires, now)
            for row in rows:
                position += 1
                row[1] = position
                row[13] = row[13] or now
            if rows:
                cur.many(self._sql["insert_entry"], rows)
            if data is not None:
                if delta and seq == 0:
                    raise ValueError(
                        f"run {run_id!r} has no checkpoint yet: its first one cannot be a delta"
                    )
                seq += 1
                cur.run(self._sql["insert_cp"], (run_id, seq, now, position, data, int(delta)))
            update = "release_run" if release and owner is not None else "update_run"
            cur.run(self._sql[update], (status, reason, now, position, seq, run_id))
        return position

    def journal(self, run_id: str, upto: int | None = None) -> list[JournalEntry]:
        """See `RunStore.journal`."""
        bound = ALL_POSITIONS if upto is None else upto
        with self._transaction(False) as cur:
            rows = cur.all(self._sql["journal"], (run_id, bound, run_id))
            if not rows:
                self._require_run(cur, run_id)
        return [entry_from_row(row) for row in rows]

    def journal_log(self, run_id: str) -> list[JournalEntry]:
        """See `RunStore.journal_log`."""
        with self._transaction(False) as cur:
            rows = cur.all(self._sql["journal_log"], (run_id, ALL_POSITIONS))
            if not rows:
                self._require_run(cur, run_id)
        return [entry_from_row(row) for row in rows]

    # -- checkpoints ---------------------------------------------------------------------------

    def _missing_checkpoint(self, cur: Cursor, run_id: str, seq: int) -> CheckpointNotFoundError:
        self._require_run(cur, run_id)
        low, high = cur.one(self._sql["cp_range"], (run_id,)) or (None, None)
        has = "it has no checkpoints" if low is None else f"it has checkpoints {low}–{high}"
        return CheckpointNotFoundError(
            f"run {run_id!r} in {self.location} has no checkpoint {seq} ({has})"
        )

    def _chain(self, cur: Cursor, run_id: str, seq: int) -> Checkpoint | None:
        """Checkpoint `seq`, made from the last full one at or before it and the deltas after."""
        rows = cur.all(self._sql["cp_chain"], (run_id, seq, run_id, seq))
        if not rows or rows[-1][1] != seq:
            return None
        return checkpoints_from_rows(rows)[-1]

    def latest_checkpoint(self, run_id: str) -> Checkpoint | None:
        """See `RunStore.latest_checkpoint`."""
        with self._transaction(False) as cur:
            row = cur.one(self._sql["latest_cp"], (run_id,))
            if row is None:
                self._require_run(cur, run_id)
                return None
            return self._chain(cur, run_id, row[1]) if row[5] else checkpoint_from_row(row)

    def checkpoint(self, run_id: str, seq: int) -> Checkpoint:
        """See `RunStore.checkpoint`."""
        with self._transaction(False) as cur:
            row = cur.one(self._sql["checkpoint"], (run_id, seq))
            if row is None:
                raise self._missing_checkpoint(cur, run_id, seq)
            found = self._chain(cur, run_id, seq) if row[5] else checkpoint_from_row(row)
        assert found is not None  # a delta row always follows a full one
        return found

    def history(self, run_id: str) -> list[Checkpoint]:
        """See `RunStore.history`."""
        with self._transaction(False) as cur:
            rows = cur.all(self._sql["history"], (run_id,))
            if not rows:
                self._require_run(cur, run_id)
        return checkpoints_from_rows(rows)

    def fork(self, run_id: str, seq: int, new_run: RunRecord) -> RunRecord:
        """See `RunStore.fork`."""
        check_status(new_run.status)
        new_run = dataclasses.replace(new_run, parent_run=run_id, parent_checkpoint=seq)
        inputs = dumps(new_run.inputs)
        with self._transaction(True) as cur:
            target = cur.one(self._sql["checkpoint"], (run_id, seq))
            if target is None:
                raise self._missing_checkpoint(cur, run_id, seq)
            if target[5]:  # a delta: the fork gets the whole document it stands for
                whole = self._chain(cur, run_id, seq)
                assert whole is not None
                target = (*target[:4], dumps(whole.data), 0)
            first = target if seq == 1 else cur.one(self._sql["checkpoint"], (run_id, 1))
            copies = [target] if first is None or seq == 1 else [first, target]
            rows = cur.all(self._sql["journal_log"], (run_id, target[3]))
            old = [row[0] for row in rows]  # positions are ascending
            fields = (*run_row(new_run, inputs), len(rows), len(copies))
            if not cur.run(self._sql["insert_run"], fields):
                raise RunExistsError(
                    f"run {new_run.run_id!r} already exists in run store {self.location}",
                    run_id=new_run.run_id,
                )
            if rows:
                cur.many(
                    self._sql["insert_entry"],
                    [(new_run.run_id, i, *row[1:]) for i, row in enumerate(rows, 1)],
                )
            for new_seq, cp in enumerate(copies, 1):
                moved = bisect.bisect_right(old, cp[3])
                cur.run(self._sql["insert_cp"], (new_run.run_id, new_seq, cp[2], moved, cp[4], 0))
        return new_run

    # -- leases --------------------------------------------------------------------------------

    def _set_lease(
        self, cur: Cursor, run_id: str, owner: str | None, expires: float | None, token: int
    ) -> RunRecord:
        cur.run(self._sql["set_lease"], (owner, expires, token, run_id))
        row = cur.one(self._sql["get_run"], (run_id,))
        assert row is not None
        return run_from_row(row)

    def acquire_lease(
        self, run_id: str, owner: str, seconds: float = 30.0, *, steal_from: str | None = None
    ) -> RunRecord:
        """See `RunStore.acquire_lease`."""
        with self._transaction(True) as cur:
            holder, expires, _, _, now, token = self._lock_run(cur, run_id)
            if lease_held(holder, expires, now) and holder not in (owner, steal_from):
                raise self._lease_error(run_id, holder, expires, now)
            return self._set_lease(cur, run_id, owner, now + seconds, token + 1)

    def renew_lease(
        self, run_id: str, owner: str, seconds: float = 30.0, *, fence: int | None = None
    ) -> RunRecord:
        """See `RunStore.renew_lease`."""
        with self._transaction(True) as cur:
            holder, expires, _, _, now, token = self._lock_run(cur, run_id)
            if holder != owner or (fence is not None and fence != token):
                raise self._lost(run_id, owner, holder, expires, now)
            return self._set_lease(cur, run_id, owner, now + seconds, token)

    def release_lease(self, run_id: str, owner: str) -> None:
        """See `RunStore.release_lease`."""
        with self._transaction(True) as cur:
            row = cur.one(self._sql["lock_run"], (run_id,))
            if row is not None and row[0] == owner:
                cur.run(self._sql["set_lease"], (None, None, row[5], run_id))
