"""The tasks of a run's work on asyncio: each node's work is a task of its own (no task group),
and the run never ends before every one of them has: cancelled from outside, timed out, or
ended by a BaseException."""

import asyncio

import anyio
import pytest

from jianmu_bt.runtime import AgentState, AsyncNode, StateManager, TreeRunner

pytestmark = pytest.mark.anyio


class SlowCleanup(AsyncNode):
    """Waits forever; cancelled, it cleans up for a while in a shielded scope (as a sandbox
    that stops its container does) before it lets the cancellation go on."""

    def __init__(self) -> None:
        super().__init__("slow cleanup")
        self.cleaned_up = False

    async def run_async(self) -> bool:
        try:
            await anyio.sleep_forever()
        finally:
            with anyio.CancelScope(shield=True):
                await anyio.sleep(0.05)
                self.cleaned_up = True
        return True


class Stubborn(AsyncNode):
    """Swallows the first cancellation and waits again: a level-triggered cancel still ends it."""

    def __init__(self) -> None:
        super().__init__("stubborn")
        self.swallowed = 0

    async def run_async(self) -> bool:
        for _ in range(2):
            try:
                await anyio.sleep(60)
            except anyio.get_cancelled_exc_class():
                self.swallowed += 1
        return True


class Stop(BaseException):
    """Not an Exception (as KeyboardInterrupt and SystemExit are not)."""


class Interrupt(AsyncNode):
    async def run_async(self) -> bool:
        await anyio.sleep(0)
        raise Stop


def work_tasks() -> set[asyncio.Task]:
    """The tasks of spawned work still alive in this loop."""
    return {t for t in asyncio.all_tasks() if t.get_coro().__qualname__ == "RunContext._run"}


async def test_an_anyio_cancel_of_the_run_waits_for_the_works_shielded_cleanup() -> None:
    node = SlowCleanup()
    runner = TreeRunner(node, StateManager(AgentState))
    with anyio.move_on_after(0.05) as scope:
        await runner.arun()
    assert scope.cancelled_caught
    assert node.cleaned_up and runner.context.in_flight == 0 and not work_tasks()


async def test_an_asyncio_cancel_of_the_run_waits_for_the_work_and_propagates() -> None:
    node = SlowCleanup()
    runner = TreeRunner(node, StateManager(AgentState))
    run = asyncio.ensure_future(runner.arun())
    while runner.context.in_flight == 0:
        await asyncio.sleep(0.01)
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    assert node.cleaned_up and runner.context.in_flight == 0 and not work_tasks()


async def test_work_that_swallows_a_cancel_is_cancelled_again_until_it_ends() -> None:
    node = Stubborn()
    result = await TreeRunner(node, StateManager(AgentState)).arun(timeout=0.05)
    assert not result.ok and "timed out" in result.reason
    assert node.swallowed == 2 and not work_tasks()


async def test_a_base_exception_in_work_ends_the_run_with_it() -> None:
    runner = TreeRunner(Interrupt("interrupt"), StateManager(AgentState))
    with pytest.raises(Stop):
        await runner.arun()
    assert runner.context.in_flight == 0 and not work_tasks()


class RaisesInCleanup(AsyncNode):
    """Waits; the first time it is cancelled, its cleanup raises a BaseException."""

    raised = False

    async def run_async(self) -> bool:
        try:
            await anyio.sleep(60)
        except anyio.get_cancelled_exc_class():
            if not RaisesInCleanup.raised:
                RaisesInCleanup.raised = True
                raise Stop("from cleanup") from None
            raise
        return True


async def test_a_base_exception_in_cleanup_after_the_last_tick_ends_that_run() -> None:
    runner = TreeRunner(RaisesInCleanup("cleanup"), StateManager(AgentState))
    with pytest.raises(Stop, match="from cleanup"):
        await runner.arun(timeout=0.05)  # the halt cancels the work; its cleanup raises
    assert runner.context.escaped is None and not work_tasks()
    result = await runner.arun(timeout=0.05)  # the next run is its own
    assert not result.ok and "timed out" in result.reason


def test_a_base_exception_in_work_ticked_step_by_step_ends_the_next_tick() -> None:
    with TreeRunner(Interrupt("interrupt"), StateManager(AgentState)) as runner:
        runner.tick()
        with pytest.raises(Stop):
            for _ in range(500):
                runner.tick()
                anyio.run(anyio.sleep, 0.01)
