"""The main-thread waits of a batch's Ray task (`ray_waits`), against a stand-in for Ray.

The stand-in's refs are ready as soon as they are waited for, so these tests need no Ray: they
check what the serving thread does with a result whose loop closed, and that it stops waiting
as soon as the run ends.
"""

from __future__ import annotations

import asyncio
import signal
import threading
import time
from typing import Any

import pytest

from jianmu_bt.sandbox import ray_waits
from jianmu_bt.sandbox.ray_waits import MainThreadWaits, run_with_released_cpus


class InstantRay:
    """Every ref is ready when waited for; its value is the ref itself."""

    def __init__(self) -> None:
        self.waited: list[list[Any]] = []

    def wait(self, refs: list[Any], num_returns: int = 1, timeout: float | None = None) -> Any:
        self.waited.append(list(refs))
        return list(refs), []

    def get(self, ref: Any) -> Any:
        return ref


def test_a_result_for_a_loop_that_closed_is_dropped_not_raised() -> None:
    """A run ends (its event loop closes) while the main thread still waits for one of its
    calls: the call's result arrives for a closed loop and is dropped."""
    waits = MainThreadWaits(InstantRay())
    loop = asyncio.new_event_loop()
    task = loop.create_task(waits.wait("ref-1"))
    loop.run_until_complete(asyncio.sleep(0))  # the call is registered, still awaited
    assert not task.done()
    loop.close()  # the run's loop is gone, its awaiter never settled
    rounds = iter([False, True])
    waits.serve(lambda: next(rounds))  # "Event loop is closed" before the fix
    assert waits.ray.waited == [["ref-1"]]


def test_results_reach_open_loops_beside_a_closed_one() -> None:
    """Two loops wait for the same ref; one closed: the open one still gets the value."""
    waits = MainThreadWaits(InstantRay())
    closed, open_loop = asyncio.new_event_loop(), asyncio.new_event_loop()
    closed.create_task(waits.wait("shared"))
    closed.run_until_complete(asyncio.sleep(0))
    closed.close()
    task = open_loop.create_task(waits.wait("shared"))
    open_loop.run_until_complete(asyncio.sleep(0))
    rounds = iter([False, True])
    waits.serve(lambda: next(rounds))
    assert open_loop.run_until_complete(task) == "shared"
    open_loop.close()


def test_the_main_thread_returns_when_the_run_ends_without_a_poll(monkeypatch) -> None:
    """The run's end wakes the waiting main thread at once: with the poll made an hour long,
    a run that made no Ray call still returns (before, the thread slept out the poll)."""
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("needs the main thread")
    monkeypatch.setattr(ray_waits, "POLL_SECONDS", 3600.0)
    ran, returned = threading.Event(), threading.Event()

    def watchdog() -> None:
        ran.wait(60)
        if not returned.wait(20):  # still waiting: interrupt it (a real signal), fail below
            signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGINT)

    def run() -> int:
        ran.set()
        time.sleep(0.3)  # the main thread is waiting by now
        return 42

    guard = threading.Thread(target=watchdog, daemon=True)
    guard.start()
    try:
        value = run_with_released_cpus(InstantRay(), run)
    except KeyboardInterrupt:
        pytest.fail("the main thread kept waiting after the run ended")
    returned.set()
    guard.join()
    assert value == 42
