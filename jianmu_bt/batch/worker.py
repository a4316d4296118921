"""One run of a batch, in a worker process (a process pool's worker or a Ray worker).

A worker loads the tree once (per process, cached by file and digest) and opens the run store
once; `run_line` then runs one input under its batch run id, recording the run in the store:

- no run with that id yet: a new durable run (held calls pause it, `hold="pause"`);
- the run ended or paused: nothing runs, its recorded outcome is returned;
- the run is `running`: its process died (a killed worker, an interrupted batch), so it is
  resumed from its journal; finished calls are not run again. When another live process holds
  its lease, the worker waits for the lease to expire first (a dead host's lease lapses).

A tree with a scripted LLM is loaded again for each run (its replies would run out otherwise).
The result is a plain JSON-ready dict (`line`, `run_id`, `status`, `state`, `reason`, `error`).
A tree that cannot be loaded on the worker (a tool module that does not import there) gives one
`error` result per run, never a hang; the next run tries loading it again. The trees and stores
a worker keeps are closed when its process ends.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import multiprocessing.util
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jianmu_bt.llm.scripted import ScriptedProvider
from jianmu_bt.loader import TreeLoadError, load_tree
from jianmu_bt.runtime.durable import DurableRunError
from jianmu_bt.runtime.lease import heartbeat_seconds, owner_is_dead
from jianmu_bt.sandbox.ray_runner import require_ray
from jianmu_bt.sandbox.ray_waits import run_with_released_cpus
from jianmu_bt.store import RunExistsError, RunNotFoundError, RunStore, StoreError, open_store


@dataclass(frozen=True)
class WorkerSpec:
    """What every worker needs to run the batch's lines (small and picklable)."""

    tree_path: str
    tree_digest: str
    store: str
    timeout: float | None = None
    lease_wait: float = field(default_factory=lambda: 2 * heartbeat_seconds() + 5.0)


_trees: dict[tuple[str, str], Any] = {}
_stores: dict[str, RunStore] = {}
_registered = False


def load_worker_tree(spec: WorkerSpec) -> Any:
    """The tree of `spec` for this process (loaded once), or the reason it cannot load (a str).

    A failure is not kept: the next run tries again (a module fixed or installed meanwhile)."""
    key = (spec.tree_path, spec.tree_digest)
    if key in _trees:
        return _trees[key]
    try:
        tree = load_tree(Path(spec.tree_path))
    except TreeLoadError as exc:
        first = [str(d) for d in exc.diagnostics if d.is_error][:3]
        return f"cannot load the tree on this worker: {'; '.join(first) or exc}"
    except Exception as exc:
        return f"cannot load the tree on this worker: {type(exc).__name__}: {exc}"
    if tree.digest != spec.tree_digest:
        tree.close()
        return (
            f"the tree file {spec.tree_path} on this worker differs from the one the "
            "batch began with (another digest)"
        )
    _close_at_exit()
    _trees[key] = tree
    return tree


def init_worker(spec: WorkerSpec) -> None:
    """A process pool's initializer: load the tree once (a failure is reported by each run)."""
    load_worker_tree(spec)


def close_worker() -> None:
    """Close the trees and stores this process keeps (at its exit; again is harmless)."""
    trees, stores = list(_trees.values()), list(_stores.values())
    _trees.clear()
    _stores.clear()
    for item in [*trees, *stores]:
        with contextlib.suppress(Exception):
            item.close()


def _close_at_exit() -> None:
    global _registered
    if _registered:
        return
    _registered = True
    # A pool worker ends with os._exit after multiprocessing's finalizers (atexit does not run
    # there); a Ray worker or any other process runs atexit.
    atexit.register(close_worker)
    multiprocessing.util.Finalize(None, close_worker, exitpriority=10)


def _store(spec: WorkerSpec) -> RunStore:
    store = _stores.get(spec.store)
    if store is None:
        _close_at_exit()
        # The driver created the store; a worker that cannot find it must not make its own.
        store = _stores[spec.store] = open_store(spec.store, create=False)
    return store


def run_line_on_ray(
    spec: WorkerSpec, line: int, run_id: str, values: dict[str, Any]
) -> dict[str, Any]:
    """`run_line` as a Ray task: the run goes on in a thread while the task's main thread waits
    for its `runner: ray` tool calls, so Ray lends the run's CPU to those calls meanwhile."""
    return run_with_released_cpus(require_ray(), run_line, spec, line, run_id, values)


def run_line(spec: WorkerSpec, line: int, run_id: str, values: dict[str, Any]) -> dict[str, Any]:
    """Run (or resume, or report) the batch's run of one input line; a JSON-ready result."""
    base: dict[str, Any] = {"line": line, "run_id": run_id}
    tree = load_worker_tree(spec)
    if isinstance(tree, str):
        return {**base, "status": "error", "error": tree}
    try:
        store = _store(spec)
        if not _scripted(tree):
            return {**base, **_run(spec, tree, store, run_id, values)}
        with load_tree(Path(spec.tree_path)) as fresh:
            return {**base, **_run(spec, fresh, store, run_id, values)}
    except (StoreError, DurableRunError) as exc:
        return {**base, "status": "error", "error": str(exc)}
    except Exception as exc:  # a bug or a broken tool: this run fails, the batch goes on
        return {**base, "status": "error", "error": f"{type(exc).__name__}: {exc}"}


def _scripted(tree: Any) -> bool:
    """Whether the tree has a scripted LLM: its replies are used up across the runs of one
    loaded tree, so each run gets a freshly loaded tree (a real model has no such state)."""
    return any(isinstance(owned, ScriptedProvider) for owned in tree.runner.owned)


def _run(
    spec: WorkerSpec, tree: Any, store: RunStore, run_id: str, values: dict[str, Any]
) -> dict[str, Any]:
    try:
        record = store.get_run(run_id)
    except RunNotFoundError:
        try:
            result = tree.run(
                values, store=store, run_id=run_id, hold="pause", timeout=spec.timeout
            )
        except RunExistsError:  # another process created it just now: treat it as begun
            record = store.get_run(run_id)
        else:
            return outcome(result.run_status, result.state, result.reason)
    if record.status != "running":
        return recorded(store, run_id)
    return _resume(spec, tree, store, run_id)


def _resume(spec: WorkerSpec, tree: Any, store: RunStore, run_id: str) -> dict[str, Any]:
    """Resume a run whose process stopped, waiting while a live process still holds its lease."""
    deadline = time.monotonic() + spec.lease_wait
    while True:
        try:
            result = tree.resume(run_id, store=store, hold="pause", timeout=spec.timeout)
        except DurableRunError:
            record = store.get_run(run_id)
            if record.status != "running":
                return recorded(store, run_id)  # the other process finished it
            if owner_is_dead(record.lease_owner) or time.monotonic() >= deadline:
                raise
            time.sleep(0.5)  # a live holder (or a dead one on another host) keeps the lease
            continue
        return outcome(result.run_status, result.state, result.reason)


def recorded(store: RunStore, run_id: str) -> dict[str, Any]:
    """The outcome a run recorded (its status, and the state of its latest checkpoint)."""
    record = store.get_run(run_id)
    latest = store.latest_checkpoint(run_id)
    state = (latest.data.get("state") if latest is not None else None) or {}
    return outcome(record.status, state, record.reason)


def outcome(status: str, state: Any, reason: str) -> dict[str, Any]:
    """A result's `status`, JSON-ready `state`, and `reason` when the run did not succeed."""
    found: dict[str, Any] = {"status": status, "state": json.loads(json.dumps(state, default=str))}
    if status != "succeeded" and reason:
        found["reason"] = reason
    return found
