"""`run_batch`: one durable run of a tree per input line, on a process pool or on Ray.

```python
summary = run_batch("trees/quickstart.yaml", "inputs.jsonl", out=open("results.jsonl", "w"))
print(summary.counts, summary.paused)
```
Every run is recorded in the run store under a run id made from the batch id and the input's
line (`<batch id>-<line>`), so the store knows which inputs are done: `resume=True` reports the
runs that ended or paused from the store without running them again, and continues the runs
that were in flight when the batch stopped. Results are written to `out` as they finish, one
JSON object per line tagged with the input's line number.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from jianmu_bt.batch.backends import Backend, PoolBackend, RayBackend
from jianmu_bt.batch.inputs import InputChecker, count_inputs, read_inputs
from jianmu_bt.batch.progress import Progress
from jianmu_bt.batch.worker import WorkerSpec, recorded
from jianmu_bt.loader import load_tree
from jianmu_bt.sandbox.ray_resources import missing_resources, ray_requests
from jianmu_bt.sandbox.ray_runner import require_ray
from jianmu_bt.store import RunNotFoundError, RunStore, default_store, open_store

#: Statuses of runs that `resume` does not run again.
SETTLED = ("succeeded", "failed", "paused")
LOCAL_RAY = "local"


class BatchError(ValueError):
    """A batch cannot start (the message says why, on one line)."""


@dataclass
class BatchSummary:
    """How a batch went: counts by status, and the runs that wait for a decision."""

    batch_id: str
    store: str
    total: int = 0
    counts: dict[str, int] = field(default_factory=dict)
    paused: list[dict[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        """0: all runs succeeded; 1: a run failed or a line was bad; 3: none failed, some paused."""
        if self.counts.get("failed") or self.counts.get("invalid"):
            return 1
        return 3 if self.counts.get("paused") else 0


def batch_id_for(tree_path: Path, inputs_path: Path) -> str:
    """The default batch id: the same for the same tree file and inputs file (so `--resume`
    finds the runs), different for another file."""
    key = f"{tree_path.resolve()}\n{inputs_path.resolve()}"
    return "batch-" + hashlib.sha256(key.encode()).hexdigest()[:10]


def batch_run_id(batch_id: str, line: int) -> str:
    """The run id of the batch's run of input line `line`."""
    return f"{batch_id}-{line}"


def store_location(store: str | Path | None) -> str:
    """An absolute store location every worker can open (a PostgreSQL URL is kept as it is)."""
    if isinstance(store, str) and store.lower().startswith(("postgresql://", "postgres://")):
        return store
    store = store or default_store()
    if isinstance(store, str) and store.lower().startswith(("postgresql://", "postgres://")):
        return store  # named by $JIANMU_STORE
    return str(Path(store).expanduser().resolve())


def run_batch(
    tree_path: str | Path,
    inputs_path: str | Path,
    *,
    out: TextIO,
    progress: TextIO | None = None,
    workers: int | None = None,
    ray: str | None = None,
    store: str | Path | None = None,
    resume: bool = False,
    batch_id: str | None = None,
    timeout: float | None = None,
) -> BatchSummary:
    """Run the tree once per line of `inputs_path`; write each result to `out` as it finishes.

    `workers` processes (default: the CPU count) in a local pool, or Ray tasks when `ray` is
    given ("local": a local Ray started and shut down here; otherwise a cluster address, which
    needs a PostgreSQL store; `workers` defaults to the Ray's CPUs). The runs are recorded in
    `store` (default .jianmu/runs.db). A bad input line is reported (a result
    with status `invalid`) and the batch goes on. Raises BatchError when the batch cannot start,
    TreeLoadError for a broken tree file.
    """
    tree_file, inputs = Path(tree_path), Path(inputs_path)
    if not inputs.is_file():
        raise BatchError(f"{inputs}: no such inputs file")
    if workers is not None and workers < 1:
        raise BatchError(f"--workers must be at least 1, got {workers}")
    location = store_location(store)
    if ray is not None:
        require_ray()  # before anything runs: RayUnavailableError names the extra
        _refuse_sqlite_on_a_cluster(ray, location)
    with load_tree(tree_file) as tree:
        checker = InputChecker(tree)
        assert tree.path is not None
        spec = WorkerSpec(str(tree.path.resolve()), tree.digest, location, timeout)
        requests = ray_requests(list(tree.runner.owned))
    batch = batch_id or batch_id_for(tree_file, inputs)
    runs = open_store(spec.store)
    try:
        if not resume:
            _refuse_earlier_batch(inputs, checker, runs, batch)
    except BaseException:
        runs.close()
        raise
    total = count_inputs(inputs)
    summary = BatchSummary(batch, spec.store, total)
    meter = Progress(total, progress)

    def emit(result: dict[str, Any], from_store: bool = False) -> None:
        out.write(json.dumps(result, ensure_ascii=False, default=str) + "\n")
        out.flush()
        meter.add(result["status"], recorded=from_store)
        if result["status"] == "paused":
            summary.paused.append(result)
        why = result.get("error") or result.get("reason")
        if result["status"] in ("invalid", "error", "failed"):
            summary.problems.append(f"{inputs}:{result['line']}: {result['status']}: {why}")

    try:
        make = lambda: _backend(spec, workers, ray, requests)  # noqa: E731 - when needed
        _drive(inputs, checker, runs, batch, resume, emit, make, meter.start)
    finally:
        runs.close()
        meter.finish()
        summary.counts = {k: meter.counts[k] for k in ("done", "failed", "paused", "invalid")}
        summary.counts["skipped"] = meter.counts["skipped"]
    return summary


