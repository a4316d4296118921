"""Where a batch's runs execute: a local process pool, or Ray tasks.

Both take jobs (`submit(line, run_id, values)`) and hand back finished results
(`finished(timeout)`), as plain dicts from `worker.run_line`; the driver keeps a bounded number
of jobs in flight. A pool's worker process loads the tree once (its initializer). When a pool
worker dies, the pool is replaced and the jobs it held are submitted again: their runs resume
from the store. Ray does the same by itself: a task whose worker died runs again (`max_retries`)
on another worker, and `run_line` resumes the run it finds `running`.
"""

from __future__ import annotations

import contextlib
import ctypes
import multiprocessing
import os
import signal
import sys
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Protocol

from jianmu_bt.batch.worker import WorkerSpec, init_worker, run_line, run_line_on_ray
from jianmu_bt.sandbox.ray_runner import require_ray, start_local_ray

Job = tuple[int, str, dict[str, Any]]
#: How often a job lost with a dead worker is submitted again before it is reported as an error.
MAX_ATTEMPTS = 3


class Backend(Protocol):
    """Runs jobs somewhere; results come back as `worker.run_line` makes them."""

    def submit(self, line: int, run_id: str, values: dict[str, Any]) -> None:
        """Start one run."""
        ...

    def finished(self, timeout: float) -> list[dict[str, Any]]:
        """The results that finished, waiting up to `timeout` seconds for the first one."""
        ...

    @property
    def in_flight(self) -> int:
        """How many submitted jobs have not finished."""
        ...

    @property
    def capacity(self) -> int:
        """How many runs go on at once (the driver keeps twice as many submitted)."""
        ...

    def close(self, cancel: bool = False) -> None:
        """Stop the workers (`cancel`: without waiting for the jobs in flight)."""
        ...


def lost(job: Job, why: str) -> dict[str, Any]:
    """The result of a job whose worker died too often."""
    line, run_id, _ = job
    return {"line": line, "run_id": run_id, "status": "error", "error": why}


_started: Any = None  # in a pool worker: the queue where each job says which process runs it


def die_with(parent: int) -> None:
    """End this process when `parent` (the batch's driver) ends, however it ends.

    On Linux the kernel sends SIGKILL when the parent dies (`prctl(PR_SET_PDEATHSIG)`); a parent
    already gone (it died while this process started) ends this one now. Elsewhere nothing."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:
            os._exit(1)


#: prctl's option for the signal a process gets when its parent dies (linux/prctl.h).
PR_SET_PDEATHSIG = 1


def init_pool_worker(spec: WorkerSpec, started: Any, driver: int | None = None) -> None:
    """A pool worker's initializer: die with the driver, keep the queue of started jobs,
    load the tree."""
    global _started
    if driver is not None:
        die_with(driver)
    _started = started
    init_worker(spec)


def run_pool_line(spec: WorkerSpec, line: int, run_id: str, values: dict[str, Any]) -> Any:
    """`run_line` in a pool worker, first telling the driver which process runs `line`."""
    if _started is not None:
        _started.put((os.getpid(), line))
    return run_line(spec, line, run_id, values)


class PoolBackend:
    """A process pool of `workers` fresh (spawned) processes, each loading the tree once.

    A worker that dies takes the whole pool down (ProcessPoolExecutor), and every job in flight
    with it. Only the job whose process died is charged an attempt: the pool's other processes
    are ended with SIGTERM by the pool itself, so the one that ended otherwise (killed, crashed,
    exited) is the cause, and the job it ran is known from what each job reports when it starts.
    A breakage whose cause is not known is charged to no job; after `MAX_ATTEMPTS` of them in
    one batch, the jobs in flight at the next one are reported as errors.
    """

    def __init__(self, spec: WorkerSpec, workers: int) -> None:
        self.spec = spec
        self.workers = workers
        self._jobs: dict[Future[dict[str, Any]], Job] = {}
        self._attempts: dict[int, int] = {}
        self._unknown_breaks = 0
        context = multiprocessing.get_context("spawn")
        self._started = context.SimpleQueue()
        self._ran_by: dict[int, int] = {}  # pid -> the line it ran last
        self._pool = self._new_pool()

    @property
    def capacity(self) -> int:
        """How many runs go on at once."""
        return self.workers

    def _new_pool(self) -> ProcessPoolExecutor:
        # spawn, not fork: a forked child would share the parent's loaded tree, threads and locks
        return ProcessPoolExecutor(
            max_workers=self.workers,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=init_pool_worker,
            initargs=(self.spec, self._started, os.getpid()),
        )

    @property
    def in_flight(self) -> int:
        """How many submitted jobs have not finished."""
        return len(self._jobs)

    def submit(self, line: int, run_id: str, values: dict[str, Any]) -> None:
        """Start one run in the pool."""
        future = self._pool.submit(run_pool_line, self.spec, line, run_id, values)
        self._jobs[future] = (line, run_id, values)

    def finished(self, timeout: float) -> list[dict[str, Any]]:
        """The results that finished; a dead worker's jobs are run again in a new pool."""
        if not self._jobs:
            return []
        done, _ = wait(list(self._jobs), timeout=timeout, return_when=FIRST_COMPLETED)
        self._note_started()  # read as they come: a full pipe would stop every worker
        results: list[dict[str, Any]] = []
        broken = False
        for future in done:
            job = self._jobs.pop(future)
            try:
                results.append(future.result())
            except BrokenProcessPool:
                broken = True
                self._jobs[future] = job  # re-run below, with the others in flight
            except Exception as exc:
                results.append(lost(job, f"the worker failed: {type(exc).__name__}: {exc}"))
        if broken or (not done and self._worker_died()):
            results.extend(self._restart())
        return results

    def _worker_died(self) -> bool:
        """Whether a pool process ended. The pool itself can miss it: it may wait without the
        sentinel of a process it started just after its last wake-up (CPython 3.11), and then
        never notices that process die."""
        processes = (getattr(self._pool, "_processes", None) or {}).values()
        return any(process.exitcode is not None for process in list(processes))

    def _restart(self) -> list[dict[str, Any]]:
        """A worker died and took the pool down: a new pool runs the jobs in flight again."""
        jobs = list(self._jobs.values())
        self._jobs.clear()
        processes = list((getattr(self._pool, "_processes", None) or {}).values())
        self._pool.shutdown(wait=True, cancel_futures=True)  # the pool ends the others first
        culprit = self._culprit(processes)
        if culprit is None:
            self._unknown_breaks += 1
        else:
            self._attempts[culprit] = self._attempts.get(culprit, 0) + 1
        self._pool = self._new_pool()
        failed = []
        for job in jobs:
            if self._attempts.get(job[0], 0) >= MAX_ATTEMPTS:
                failed.append(lost(job, f"its worker process died {MAX_ATTEMPTS} times"))
            elif self._unknown_breaks > MAX_ATTEMPTS:
                failed.append(
                    lost(job, f"the worker pool broke {self._unknown_breaks} times (cause unknown)")
                )
            else:
                self.submit(*job)
        return failed

    def _note_started(self) -> None:
        """Read which process started which line (each job says so in a pipe, whose buffer
        holds a few thousand of these: unread, the workers would block on it)."""
        while not self._started.empty():
            pid, line = self._started.get()
            self._ran_by[pid] = line

    def _culprit(self, processes: list[Any]) -> int | None:
        """The line whose process died on its own (the pool SIGTERMs the rest), if known."""
        self._note_started()
        dead = [p.pid for p in processes if p.exitcode not in (None, 0, -signal.SIGTERM)]
        ran = self._ran_by.copy()
        self._ran_by.clear()  # the next pool's processes have other pids
        return ran.get(dead[0]) if len(dead) == 1 else None

    def close(self, cancel: bool = False) -> None:
        """Shut the pool down; `cancel` drops queued jobs and kills the busy workers."""
        if cancel:
            # Interrupted: a killed run stays `running` in the store and `--resume` continues it.
            processes = list(getattr(self._pool, "_processes", {}).values())
            self._pool.shutdown(wait=False, cancel_futures=True)
            for process in processes:
                with contextlib.suppress(Exception):
                    process.kill()
            for process in processes:
                with contextlib.suppress(Exception):
                    process.join(5)
        self._pool.shutdown(wait=True, cancel_futures=cancel)
        self._jobs.clear()


