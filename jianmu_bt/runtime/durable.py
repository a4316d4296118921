"""Durable runs of a tree: record a run in a run store, resume it, fork it.

`run(store=...)`, `resume(...)` and `fork(...)` of every tree (`DurableDriver`) use `DurableRun`:
it writes the run's record and first checkpoint (its initial state), takes the run's lease,
gives the runner a RunJournal, and after the run records how it ended (`succeeded`, `failed` or
`paused`) and lets the lease go. A resume checks the tree's digest, applies the reviewers'
decisions to the journal, puts the state back to the run's initial state and replays the run
against its journal (see `jianmu_bt.runtime.journal`).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Protocol

from jianmu_bt.runtime.checkpoints import Checkpointer
from jianmu_bt.runtime.decisions import DecisionError, Decisions, decision_rows
from jianmu_bt.runtime.journal import WAITING_CALL, RunJournal, StoreFaultError
from jianmu_bt.runtime.lease import (
    heartbeat_seconds,
    mark_ended,
    mark_live,
    new_lease_owner,
    owner_is_dead,
)
from jianmu_bt.runtime.outside import WAITING, OutsideValueError, supplied_rows
from jianmu_bt.runtime.results import RunResult
from jianmu_bt.runtime.runner import TreeRunner
from jianmu_bt.runtime.state import StateManager
from jianmu_bt.store import (
    JournalEntry,
    LeaseError,
    LeaseLostError,
    RunRecord,
    RunStore,
    StoreError,
    default_patience,
    open_store,
    patiently,
)
from jianmu_bt.tools import Tool


class DurableRunError(ValueError):
    """A durable run cannot start or continue (the message says why, on one line)."""


class DurableTree(Protocol):
    """What a durable run uses of a tree (a YAML `Tree`, a `PythonTree`): its `name`,
    `run_source` (where a later process finds it) and `digest` (recorded with the run: a resume
    refuses a changed tree), its `state` (put back to the run's initial state on resume), its
    `runner` (whose context gets the run's id and journal) and its `guards` (checkpointed)."""

    @property
    def name(self) -> str: ...
    @property
    def run_source(self) -> str: ...
    @property
    def digest(self) -> str: ...
    @property
    def state(self) -> StateManager: ...
    @property
    def runner(self) -> TreeRunner: ...
    @property
    def guards(self) -> list[Any]: ...
    def tool_named(self, name: str) -> Tool | None: ...


def as_store(store: RunStore | str | Path, *, create: bool = True) -> RunStore:
    """A RunStore, or one opened from a path or PostgreSQL URL."""
    return store if isinstance(store, RunStore) else open_store(store, create=create)


class DurableRun:
    """One process's part of a durable run of `tree` in `store`."""

    def __init__(self, tree: DurableTree, store: RunStore, run_id: str, hold: str = "wait") -> None:
        self.tree = tree
        self.store = store
        self.run_id = run_id
        self.hold = hold
        self.owner = new_lease_owner()
        #: Seconds between lease renewals; the lease lasts two of them.
        self.heartbeat = heartbeat_seconds()
        #: The fencing token of our lease (from the store, when it is taken).
        self.fence: int | None = None
        self.journal: RunJournal | None = None
        #: Makes the run's checkpoints (whole now and then, deltas in between) once the run is
        #: ours: it watches the tree's state until the run's part here is over.
        self.checkpoints: Checkpointer | None = None
        self.previous_status = "running"
        #: Seconds a write waits for an unavailable store before the run stops.
        self.patience = default_patience()

    # -- starting --------------------------------------------------------------------------

    def start(self, inputs: dict[str, Any]) -> None:
        """Record a new run (its inputs, its initial state as checkpoint 1) and take its lease."""
        tree, now = self.tree, time.time()
        record = RunRecord(
            run_id=self.run_id,
            tree=tree.name,
            status="running",
            started=now,
            updated=now,
            tree_path=tree.run_source,
            tree_digest=tree.digest,
            inputs=inputs,
        )
        mark_live(self.owner)  # until finish/abandon: no other run of this process takes it
        checkpoints = self._watch()
        try:
            created = self.store.create_run(
                record, checkpoints.whole(), owner=self.owner, lease_seconds=2 * self.heartbeat
            )
        except BaseException:
            self._ended()
            raise
        self.fence = created.lease_token
        self._attach(())

    def resume(self, decisions: Decisions | None = None) -> None:
        """Take the lease of a paused (or stopped) run, record the decisions, set up replay."""
        run = self.store.get_run(self.run_id)
        self.previous_status = run.status
        if run.status in ("succeeded", "failed"):
            raise DurableRunError(f"run {self.run_id} has already {run.status}; nothing to resume")
        if run.tree_digest and run.tree_digest != self.tree.digest:
            raise DurableRunError(
                f"the tree changed since run {self.run_id} began ({run.tree_path or run.tree}: "
                f"digest {self.tree.digest[:12]}, the run's is {run.tree_digest[:12]}); resume it "
                "with the tree as it was, or start a new run"
            )
        decisions = decisions or Decisions()
        self._decisions(decisions)  # refused before anything is written
        steal = run.lease_owner if owner_is_dead(run.lease_owner) else None
        mark_live(self.owner)
        try:
            taken = self.store.acquire_lease(
                self.run_id, self.owner, 2 * self.heartbeat, steal_from=steal
            )
        except LeaseError as exc:
            self._ended()
            raise DurableRunError(
                f"run {self.run_id} is being run by another process: {exc}"
            ) from None
        self.fence = taken.lease_token
        self._watch()
        try:
            rows = self._decisions(decisions)  # as the journal is now, ours
            if rows:
                self.store.append(self.run_id, self.owner, rows, fence=self.fence)
            first = self.store.checkpoint(self.run_id, 1)  # the initial state
            latest = self.store.latest_checkpoint(self.run_id)
            self.tree.state.restore(first.data.get("state") or {})
            saved = latest.data.get("guards") if latest is not None else None
            guards = self.tree.guards
            if isinstance(saved, list) and len(saved) == len(guards):
                for guard, snapshot in zip(guards, saved, strict=True):
                    guard.restore(snapshot)
            self.store.append(
                self.run_id, self.owner, status="running", reason="", fence=self.fence
            )
            self._attach(self.store.journal(self.run_id))
        except BaseException:
            self._release()
            raise

    def _decisions(self, decisions: Decisions) -> list[JournalEntry]:
        """The journal rows of the reviewers' decisions on held and in-doubt calls (bound to
        their arguments); DurableRunError for a call that does not wait or a conflict."""
        if not decisions:
            return []
        journal = self.store.journal(self.run_id)
        try:
            supplied = supplied_rows(
                self.run_id, journal, decisions.answers, decisions.results, decisions.by
            )
        except OutsideValueError as exc:
            raise DurableRunError(str(exc)) from None
        if not (decisions.approve or decisions.deny):
            return supplied
        waiting = [e for e in journal if e.status in WAITING_CALL]
        approved = {
            e.key: e.result
            for e in self.store.journal_log(self.run_id)
            if e.status == "approved" and any(w.key == e.key for w in waiting)
        }
        try:
            rows = decision_rows(self.run_id, waiting, decisions, self.tree.tool_named, approved)
        except DecisionError as exc:
            raise DurableRunError(str(exc)) from None
        return rows + supplied

    def _attach(self, recorded: Iterable[JournalEntry]) -> None:
        self.journal = RunJournal(
            self.store,
            self.run_id,
            self.owner,
            recorded=recorded,
            hold=self.hold,
            heartbeat=self.heartbeat,
            fence=self.fence,
            patience=self.patience,
        )
        context = self.tree.runner.context
        context.run_id = self.run_id
        context.journal = self.journal
        self.journal.checkpoints = self.checkpoints

    # -- ending ----------------------------------------------------------------------------

    def finish(self, result: RunResult) -> RunResult:
        """Record how the run ended (unless replay found the tree changed) and free the lease."""
        journal = self.journal
        self.tree.runner.context.journal = None
        # The outcomes still waiting (group commit) go with the run's last write.
        outcomes = journal.take_pending() if journal is not None else []
        released = False
        try:
            if journal is not None and journal.fault:
                # Replay could not go on as recorded, or the lease was lost: the run stays as
                # it was, resumable (a lost lease may refuse even this write).
                with contextlib.suppress(StoreError):
                    self.store.append(
                        self.run_id,
                        self.owner,
                        outcomes,
                        checkpoint=self._whole() if outcomes else None,
                        status=self.previous_status,
                        fence=self.fence,
                    )
                raise DurableRunError(journal.fault)
            self._record_end(result, outcomes)
            released = True
        finally:
            self._ended()
            if not released:
                self._release()
        result.run_id = self.run_id
        return result

    def _record_end(self, result: RunResult, outcomes: list[JournalEntry]) -> None:
        """The run's end, the step `outcomes` still to write and the lease's release in one
        transaction, waiting out an unavailable store; StoreFaultError when it cannot be
        recorded."""
        store, run_id, owner = self.store, self.run_id, self.owner
        assert self.checkpoints is not None  # the run is ours: its checkpoints are made
        checkpoint = self.checkpoints.whole()
        try:
            patiently(
                lambda: store.append(
                    run_id,
                    owner,
                    outcomes,
                    checkpoint=checkpoint,
                    status=result.run_status,
                    reason=result.reason,
                    release=True,
                    fence=self.fence,
                ),
                self.patience,
            )
        except StoreError as exc:
            # A try that committed before its connection was cut (a retry then finds the lease
            # gone): the end is recorded after all, if the store answers.
            with contextlib.suppress(StoreError):
                run = store.get_run(run_id)
                if run.status == result.run_status and run.lease_owner is None:
                    return
            why = "its lease was lost" if isinstance(exc, LeaseLostError) else str(exc)
            raise self._fault(result, why) from None

    def _fault(self, result: RunResult, why: str) -> StoreFaultError:
        return StoreFaultError(
            f"run {self.run_id} {result.run_status}, but its run store failed to record that "
            f"({why}); `jianmu resume {self.run_id}` records it once the store is back (its "
            "finished calls are not run again)",
            run_id=self.run_id,
        )

    def _release(self) -> None:
        """Free the lease; a store that is unavailable lets it expire instead."""
        self._ended()
        with contextlib.suppress(StoreError):
            self.store.release_lease(self.run_id, self.owner)

    def _whole(self) -> dict[str, Any] | None:
        """A whole checkpoint of the run now, while its checkpoints are still made."""
        return self.checkpoints.whole() if self.checkpoints is not None else None

    def _watch(self) -> Checkpointer:
        """Start making the run's checkpoints (watching the tree's state from now on)."""
        self.checkpoints = Checkpointer(self.tree.runner, lambda: self.tree.guards)
        return self.checkpoints

    def _ended(self) -> None:
        """This run's part in this process is over: its owner holds nothing, its checkpoints
        stop watching the state."""
        mark_ended(self.owner)
        if self.checkpoints is not None:
            self.checkpoints.close()
            self.checkpoints = None

    def abandon(self) -> None:
        """The run raised (or its store failed) before it ended: free the lease if the store
        allows (the run stays resumable), after the step outcomes still waiting to be written."""
        self.tree.runner.context.journal = None
        journal = self.journal
        outcomes = journal.take_pending() if journal is not None else []
        if outcomes:  # with the state and guard counters they go with (a resume restores them)
            with contextlib.suppress(StoreError):
                self.store.append(
                    self.run_id, self.owner, outcomes, checkpoint=self._whole(), fence=self.fence
                )
        self._release()

    def waiting_calls(self) -> list[JournalEntry]:
        """The run's steps that wait: calls held or in doubt (for a decision), questions and
        external calls (for a value from outside), in journal order."""
        waits = (*WAITING_CALL, WAITING)
        return [e for e in self.store.journal(self.run_id) if e.status in waits]