def _backend(
    spec: WorkerSpec,
    workers: int | None,
    ray: str | None,
    requests: list[tuple[str, dict[str, Any]]] | None = None,
) -> Backend:
    if ray is None:
        return PoolBackend(spec, workers or os.cpu_count() or 1)
    backend = RayBackend(spec, workers, None if ray in ("", LOCAL_RAY) else ray)
    available = backend.ray.cluster_resources()
    short = []
    for who, options in requests or []:
        why = missing_resources(available, options)
        if why:
            short.append(f"{who} asks for {why}")
    if short:  # its tasks would wait forever for resources no node has
        backend.close()
        raise BatchError(f"the batch cannot run on this Ray: {'; '.join(short)}")
    return backend


def _refuse_sqlite_on_a_cluster(ray: str, location: str) -> None:
    """BatchError for a Ray cluster with an SQLite store: each node would write its own file."""
    if location.startswith(("postgresql://", "postgres://")):
        return
    address = ray if ray not in ("", LOCAL_RAY) else ""
    if not address and not require_ray().is_initialized():
        address = os.environ.get("RAY_ADDRESS", "").strip()  # start_local_ray connects there
    if address:
        raise BatchError(
            f"--ray {address} runs on a Ray cluster, whose nodes cannot share the SQLite store "
            f"{location} (each would write its own file): use --store postgresql://..."
        )


def _drive(
    inputs: Path,
    checker: InputChecker,
    runs: RunStore,
    batch: str,
    resume: bool,
    emit: Callable[..., None],
    make_backend: Callable[[], Backend],
    started: Callable[[], None],
) -> None:
    """Read, check and submit the lines, keeping the workers busy (twice as many runs submitted
    as go on at once); emit results as they come."""
    backend: Backend | None = None
    window = 1
    try:
        for item in read_inputs(inputs, checker):
            run_id = batch_run_id(batch, item.line)
            base = {"line": item.line, "run_id": run_id}
            if item.values is None:
                emit({"line": item.line, "status": "invalid", "error": item.error})
                continue
            status = _recorded_status(runs, run_id)
            if status is not None and not resume:  # a run of another batch with this id
                emit({**base, "status": "error", "error": f"run {run_id} exists already"})
                continue
            if status is not None and not _same_line(checker, runs, run_id, item.values):
                why = f"line {item.line} changed since the batch began (run {run_id} has other "
                why += "inputs); use --batch-id for a new batch"
                emit({**base, "status": "error", "error": why})
                continue
            if status in SETTLED:
                emit({**base, **recorded(runs, run_id)}, from_store=True)
                continue
            if backend is None:
                backend = make_backend()
                window = 2 * backend.capacity
                started()
            backend.submit(item.line, run_id, item.values)
            while backend.in_flight >= window:
                for result in backend.finished(0.5):
                    emit(result)
        while backend is not None and backend.in_flight:
            for result in backend.finished(0.5):
                emit(result)
    except BaseException:
        if backend is not None:
            backend.close(cancel=True)
        raise
    if backend is not None:
        backend.close()


def _refuse_earlier_batch(inputs: Path, checker: InputChecker, runs: RunStore, batch: str) -> None:
    """BatchError when the store has a run of this batch already (the first input's run)."""
    first = next((item for item in read_inputs(inputs, checker) if item.values is not None), None)
    if first is None:
        return
    run_id = batch_run_id(batch, first.line)
    status = _recorded_status(runs, run_id)
    if status is not None:
        raise BatchError(
            f"batch {batch} already has runs in {runs.location} (run {run_id} {status}); "
            "pass --resume to continue it, or --batch-id for a new batch"
        )


def _same_line(checker: InputChecker, runs: RunStore, run_id: str, values: dict[str, Any]) -> bool:
    """Whether the recorded run `run_id` began from these values of its input line."""
    return checker.same_inputs(values, runs.get_run(run_id).inputs)


def _recorded_status(runs: RunStore, run_id: str) -> str | None:
    try:
        return runs.get_run(run_id).status
    except RunNotFoundError:
        return None