class RayBackend:
    """Each run is a Ray task (retried on another worker when its worker dies).

    With no `address` and no Ray connected in this process, a local Ray with `workers` CPUs is
    started and shut down at `close()`; with an address, the driver connects to that cluster.
    Without `workers`, a cluster's (or an already connected Ray's) CPUs say how many runs go on
    at once. A run task's main thread waits for the run's `runner: ray` tool calls, so Ray lends
    the run's CPU to them (`run_line_on_ray`): a full cluster cannot deadlock on its own tools.
    """

    def __init__(
        self, spec: WorkerSpec, workers: int | None = None, address: str | None = None
    ) -> None:
        ray = self.ray = require_ray()
        self.spec = spec
        self._stop: Any = None
        if not ray.is_initialized():
            if address:
                ray.init(address=address, logging_level="WARNING", log_to_driver=False)
                self._stop = ray.shutdown  # disconnects this driver; the cluster stays
            else:
                self._stop = start_local_ray(workers)
        cpus = int(ray.cluster_resources().get("CPU", 0))
        self.workers = workers or max(cpus, 1)
        self._remote = ray.remote(run_line_on_ray).options(num_cpus=1, max_retries=MAX_ATTEMPTS)
        self._refs: dict[Any, Job] = {}

    @property
    def capacity(self) -> int:
        """How many runs go on at once: `workers`, or the CPUs of the Ray it uses."""
        return self.workers

    @property
    def in_flight(self) -> int:
        """How many submitted tasks have not finished."""
        return len(self._refs)

    def submit(self, line: int, run_id: str, values: dict[str, Any]) -> None:
        """Start one run as a Ray task."""
        self._refs[self._remote.remote(self.spec, line, run_id, values)] = (line, run_id, values)

    def finished(self, timeout: float) -> list[dict[str, Any]]:
        """The results of the tasks that finished (a task whose retries ran out: an error)."""
        if not self._refs:
            return []
        ray = self.ray
        ready, _ = ray.wait(list(self._refs), num_returns=1, timeout=timeout)
        if ready:
            ready, _ = ray.wait(list(self._refs), num_returns=len(self._refs), timeout=0)
        results = []
        for ref in ready:
            job = self._refs.pop(ref)
            try:
                results.append(ray.get(ref))
            except ray.exceptions.RayError as exc:
                text = str(exc).strip().splitlines()
                why = f"{type(exc).__name__}: {text[0] if text else ''}"[:500]
                results.append(
                    lost(job, f"the Ray task failed after {MAX_ATTEMPTS} retries: {why}")
                )
        return results

    def close(self, cancel: bool = False) -> None:
        """Cancel what is in flight when asked, then shut down the Ray this backend started."""
        if cancel:
            for ref in self._refs:
                with contextlib.suppress(Exception):
                    self.ray.cancel(ref, force=True)
        self._refs.clear()
        stop, self._stop = self._stop, None
        if stop is not None:
            stop()
