"""Wakeup, the runner's wait between ticks: set before or during a wait, or a deadline."""

from __future__ import annotations

import asyncio

import anyio
import pytest

from jianmu_bt.runtime.wakeup import Wakeup

pytestmark = pytest.mark.anyio


async def test_a_wait_ends_when_set_and_at_once_when_already_set() -> None:
    wakeup = Wakeup()
    loop = asyncio.get_running_loop()
    loop.call_soon(wakeup.set)
    await wakeup.wait()  # no deadline: only the set ends it
    assert wakeup.is_set()
    await wakeup.wait(1000)  # already set: returns without waiting
    wakeup.clear()
    assert not wakeup.is_set()


async def test_a_deadline_ends_the_wait_without_setting_the_flag() -> None:
    wakeup = Wakeup()
    await wakeup.wait(0.01)
    assert not wakeup.is_set()


async def test_a_cancelled_wait_leaves_no_waiter_and_a_later_set_is_kept() -> None:
    wakeup = Wakeup()
    with anyio.move_on_after(0.01) as scope:
        await wakeup.wait()
    assert scope.cancelled_caught
    wakeup.set()  # nobody waits: only the flag
    await wakeup.wait()


async def test_the_timer_of_a_cancelled_wait_does_not_end_the_next_wait() -> None:
    wakeup = Wakeup()
    with anyio.move_on_after(0.01):
        await wakeup.wait(0.05)
    with anyio.move_on_after(0.3) as scope:
        await wakeup.wait()  # no deadline: only a set ends it, not the first wait's timer
    assert scope.cancelled_caught and not wakeup.is_set()


async def test_calling_it_does_nothing_until_a_run_loop_opens_it_and_after_it_closes() -> None:
    wakeup = Wakeup()
    wakeup()  # no run loop yet
    assert not wakeup.is_set()
    wakeup.open()
    wakeup(frozenset({"count"}))  # as a state subscriber, from the loop's thread: at once
    assert wakeup.is_set()
    wakeup.clear()
    wakeup.close()
    wakeup()
    assert not wakeup.is_set()


async def test_a_call_from_another_thread_wakes_the_waiting_loop() -> None:
    wakeup = Wakeup()
    wakeup.open()
    with anyio.fail_after(5):
        async with anyio.create_task_group() as group:
            group.start_soon(anyio.to_thread.run_sync, wakeup)
            await wakeup.wait()
    assert wakeup.is_set()
    wakeup.close()


async def test_a_state_write_from_another_thread_wakes_a_waiting_run() -> None:
    from py_trees.common import Status
    from py_trees.decorators import FailureIsRunning
    from pydantic import BaseModel

    from jianmu_bt.nodes import Condition
    from jianmu_bt.runtime import StateManager, TreeRunner

    class Flag(BaseModel):
        ready: bool = False

    state = StateManager(Flag)
    # RUNNING until ready, nothing in flight: the runner's first look after a quiet tick is
    # stall_interval (600 s) away, so only the write's wake-up ends the run in time.
    waiting = FailureIsRunning("until ready", Condition("ready", "ready == True"))
    runner = TreeRunner(waiting, state, stall_interval=600)
    done = []

    async def run() -> None:
        done.append(await runner.arun(timeout=30))

    with anyio.fail_after(10):
        async with anyio.create_task_group() as group:
            group.start_soon(run)
            await anyio.sleep(0.05)
            await anyio.to_thread.run_sync(state.set, "ready", True)
    assert done[0].status == Status.SUCCESS and done[0].reason == ""
    runner.close()
    assert runner._wakeup not in state._subscribers  # close() stops listening
