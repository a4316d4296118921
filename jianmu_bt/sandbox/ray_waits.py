"""Waiting for Ray calls made from inside a Ray task without holding the task's CPUs.

Ray lends a task's CPUs back while the task blocks in `ray.get` / `ray.wait`, but only when it
blocks in the task's main thread: an `await` on `ref.future()` (or `ray.get` in another thread)
keeps them. A batch run is a Ray task holding a CPU, and a `runner: ray` tool in its tree sends
each call as another task: with every CPU held by a run that awaits its tool, the tools never
start. `run_with_released_cpus(fn, ...)` runs `fn` in a thread while the task's main thread does
the waiting for every RayRunner call `fn` makes (`wait_for_ref`), in `ray.wait`, so the CPUs are
free for the tool tasks while the run waits.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

__all__ = ["MainThreadWaits", "active_waits", "run_with_released_cpus"]

T = TypeVar("T")
#: How long the main thread blocks in one `ray.wait` before it looks for new calls (a safety
#: net when idle: the run's end and each new call wake it at once).
POLL_SECONDS = 0.1


class MainThreadWaits:
    """Ray object refs that async code awaits, waited for by the thread calling `serve`."""

    def __init__(self, ray: Any) -> None:
        self.ray = ray
        self._lock = threading.Lock()
        self._waiting: dict[Any, list[tuple[asyncio.AbstractEventLoop, asyncio.Future[Any]]]] = {}
        self._wake = threading.Event()

    async def wait(self, ref: Any) -> Any:
        """The value of `ref` (or its error), once the serving thread has seen it ready."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        with self._lock:
            self._waiting.setdefault(ref, []).append((loop, future))
        self.wake()
        return await future

    def wake(self) -> None:
        """Wake the serving thread: a call was registered, or the run ended."""
        self._wake.set()

    def serve(self, finished: Callable[[], bool]) -> None:
        """Wait for the registered refs (in `ray.wait`) until `finished()` says to stop.

        With nothing to wait for, the thread sleeps until `wake()`: a new call, or the run's
        end (`run_with_released_cpus` wakes it then), so a run costs no polling delay."""
        while True:
            self._wake.clear()  # a wake from here on is seen by the wait below
            if finished():
                return
            with self._lock:
                for ref in [r for r, fs in self._waiting.items() if all(f.done() for _, f in fs)]:
                    del self._waiting[ref]  # every awaiter was cancelled
                refs = list(self._waiting)
            if not refs:
                self._wake.wait(POLL_SECONDS)
                continue
            try:
                ready, _ = self.ray.wait(refs, num_returns=1, timeout=POLL_SECONDS)
                if ready and len(refs) > 1:  # collect every ref ready by now, not only the first
                    ready, _ = self.ray.wait(refs, num_returns=len(refs), timeout=0)
            except Exception as exc:  # Ray itself failed: every waiting call gets the error
                for ref in refs:
                    self._deliver(ref, exc)
                continue
            for ref in ready:
                self._deliver(ref)

    def _deliver(self, ref: Any, failure: BaseException | None = None) -> None:
        value, error = None, failure
        if failure is None:
            try:
                value = self.ray.get(ref)
            except BaseException as exc:  # the task's error goes to the awaiting call
                error = exc
        with self._lock:
            awaiting = self._waiting.pop(ref, [])
        for loop, future in awaiting:
            _hand_over(loop, future, value, error)


def _hand_over(
    loop: asyncio.AbstractEventLoop, future: asyncio.Future[Any], value: Any, error: Any
) -> None:
    """Settle `future` in its loop; a result for a loop that closed meanwhile (its run ended,
    the awaiting call gone with it) is dropped."""
    if loop.is_closed():
        return
    try:
        loop.call_soon_threadsafe(_settle, future, value, error)
    except RuntimeError:  # the loop closed between the check and the call
        if not loop.is_closed():
            raise


def _settle(future: asyncio.Future[Any], value: Any, error: BaseException | None) -> None:
    if future.done():
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(value)


_active: MainThreadWaits | None = None


def active_waits() -> MainThreadWaits | None:
    """The waits served by this process's main thread, when called from another thread while
    `run_with_released_cpus` runs (None otherwise: await the ref directly)."""
    if _active is None or threading.current_thread() is threading.main_thread():
        return None
    return _active


def run_with_released_cpus(ray: Any, fn: Callable[..., T], *args: Any) -> T:
    """`fn(*args)` in a thread while this thread (a Ray task's main thread) waits for the Ray
    calls it makes; outside a task's main thread, just `fn(*args)`."""
    global _active
    if threading.current_thread() is not threading.main_thread() or _active is not None:
        return fn(*args)
    waits = _active = MainThreadWaits(ray)
    try:
        with ThreadPoolExecutor(1, thread_name_prefix="jianmu-run") as thread:
            done = thread.submit(fn, *args)
            done.add_done_callback(lambda _: waits.wake())  # the run's end wakes the wait
            waits.serve(done.done)
            return done.result()
    finally:
        _active = None
