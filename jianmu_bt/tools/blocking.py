"""Worker threads for blocking tool functions: `run_blocking(fn, *args)`.

A sync tool that may block (`blocking=True`, or a measured `blocking=None` tool until its calls
have shown they are quick: `jianmu_bt.tools.placement`) must not stall the event loop, so it runs
in a worker thread. `anyio.to_thread.run_sync` wakes one worker per call and the event loop once
per result; for a batch of quick calls those wake-ups cost more than the calls (each is a trip
through the OS scheduler). `BlockingPool` hands work over in batches instead:

- calls queue up without waking anyone while a worker is already on its way, and a worker that
  takes a call wakes one more only if calls are still waiting, so quick calls run back to back
  on one thread while calls that block still spread over as many threads as they need;
- results go back to the event loop in one wake-up for all that finished in the meantime.

One pool per event loop, `max_workers` threads at most (like anyio's default limiter, 40).
Lifetime: workers idle for `idle_timeout` seconds exit, and the pool closes when its event loop is
shut down by asyncio.run() or anyio.run() (tree runs included), so no thread outlives the loop.
A call cancelled while queued never starts; one cancelled while running is abandoned (its thread
finishes on its own; a sandbox runner stops work that must be killable). Under a non-asyncio
backend (trio) calls go to anyio's worker threads.

An abandoned call whose thread still runs stays observable as an `Overrun`
(`jianmu_bt.tools.overruns`): the cancelled caller
sees it on its CancelledError (`overrun_of`), and `Tool.execute` files it in the tool's
`Overruns`, which the tool's next call waits on, so that two calls of one tool never overlap.
Calls that are not abandoned pay nothing for this.

Functions run in a copy of the caller's context (contextvars), as with anyio. They are not
anyio worker threads: code that needs the event loop belongs in an async tool.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import contextvars
import threading
import weakref
from collections.abc import AsyncGenerator, Callable
from typing import Any, TypeVar

import anyio.to_thread

from jianmu_bt.tools.overruns import Overrun, _mark, _overrun_lock

T = TypeVar("T")

#: Threads per pool at most; a further call waits for a free thread.
DEFAULT_MAX_WORKERS = 40
#: Seconds an idle worker waits for work before it exits.
DEFAULT_IDLE_TIMEOUT = 10.0


class _Job:
    __slots__ = ("args", "context", "fn", "future")

    def __init__(
        self, future: asyncio.Future[Any], fn: Callable[..., Any], args: tuple[Any, ...]
    ) -> None:
        self.future = future
        self.context = contextvars.copy_context()
        self.fn = fn
        self.args = args


class BlockingPool:
    """Worker threads for one event loop, with batched hand-off and batched results."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        *,
        max_workers: int = DEFAULT_MAX_WORKERS,
        idle_timeout: float = DEFAULT_IDLE_TIMEOUT,
    ) -> None:
        if max_workers < 1:
            raise ValueError(f"max_workers must be at least 1, got {max_workers}")
        # A weak reference: the pool lives in a dict keyed weakly by its loop.
        self._loop = weakref.ref(loop)
        self.max_workers = max_workers
        self.idle_timeout = idle_timeout
        self._lock = threading.Lock()
        self._jobs: collections.deque[_Job] = collections.deque()
        self._threads: set[threading.Thread] = set()
        self._busy: dict[threading.Thread, _Job] = {}  # each busy worker's job
        self._idle_signals: list[threading.Lock] = []  # one per idle worker, released to wake it
        self._waking = 0  # workers woken or started that have not taken a job yet
        self._finished: list[tuple[_Job, bool, Any]] = []
        self._overruns: dict[_Job, Overrun] = {}  # running jobs whose caller gave up on them
        self._delivery_scheduled = False
        self._closer: AsyncGenerator[None, None] | None = None  # see blocking_pool()
        self.closed = False

    @property
    def workers(self) -> int:
        """Threads alive in this pool right now."""
        with self._lock:
            return len(self._threads)

    def submit(self, fn: Callable[..., T], *args: Any) -> asyncio.Future[T]:
        """Queue `fn(*args)` and return the future of its result (call from the pool's loop).

        Cancelling the future before a worker takes the call means it never runs.
        """
        loop = self._loop()
        if loop is None or self.closed:
            raise RuntimeError("this blocking pool is closed")
        future: asyncio.Future[T] = loop.create_future()
        with self._lock:
            self._jobs.append(_Job(future, fn, args))
            self._wake_one()
        return future

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """Run `fn(*args)` in a worker thread and return its result (or raise its exception).

        A cancelled call is abandoned; while its thread still runs it, the CancelledError
        carries its Overrun (see `overrun_of`).
        """
        future = self.submit(fn, *args)
        try:
            return await future
        except asyncio.CancelledError as exc:
            _mark(exc, self.abandon(future))
            raise

    def abandon(self, future: asyncio.Future[Any]) -> Overrun | None:
        """Give up on the call of `future` (from `submit`) and cancel the future.

        A queued call then never starts, and None is returned, as for a call that has ended.
        For a call a worker is running, the Overrun that tells when its thread is done.
        """
        future.cancel()
        with self._lock:
            for job in self._busy.values():
                if job.future is future:
                    overrun = self._overruns.get(job)
                    if overrun is None:
                        overrun = self._overruns[job] = Overrun()
                    return overrun
        return None

    def close(self) -> None:
        """Stop the workers; queued calls fail. Call it from the pool's event loop thread.

        Idle workers are joined (briefly) so they are gone when this returns; a worker still
        running an abandoned call exits when that call returns.
        """
        with self._lock:
            self.closed = True
            dropped = list(self._jobs)
            self._jobs.clear()
            idle = self._threads.difference(self._busy)
            for signal in self._idle_signals:
                signal.release()
            self._idle_signals.clear()
        for job in dropped:
            if not job.future.done():
                job.future.set_exception(RuntimeError("the blocking pool was closed"))
        for thread in idle:
            if thread is not threading.current_thread():
                thread.join(timeout=1.0)

    # -- worker side -----------------------------------------------------------------------

    def _wake_one(self) -> None:
        """Get one more worker on its way, unless one already is. Holds the lock."""
        if self._waking or self.closed:
            return
        if self._idle_signals:
            self._waking += 1
            self._idle_signals.pop().release()  # the most recently idle: its thread is warm
        elif len(self._threads) < self.max_workers:
            self._waking += 1
            thread = threading.Thread(target=self._work, name="jianmu-blocking", daemon=True)
            self._threads.add(thread)
            thread.start()
        # else: every worker is busy; the first one free takes the next job

    def _work(self) -> None:
        me = threading.current_thread()
        picked = True  # started by _wake_one: counted in _waking
        self._lock.acquire()
        try:
            while True:
                if picked:
                    self._waking -= 1
                    picked = False
                if not self._jobs:
                    if self.closed:
                        return
                    picked = self._wait_for_work()
                    if not picked and not self._jobs:
                        return  # idle for idle_timeout, or closed
                    continue
                job = self._jobs.popleft()
                # A cancelled caller cancels the future it awaits: a queued call never starts.
                # (Reading the flag from this thread is safe; at worst a call that is being
                # cancelled right now still runs and its result is dropped.)
                if job.future.cancelled():
                    continue
                if self._jobs:  # this job may block: let another worker take the rest
                    self._wake_one()
                self._busy[me] = job
                self._lock.release()
                try:
                    value, ok = job.context.run(job.fn, *job.args), True
                except BaseException as exc:  # delivered to the caller, not lost here
                    value, ok = exc, False
                self._lock.acquire()
                # Not busy from here on, before the caller can see the result (close() joins
                # every worker that is not busy).
                del self._busy[me]
                self._finished.append((job, ok, value))
                if not self._delivery_scheduled:  # else the pending wake-up takes it along
                    self._delivery_scheduled = True
                    self._lock.release()
                    self._wake_loop()
                    self._lock.acquire()
                if self._overruns:  # some caller gave up on a running call: maybe this one
                    overrun = self._overruns.pop(job, None)
                    if overrun is not None:
                        self._lock.release()
                        overrun._end()
                        self._lock.acquire()
        finally:
            self._threads.discard(me)
            self._lock.release()

    def _wait_for_work(self) -> bool:
        """Wait idle; True when `_wake_one` picked this worker. Called with the lock held.

        Each wait has its own signal, and only `_wake_one` (or `close`) removes it from the idle
        list, so a pick that races with the idle timeout is never lost.
        """
        signal = threading.Lock()
        signal.acquire()
        self._idle_signals.append(signal)
        self._lock.release()
        try:
            signal.acquire(timeout=self.idle_timeout)
        finally:
            self._lock.acquire()
        if signal in self._idle_signals:  # nobody picked this worker: it timed out
            self._idle_signals.remove(signal)
            return False
        return not self.closed

    def _wake_loop(self) -> None:
        """Have the event loop hand the finished results back (one wake-up for all of them)."""
        loop = self._loop()
        if loop is not None:
            with contextlib.suppress(RuntimeError):  # a closed loop: nobody is waiting any more
                loop.call_soon_threadsafe(self._hand_back)

    def _hand_back(self) -> None:
        with self._lock:
            finished, self._finished = self._finished, []
            self._delivery_scheduled = False
        for job, ok, value in finished:
            if job.future.done():  # cancelled meanwhile
                continue
            if ok:
                job.future.set_result(value)
            else:
                job.future.set_exception(value)


