"""RunJournal: a durable run's record of every tool call and LLM turn, and how resume replays it.

A durable run writes to its run store (`jianmu_bt.store`) around every step: a tool call that
may have a side effect is recorded `running` before it starts, and every call's outcome
(`done`/`failed`, with its result) after it; a call the guard holds is `held`; refusals are
`denied`. Each write carries a checkpoint (state, guard, tree progress) in the same transaction.

A call that may run again (its tool is declared read-only or idempotent) writes no `running`
row, and its outcome is group-committed (`record_outcome`): written with the run's next write
(another call's start, an LLM turn, a hold, the run's end), and at the latest once
`GROUP_ENTRIES` outcomes wait or the oldest has waited `GROUP_SECONDS` (on asyncio, whatever the
run is doing meanwhile; on other event loops, before the runner waits for work). Lost to a
crash, such a step simply runs again on resume; the outcome of a call that may not run again is
written as soon as it ends.

Resume runs the tree again from the run's initial state against the journal. Every step has a
key that depends only on the tree and the order of its steps (`<node id>#<entry>`), so the
replay reaches the same keys: a finished call is answered from the journal (its tool does not
run), an LLM turn gets its recorded reply, and the run goes on live from the first step with no
record. A call recorded `running` (it was in flight when the process stopped) runs again when its
tool is declared read-only or idempotent, and is otherwise `in_doubt`: held for a decision.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

import anyio

from jianmu_bt.runtime.lease import (
    Heartbeat,
    heartbeat_seconds,
    new_lease_owner as new_lease_owner,  # its older home
    owner_is_dead as owner_is_dead,  # its older home
)
from jianmu_bt.runtime.stopping import RunStopped
from jianmu_bt.store import LeaseLostError, StoreError, StoreUnavailableError, patiently
from jianmu_bt.store.patience import DEFAULT_PATIENCE

logger = logging.getLogger(__name__)

if TYPE_CHECKING:
    from jianmu_bt.runtime.checkpoints import Checkpointer
    from jianmu_bt.store import JournalEntry, RunStore

#: Call statuses that end a call: the journal answers them on replay.
FINISHED_CALL = frozenset({"done", "failed", "denied", "skipped"})
#: Call statuses waiting for a reviewer's decision.
WAITING_CALL = frozenset({"held", "in_doubt"})
#: A step the tree itself cancelled (a Timeout decorator, a parent that moved on): on replay it
#: waits until the tree cancels it again, so the run takes the same path.
CANCELLED = "cancelled"
#: At most this many group-committed outcomes wait for the next write: then they are written.
GROUP_ENTRIES = 64
#: Nor does the oldest of them wait longer than this many seconds, whatever the run does.
GROUP_SECONDS = 0.05


class StoreFaultError(StoreError):
    """A durable run stopped at once because its run store failed to record a step (after
    waiting it out) or its lease was lost: nothing ran after that step. The run stays
    resumable; a call whose outcome was not recorded is treated as one in flight at a crash."""

    def __init__(self, message: str, *, run_id: str | None = None) -> None:
        super().__init__(message)
        self.run_id = run_id
        """The run that stopped."""


class JournalMismatchError(RuntimeError):
    """Replay reached a recorded step that asks for something else than the record says: the
    tree, its tools or its inputs changed since the run began."""


class RunJournal:
    """The journal of one durable run, as the nodes of the running process see it.

    `recorded` are the journal's entries from earlier processes of the run (latest per key);
    `hold` says what a held call does: "wait" for an approval in this process, or "pause" the
    run (the process can end; `resume` continues it). Writes go to `store` under the run's lease
    (`owner`); each carries a checkpoint made by `checkpoints` (set by the runner).
    """

    def __init__(
        self,
        store: RunStore,
        run_id: str,
        owner: str,
        *,
        recorded: Iterable[JournalEntry] = (),
        hold: str = "wait",
        heartbeat: float | None = None,
        fence: int | None = None,
        patience: float = DEFAULT_PATIENCE,
    ) -> None:
        if hold not in ("wait", "pause"):
            raise ValueError(f"hold must be 'wait' or 'pause', got {hold!r}")
        self.store = store
        self.run_id = run_id
        self.owner = owner
        self.hold = hold
        #: Seconds between lease renewals (`$JIANMU_HEARTBEAT`, else 3); the lease lasts two.
        self.heartbeat = heartbeat_seconds() if heartbeat is None else heartbeat
        #: The fencing token of our lease: every write is refused once the run was taken again.
        self.fence = fence
        #: Seconds a write waits for an unavailable store before the run stops.
        self.patience = patience
        self._recorded: dict[str, JournalEntry] = {entry.key: entry for entry in recorded}
        self._entries: dict[str, int] = {}
        self._running = 0
        self._pending: list[JournalEntry] = []  # outcomes not written yet (group commit)
        self._timer: asyncio.TimerHandle | None = None  # writes them when they are due
        self.pause_reason: str | None = None
        #: Set by the runner while it ends the run: cancelled steps then stay `running` (the
        #: run was cut off, not the step), so a resume sees them as in flight.
        self.closing = False
        #: Set when replay found that the run cannot go on as recorded (the tree changed).
        self.fault: str | None = None
        #: Makes the checkpoint of each write (set by the durable run, else by the runner).
        self.checkpoints: Checkpointer | None = None
        self.on_pause: Callable[[], None] = _noop
        #: Ends the run at once with an error (set by the runner: `RunContext.stop`).
        self.on_stop: Callable[[Exception], None] = _ignore
        #: Why the run stopped at once (its store failed, its lease was lost), else None.
        self.stopped: StoreFaultError | None = None

    # -- keys and records ------------------------------------------------------------------

    def next_key(self, node_key: str) -> str:
        """The key of the next entry of a node: `<node>#<n>`, n counting the node's entries."""
        number = self._entries.get(node_key, 0) + 1
        self._entries[node_key] = number
        return f"{node_key}#{number}"

    def recorded(self, key: str) -> JournalEntry | None:
        """The latest record of a step, from this or an earlier process of the run."""
        return self._recorded.get(key)

    def idempotency_key(self, key: str) -> str:
        """The idempotency key of a step: the same in every process of the run."""
        return f"{self.run_id}/{key}"

    def step_of(self, idempotency_key: str) -> str:
        """The step key whose `idempotency_key` this is."""
        return idempotency_key.removeprefix(f"{self.run_id}/")

    def record_outcome(self, *entries: JournalEntry) -> None:
        """Record how steps ended (`done`, `failed`, `cancelled`, an input read). The outcome
        of a call that may not run again (`effectful`) is written at once; the others
        with the next write (group commit), and at the latest once `GROUP_ENTRIES` wait or the
        oldest has waited `GROUP_SECONDS`. This process sees them at once (`recorded`)."""
        if self.stopped is not None:
            raise RunStopped(self.stopped)
        if any(entry.effectful for entry in entries):
            self.write(*entries)
            return
        pending = self._pending
        if not pending:
            self._write_later()
        pending.extend(entries)
        for entry in entries:
            self._recorded[entry.key] = entry
        if len(pending) >= GROUP_ENTRIES:
            self.write()

    def _write_later(self) -> None:
        """Have the outcomes that start waiting now written within `GROUP_SECONDS`: by a timer
        of the event loop (asyncio), else by the runner before it waits (`must_flush`)."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # another event loop, or none
            return
        self._timer = loop.call_later(GROUP_SECONDS, self._write_due)

    def _write_due(self) -> None:
        self._timer = None
        try:
            self.flush()
        except RunStopped:  # the run is stopped (and woken) by `stop`
            pass
        except Exception:  # they stay waiting: the next write tries them again, in a node
            logger.exception("writing the waiting outcomes of run %s failed", self.run_id)

    @property
    def must_flush(self) -> bool:
        """True when outcomes wait with no timer to write them: the runner writes them before
        it waits for work (off asyncio)."""
        return bool(self._pending) and self._timer is None

    def flush(self) -> None:
        """Write the outcomes that wait (with a checkpoint), if any; RunStopped as `write`."""
        if self._pending:
            self.write()

    def take_pending(self) -> list[JournalEntry]:
        """The outcomes that wait, handed to a caller that writes them itself (the run's end
        record); none are left waiting."""
        timer, self._timer = self._timer, None
        if timer is not None:
            timer.cancel()
        pending, self._pending = self._pending, []
        return pending

    def write(self, *entries: JournalEntry) -> None:
        """Append the outcomes that wait, then `entries`, and a checkpoint in one transaction of
        the store (mostly a delta over the previous checkpoint: `jianmu_bt.runtime.checkpoints`).

        A write the store refuses or cannot make (after waiting up to `patience` seconds for it
        to come back) is not the step's outcome: the run stops at once (RunStopped, raised
        through the node) and nothing runs after it.
        """
        if self.stopped is not None:  # another branch's write failed: nothing more is recorded
            raise RunStopped(self.stopped)
        waiting = len(self._pending)  # taken off only once written (or the run stopped)
        if waiting:
            entries = (*self._pending, *entries)
        checkpoints = self.checkpoints
        checkpoint, delta = checkpoints.next() if checkpoints is not None else (None, False)
        store, run_id, owner, fence = self.store, self.run_id, self.owner, self.fence

        def attempt() -> int:
            nonlocal checkpoint, delta
            try:
                return store.append(
                    run_id, owner, entries, checkpoint=checkpoint, fence=fence, delta=delta
                )
            except StoreUnavailableError:
                if checkpoints is not None and delta:  # it may have been committed: a retry
                    checkpoint, delta = checkpoints.whole(), False  # must not apply it twice
                raise

        try:
            patiently(attempt, self.patience)
            if waiting:
                self.take_pending()
        except LeaseLostError as exc:  # another process drives the run now: record nothing
            lost = f"run {run_id} stopped: it lost its lease: {exc}"
            raise RunStopped(self.stop(lost, lease_lost=True)) from None
        except StoreError as exc:
            raise RunStopped(
                self.stop(f"run {run_id} stopped: its run store failed to record a step: {exc}")
            ) from None
        for entry in entries:
            self._recorded[entry.key] = entry

    def stop(self, reason: str, *, lease_lost: bool = False) -> StoreFaultError:
        """Stop the run at once for `reason` (its store failed, or its lease was lost): no
        further write, no further step; the runner halts the nodes and raises the returned
        error."""
        if self.stopped is None:
            advice = (
                f"another process drives it now (`jianmu runs show {self.run_id}`)"
                if lease_lost
                else f"resume the run once the store is back (`jianmu resume {self.run_id}`)"
            )
            self.stopped = StoreFaultError(
                f"{reason}; nothing ran after it: {advice}", run_id=self.run_id
            )
            self.fault = self.fault or reason
            self.closing = True  # the steps cut off stay `running`: in flight for a resume
            self.on_stop(self.stopped)
        return self.stopped

    @property
    def lease_seconds(self) -> float:
        """How long the lease lasts from each renewal: two heartbeats."""
        return 2 * self.heartbeat

    def renew(self) -> bool:
        """Renew the lease (from the heartbeat's thread); False when the run was stopped because
        another process took it. An unavailable store is tried again at the next beat: the
        fencing token keeps a lease that expired meanwhile ours until someone takes it."""
        try:
            self.store.renew_lease(self.run_id, self.owner, self.lease_seconds, fence=self.fence)
        except StoreUnavailableError:
            return True
        except StoreError as exc:  # taken over, or the run is gone
            self.stop(f"run {self.run_id} stopped: it lost its lease: {exc}", lease_lost=True)
            return False
        return True

    def keep_lease(self) -> Heartbeat:
        """The heartbeat that renews the lease while the run lives (the runner enters it around
        the run): a lease that another process took stops the run at once without recording
        anything."""
        return Heartbeat(self.owner, self.heartbeat, self.renew)

    # -- calls in flight and pausing -------------------------------------------------------

    def started(self, count: int = 1) -> None:
        """`count` calls start now (recorded `running` when they may have side effects)."""
        self._running += count

    def ended(self, count: int = 1) -> None:
        """`count` calls that `started` have ended (recorded, or abandoned by a halt)."""
        self._running -= count

    @property
    def running(self) -> int:
        """How many recorded calls are running now."""
        return self._running

    @property
    def pausing(self) -> bool:
        """True once the run was asked to pause: no new call may start."""
        return self.pause_reason is not None

    def request_pause(self, reason: str) -> None:
        """Ask the runner to pause the run once the calls in flight have ended."""
        if self.pause_reason is None:
            self.pause_reason = reason
        self.on_pause()

    def mismatch(self, message: str) -> JournalMismatchError:
        """Replay found a step that differs from its record: stop the run without recording an
        outcome (it stays resumable) and return the error for the node to raise."""
        self.fault = self.fault or message
        self.request_pause(message)
        return JournalMismatchError(message)

    @property
    def ready_to_pause(self) -> bool:
        """A pause was asked for and no recorded call is running any more."""
        return self.pause_reason is not None and self._running <= 0

    def cancelled(self, *entries: JournalEntry) -> None:
        """Record that the tree cancelled steps (unless the whole run is being cut off or was
        stopped): outcomes, written with the next write.

        Called while a cancellation propagates: a store error is logged, never raised over it.
        """
        if self.closing or self.stopped is not None or not entries:
            return
        try:
            self.record_outcome(*entries)
        except Exception:
            logger.exception("recording cancelled steps of run %s failed", self.run_id)

    async def wait_for_halt(self) -> None:
        """Where a step that may not start waits while the run pauses: until the halt."""
        await anyio.sleep_forever()


def _noop() -> None:
    return None


def _ignore(error: Exception) -> None:
    return None
