"""The worker threads of blocking tools: results, errors, concurrency, bounds, cancel, lifetime."""

from __future__ import annotations

import asyncio
import contextvars
import threading
import time

import anyio
import pytest

from jianmu_bt import tool
from jianmu_bt.nodes import ToolExecutor
from jianmu_bt.runtime import AgentState, StateManager, TreeRunner
from jianmu_bt.tools.blocking import (
    BlockingPool,
    blocking_pool,
    close_blocking_pool,
    run_blocking,
)

WAIT = 10.0  # generous upper bounds for events that should happen at once


def pool_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "jianmu-blocking"]


def eventually(predicate, what: str) -> None:
    deadline = time.monotonic() + WAIT
    while not predicate():
        assert time.monotonic() < deadline, f"never happened: {what}"
        time.sleep(0.005)


class Boom(Exception):
    pass


class NotAnException(BaseException):
    pass


@pytest.mark.anyio
async def test_result_exception_and_thread():
    def where(x: int) -> tuple[int, str]:
        return x * 2, threading.current_thread().name

    def fail() -> None:
        raise Boom("bad input 7")

    value, thread = await run_blocking(where, 21)
    assert value == 42 and thread == "jianmu-blocking"
    with pytest.raises(Boom, match="bad input 7"):
        await run_blocking(fail)

    def worse() -> None:
        raise NotAnException("still delivered")

    with pytest.raises(NotAnException):
        await run_blocking(worse)
    assert await run_blocking(where, 1) == (2, "jianmu-blocking")  # the pool still works


@pytest.mark.anyio
async def test_the_callers_context_variables_are_visible():
    request = contextvars.ContextVar("request", default="none")
    request.set("req-17")
    assert await run_blocking(request.get) == "req-17"


@pytest.mark.anyio
async def test_blocking_calls_run_at_the_same_time():
    # Each call waits until all five are inside: only possible when they run concurrently.
    barrier = threading.Barrier(5, timeout=WAIT)
    results = await asyncio.gather(*(run_blocking(barrier.wait) for _ in range(5)))
    assert sorted(results) == [0, 1, 2, 3, 4]


@pytest.mark.anyio
async def test_at_most_max_workers_threads():
    pool = BlockingPool(asyncio.get_running_loop(), max_workers=2)
    release = threading.Event()
    lock = threading.Lock()
    running, peak, started = 0, 0, []

    def job(i: int) -> int:
        nonlocal running, peak
        with lock:
            running += 1
            peak = max(peak, running)
            started.append(i)
        release.wait(WAIT)
        with lock:
            running -= 1
        return i

    tasks = [asyncio.ensure_future(pool.run(job, i)) for i in range(5)]
    await anyio.to_thread.run_sync(eventually, lambda: len(started) == 2, "two calls started")
    await anyio.sleep(0.1)
    assert len(started) == 2 and pool.workers == 2  # the other three wait for a thread
    release.set()
    assert await asyncio.gather(*tasks) == [0, 1, 2, 3, 4]
    assert peak == 2
    pool.close()


@pytest.mark.anyio
async def test_a_call_cancelled_while_queued_never_runs():
    pool = BlockingPool(asyncio.get_running_loop(), max_workers=1)
    started, release = threading.Event(), threading.Event()
    ran = []

    def hold() -> bool:
        started.set()
        return release.wait(WAIT)

    first = asyncio.ensure_future(pool.run(hold))
    await anyio.to_thread.run_sync(started.wait, WAIT)
    with anyio.move_on_after(0.05) as scope:
        await pool.run(ran.append, "queued")
    assert scope.cancelled_caught
    release.set()
    assert await first is True
    assert await pool.run(ran.append, "later") is None
    assert ran == ["later"]
    pool.close()


