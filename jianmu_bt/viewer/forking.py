""" "Fork from here": a new run of a durable run, from one of its checkpoints, made from the page.

The new run is only recorded (paused, its parent the run and checkpoint, the journal up to that
checkpoint copied by the store), not run: `jianmu resume NEW_ID` continues it, where a terminal
and the run's own providers are. The store is opened for the fork and closed again, so the
server's thread never shares a connection with the thread that opened the store first.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from jianmu_bt.runtime.durable_driver import forked_record
from jianmu_bt.store import StoreError, open_store


class ForkError(ValueError):
    """The fork could not be made (unknown checkpoint, store error); the message says why."""


def fork_run(location: str | Path, run_id: str, seq: int) -> str:
    """Record a new paused run forked from checkpoint `seq` of `run_id`; returns its id."""
    store = open_store(location, create=False)
    try:
        new = forked_record(store.get_run(run_id))
        store.fork(run_id, seq, new)
    except StoreError as exc:
        raise ForkError(str(exc)) from None
    finally:
        store.close()
    return new.run_id


def forker(location: str | Path, run_id: str) -> Callable[[int], str]:
    """`fork(seq)` for one run of the store at `location` (what a history source offers)."""
    return lambda seq: fork_run(location, run_id, seq)