_pools: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, BlockingPool] = (
    weakref.WeakKeyDictionary()
)


async def blocking_pool() -> BlockingPool:
    """The pool of the running asyncio event loop, created on first use."""
    loop = asyncio.get_running_loop()
    pool = _pools.get(loop)
    if pool is None or pool.closed:
        pool = _pools[loop] = BlockingPool(loop)
        # asyncio.run() and anyio.run() close every async generator begun in their loop before
        # closing the loop (shutdown_asyncgens); this one closes the pool then, so no worker
        # thread outlives the loop that used it.
        pool._closer = _close_with_the_loop(pool)
        await pool._closer.asend(None)
    return pool


async def _close_with_the_loop(pool: BlockingPool) -> AsyncGenerator[None, None]:
    try:
        yield
    finally:
        pool.close()


async def run_blocking(fn: Callable[..., T], /, *args: Any) -> T:
    """Run a blocking `fn(*args)` off the event loop and return its result.

    On asyncio this uses the loop's `BlockingPool`; on other backends anyio's worker threads.
    Cancelling the caller abandons a running call (the thread cannot be killed); the
    CancelledError then carries the call's `Overrun` (`overrun_of`) while its thread still runs.
    """
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:  # no asyncio loop running here: another anyio backend
        return await _run_in_anyio_thread(fn, args)
    pool = _pools.get(loop)
    if pool is None or pool.closed:
        pool = await blocking_pool()
    return await pool.run(fn, *args)


async def _run_in_anyio_thread(fn: Callable[..., T], args: tuple[Any, ...]) -> T:
    """`fn(*args)` in one of anyio's worker threads, with the same Overrun on cancellation."""
    overrun = Overrun()
    overrun._started = False

    def tracked() -> T:
        with _overrun_lock:
            if overrun.ended:  # abandoned before a thread took it: it never runs
                return None  # type: ignore[return-value]
            overrun._started = True
        try:
            return fn(*args)
        finally:
            overrun._end()

    try:
        return await anyio.to_thread.run_sync(tracked, abandon_on_cancel=True)
    except anyio.get_cancelled_exc_class() as exc:
        with _overrun_lock:
            if not overrun._started:
                overrun.ended = True
        _mark(exc, overrun if overrun._started else None)
        raise


def close_blocking_pool() -> None:
    """Close the running loop's pool now, if it has one (it closes with its loop anyway)."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return
    pool = _pools.pop(loop, None)
    if pool is not None:
        pool.close()