@pytest.mark.anyio
async def test_a_cancelled_running_call_is_abandoned_and_the_pool_goes_on():
    release = threading.Event()
    finished = threading.Event()

    def slow() -> None:
        release.wait(WAIT)
        finished.set()

    with pytest.raises(TimeoutError):
        with anyio.fail_after(0.05):
            await run_blocking(slow)
    assert not finished.is_set()  # the caller returned while the call was still running
    release.set()
    assert await run_blocking(lambda: "next") == "next"
    await anyio.to_thread.run_sync(finished.wait, WAIT)


@pytest.mark.anyio
async def test_idle_workers_exit_after_the_idle_timeout():
    pool = BlockingPool(asyncio.get_running_loop(), idle_timeout=0.05)
    barrier = threading.Barrier(3, timeout=WAIT)
    await asyncio.gather(*(pool.run(barrier.wait) for _ in range(3)))
    assert pool.workers >= 3
    await anyio.to_thread.run_sync(eventually, lambda: pool.workers == 0, "idle workers exit")
    assert await pool.run(lambda: "warm again") == "warm again"  # new workers on demand
    pool.close()


@pytest.mark.anyio
async def test_close_stops_the_workers_and_fails_queued_calls():
    pool = BlockingPool(asyncio.get_running_loop(), max_workers=1)
    await asyncio.gather(*(pool.run(time.sleep, 0) for _ in range(3)))
    release = threading.Event()
    running = asyncio.ensure_future(pool.run(release.wait, WAIT))
    queued = asyncio.ensure_future(pool.run(lambda: "never"))
    await anyio.sleep(0.05)
    pool.close()
    with pytest.raises(RuntimeError, match="closed"):
        await queued
    release.set()
    assert await running is True  # a running call still finishes and answers
    await anyio.to_thread.run_sync(eventually, lambda: pool.workers == 0, "workers exit")
    with pytest.raises(RuntimeError, match="closed"):
        await pool.run(lambda: None)


@pytest.mark.anyio
async def test_close_blocking_pool_joins_idle_workers_and_a_new_pool_follows():
    before = await blocking_pool()
    barrier = threading.Barrier(4, timeout=WAIT)
    await asyncio.gather(*(run_blocking(barrier.wait) for _ in range(4)))
    workers = set(before._threads)
    assert len(workers) >= 4
    close_blocking_pool()
    assert before.closed and not any(t.is_alive() for t in workers)
    assert await run_blocking(lambda: 5) == 5
    assert await blocking_pool() is not before


def test_the_pool_closes_with_its_event_loop():
    async def use() -> set[threading.Thread]:
        barrier = threading.Barrier(3, timeout=WAIT)
        await asyncio.gather(*(run_blocking(barrier.wait) for _ in range(3)))
        return set((await blocking_pool())._threads)

    workers = asyncio.run(use())
    assert len(workers) >= 3 and not any(t.is_alive() for t in workers)
    workers = anyio.run(use)
    assert len(workers) >= 3 and not any(t.is_alive() for t in workers)


def test_a_tree_run_leaves_no_worker_thread_behind():
    @tool
    def lookup(key: str) -> str:
        """Look a key up (blocking)."""
        time.sleep(0.01)
        return key.upper()

    before = set(pool_threads())  # other tests' loops may still hold theirs
    state = StateManager(AgentState)
    calls = [{"id": f"c{i}", "name": "lookup", "arguments": {"key": f"k{i}"}} for i in range(8)]
    state.set("actions", calls)
    runner = TreeRunner(ToolExecutor([lookup]), state)
    assert runner.run(timeout=WAIT).ok
    assert [m["content"] for m in state.get("messages")] == [f"K{i}" for i in range(8)]
    assert set(pool_threads()) <= before  # run() owns its loop: the workers end with it

    state.set("actions", calls[:2])
    state.set("messages", [])
    with TreeRunner(ToolExecutor([lookup]), state) as stepper:
        eventually(lambda: stepper.tick().value == "SUCCESS", "the batch ends")
        assert set(pool_threads()) - before  # the background loop keeps workers between ticks
    assert set(pool_threads()) <= before  # ...until close()
