"""A run store that fails on purpose: the fault-injection suite's wrapper around a real store.

`FaultyStore(store)` passes every call to `store` until it is told to fail:

- `fail_appends(from_n, when=..., times=...)`: the `from_n`-th `append` (counting from 1 after the
  wrapper was made) and the ones after it raise StoreUnavailableError, `times` of them (None:
  every one, the store stays down). `when="before"` fails without writing (the write is lost);
  `when="after"` writes first and then raises, as a connection cut after its COMMIT would;
- while appends fail, lease renewals and releases fail too (the store is down for everyone).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from jianmu_bt.store import JournalEntry, RunRecord, RunStore, StoreUnavailableError


class FaultyStore(RunStore):
    """`store`, failing its writes on request (see the module docstring)."""

    def __init__(self, store: RunStore) -> None:
        self.inner = store
        self.appends = 0
        self.failed = 0
        self._from: int | None = None
        self._when = "before"
        self._times: int | None = None

    def fail_appends(self, from_n: int, *, when: str = "before", times: int | None = None) -> None:
        """Fail the `from_n`-th append and the next ones (`times` in all; None: all of them)."""
        assert when in ("before", "after")
        self._from, self._when, self._times = from_n, when, times

    def _down(self) -> bool:
        if self._from is None or self.appends < self._from:
            return False
        return self._times is None or self.failed < self._times

    def _fault(self) -> StoreUnavailableError:
        self.failed += 1
        return StoreUnavailableError(f"{self.location} is unavailable (injected fault)")

    @property
    def location(self) -> str:
        return self.inner.location

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
        self.appends += 1
        down = self._down()
        if down and self._when == "before":
            raise self._fault()
        position = self.inner.append(
            run_id,
            owner,
            entries,
            checkpoint,
            status,
            reason,
            release=release,
            fence=fence,
            delta=delta,
        )
        if down:
            raise self._fault()
        return position

    def renew_lease(
        self, run_id: str, owner: str, seconds: float = 30.0, *, fence: int | None = None
    ) -> RunRecord:
        if self._down():
            raise self._fault()
        return self.inner.renew_lease(run_id, owner, seconds, fence=fence)

    def release_lease(self, run_id: str, owner: str) -> None:
        if self._down():
            raise self._fault()
        self.inner.release_lease(run_id, owner)

    # -- passed through as they are ----------------------------------------------------------

    def create_run(self, *args: Any, **kwargs: Any) -> RunRecord:
        return self.inner.create_run(*args, **kwargs)

    def get_run(self, run_id: str) -> RunRecord:
        return self.inner.get_run(run_id)

    def runs(self, limit: int | None = None) -> list[RunRecord]:
        return self.inner.runs(limit)

    def journal(self, run_id: str, upto: int | None = None) -> list[JournalEntry]:
        return self.inner.journal(run_id, upto)

    def journal_log(self, run_id: str) -> list[JournalEntry]:
        return self.inner.journal_log(run_id)

    def latest_checkpoint(self, run_id: str) -> Any:
        return self.inner.latest_checkpoint(run_id)

    def checkpoint(self, run_id: str, seq: int) -> Any:
        return self.inner.checkpoint(run_id, seq)

    def history(self, run_id: str) -> list[Any]:
        return self.inner.history(run_id)

    def fork(self, run_id: str, seq: int, new_run: RunRecord) -> RunRecord:
        return self.inner.fork(run_id, seq, new_run)

    def acquire_lease(self, *args: Any, **kwargs: Any) -> RunRecord:
        return self.inner.acquire_lease(*args, **kwargs)

    def delete_run(self, run_id: str) -> None:
        self.inner.delete_run(run_id)

    def close(self) -> None:
        self.inner.close()
