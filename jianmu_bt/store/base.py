"""The run store interface: runs, an append-only call journal, checkpoints and leases.

Implementations are synchronous and thread-safe (calls may come from several threads of one
process); several processes may share one store, the lease deciding which one drives a run.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from types import TracebackType
from typing import Any

from jianmu_bt.store.records import Checkpoint, JournalEntry, RunRecord

__all__ = ["RunStore"]


class RunStore(ABC):
    """Where runs live: plain records and JSON documents, nothing about trees.

    Use it as a context manager (or call `close()`) to release the connection.
    """

    @property
    @abstractmethod
    def location(self) -> str:
        """Where the store is, for messages (a file path or `PostgreSQL at host:port/db`)."""

    @abstractmethod
    def create_run(
        self,
        run: RunRecord,
        checkpoint: dict[str, Any] | None = None,
        owner: str | None = None,
        lease_seconds: float = 30.0,
    ) -> RunRecord:
        """Insert `run` and return it as stored.

        In the same transaction, `checkpoint` (when given) becomes checkpoint 1 at position 0 and
        `owner` (when given) takes the lease for `lease_seconds` with fencing token 1. Raises
        RunExistsError when the id is taken and ValueError for an unknown status.
        """

    @abstractmethod
    def get_run(self, run_id: str) -> RunRecord:
        """The run with this id (RunNotFoundError when there is none)."""

    @abstractmethod
    def runs(self, limit: int | None = None) -> list[RunRecord]:
        """Runs, the most recently started first, at most `limit` of them when given."""

    @abstractmethod
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
        """Record progress of a run in one atomic transaction; return its last journal position.

        When `owner` is given it must hold the lease (else LeaseLostError: the write is
        refused): unexpired, or with `fence` its fencing token, taken by nobody since;
        when None, no lease is needed but nobody may hold an unexpired one (else LeaseError).
        Appends `entries` (positions assigned in order), writes `checkpoint` at the last
        position, and sets `status` and `reason` when given; `updated` is always set. With
        `delta`, `checkpoint` is what changed since the run's previous checkpoint
        (`jianmu_bt.store.deltas`; readers get the whole document). With
        `release` (and an `owner`) the lease is given up in the same transaction, as
        `release_lease` would after it: a run's last write. Raises ValueError for an unknown run
        status, call status or call kind, writing nothing.
        """

    @abstractmethod
    def journal(self, run_id: str, upto: int | None = None) -> list[JournalEntry]:
        """The latest row of each call among rows at positions <= `upto` (all when None).

        Calls are ordered by the position of their first row.
        """

    @abstractmethod
    def journal_log(self, run_id: str) -> list[JournalEntry]:
        """Every journal row of the run, in append order."""

    @abstractmethod
    def latest_checkpoint(self, run_id: str) -> Checkpoint | None:
        """The run's newest checkpoint, None when it has none."""

    @abstractmethod
    def checkpoint(self, run_id: str, seq: int) -> Checkpoint:
        """Checkpoint `seq` of the run (CheckpointNotFoundError when there is none)."""

    @abstractmethod
    def history(self, run_id: str) -> list[Checkpoint]:
        """Every checkpoint of the run, oldest first."""

    @abstractmethod
    def fork(self, run_id: str, seq: int, new_run: RunRecord) -> RunRecord:
        """Create `new_run` from checkpoint `seq` of run `run_id`, in one transaction.

        The new run's parent is the source run and checkpoint; it gets the source's journal rows
        up to that checkpoint's position (renumbered from 1, same keys) and the source's
        checkpoint 1 and checkpoint `seq` as its checkpoints 1 and 2 (just 1 when `seq` is 1).
        """

    @abstractmethod
    def acquire_lease(
        self, run_id: str, owner: str, seconds: float = 30.0, *, steal_from: str | None = None
    ) -> RunRecord:
        """Take the run's lease for `seconds` (on the store's clock) and return the updated run,
        whose `lease_token` (one more than the last one issued) fences the owner's writes.

        Succeeds when the lease is free, expired, already ours or held by exactly `steal_from`;
        otherwise raises LeaseError naming the holder and the expiry.
        """

    @abstractmethod
    def renew_lease(
        self, run_id: str, owner: str, seconds: float = 30.0, *, fence: int | None = None
    ) -> RunRecord:
        """Extend our lease to `seconds` from now (LeaseLostError when it is not ours, or was
        taken again since we got the fencing token `fence`).

        A lease of ours that expired but that nobody has taken since is renewed.
        """

    @abstractmethod
    def release_lease(self, run_id: str, owner: str) -> None:
        """Give up our lease; nothing happens when it is not ours or the run is gone."""

    @abstractmethod
    def delete_run(self, run_id: str) -> None:
        """Delete the run with its journal and checkpoints (RunNotFoundError when missing)."""

    @abstractmethod
    def close(self) -> None:
        """Close the connection; calling it again does nothing."""

    def __enter__(self) -> RunStore:
        """The store itself."""
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Close the store."""
        self.close()
