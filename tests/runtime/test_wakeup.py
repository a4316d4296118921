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
