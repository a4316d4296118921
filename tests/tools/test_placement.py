"""Where a sync `@tool` runs by default: measured (`jianmu_bt.tools.placement`).

Assertions are about which path a call took (thread names, the placement record), never about
how long anything took. The placement's clock is a virtual one here (`clock`): it moves only when
a tool says it was slow, so a busy machine never makes a quick call look slow.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
import time

import pytest
from placement_clock import SLOW, VirtualClock, install

from jianmu_bt import ToolSet, tool
from jianmu_bt.tools.placement import MAX_PROBATION, PROBATION, Placement

WAIT = 10.0  # generous upper bound for things that should happen at once
LIMIT = 0.05  # a call timeout that a quick call never reaches and a call of 2 * LIMIT passes


@pytest.fixture(autouse=True)
def clock(monkeypatch) -> VirtualClock:
    return install(monkeypatch)


VAR: contextvars.ContextVar[str] = contextvars.ContextVar("test_placement_var", default="unset")


def where() -> str:
    """The thread a call runs in, and whether it sees a running event loop."""
    try:
        asyncio.get_running_loop()
        loop = "loop"
    except RuntimeError:
        loop = "no loop"
    return f"{threading.current_thread().name}, {loop}"


def quick_tool():
    @tool
    def quick(x: int) -> str:
        """Says where it ran."""
        return where()

    return quick


HERE = "MainThread, no loop"  # inline, as asyncio.run runs the loop in this thread
THREAD = "jianmu-blocking, no loop"


def test_a_quick_tool_runs_in_a_thread_first_then_on_the_loop():
    quick = quick_tool()

    async def scenario() -> list[str]:
        tools = ToolSet([quick])
        return [await tools.execute("quick", {"x": i}) for i in range(PROBATION + 2)]

    seen = asyncio.run(scenario())
    assert seen == [THREAD] * PROBATION + [HERE] * 2
    assert quick._placement.inline


def test_an_inline_call_sees_what_a_thread_sees():
    @tool
    def nested() -> str:
        """Sets a context variable and runs an event loop of its own, as in a thread."""
        VAR.set("inside")

        async def inner() -> str:
            return "inner loop"

        return asyncio.run(inner())

    async def scenario() -> list[str]:
        seen = []
        for _ in range(PROBATION + 1):
            seen.append(await nested.execute({}))
            seen.append(VAR.get())
        return seen

    seen = asyncio.run(scenario())
    assert nested._placement.inline
    assert seen == ["inner loop", "unset"] * (PROBATION + 1)


def test_a_slow_call_on_the_loop_sends_the_tool_back_to_the_threads(clock):
    slow_now = threading.Event()

    @tool
    def sometimes(x: int) -> str:
        """Quick, until told to be slow."""
        if slow_now.is_set():
            clock.advance()
        return where()

    async def scenario() -> list[str]:
        seen = [await sometimes.execute({"x": i}) for i in range(PROBATION + 1)]
        slow_now.set()
        seen.append(await sometimes.execute({"x": 0}))  # inline, and slow
        slow_now.clear()
        seen.append(await sometimes.execute({"x": 0}))  # in a thread again
        return seen

    seen = asyncio.run(scenario())
    assert seen[PROBATION:] == [HERE, HERE, THREAD]
    placement = sometimes._placement
    assert not placement.inline and placement.demotions == 1
    assert placement.needed == PROBATION * 4


def test_a_tool_that_blocks_never_runs_on_the_loop(clock):
    @tool
    def sleepy(x: int) -> str:
        """Takes longer than a quick call."""
        clock.advance()
        return where()

    async def scenario() -> list[str]:
        return [await sleepy.execute({"x": i}) for i in range(PROBATION + 2)]

    assert asyncio.run(scenario()) == [THREAD] * (PROBATION + 2)
    assert not sleepy._placement.inline and sleepy._placement.streak == 0


def test_a_blocking_call_leaves_the_loop_free_for_other_tasks():
    """The first call of a tool that waits for another task: it can only end if it runs off the
    loop, as every call of an unproven tool does."""
    released = threading.Event()

    @tool
    def wait_for_release() -> str:
        """Blocks until another task of the loop releases it."""
        return "released" if released.wait(WAIT) else "never released"

    async def release() -> None:
        await asyncio.sleep(0)
        released.set()

    async def scenario() -> str:
        releaser = asyncio.ensure_future(release())
        result = await wait_for_release.execute({})
        await releaser
        return result

    assert asyncio.run(scenario()) == "released"


def test_blocking_true_always_uses_a_thread_and_false_never():
    threaded = tool(where, name="threaded", blocking=True)
    on_loop = tool(where, name="on_loop", blocking=False)

    async def scenario() -> tuple[set[str], set[str]]:
        tools = ToolSet([threaded, on_loop])
        a = {await tools.execute("threaded", {}) for _ in range(PROBATION + 2)}
        b = {await tools.execute("on_loop", {}) for _ in range(PROBATION + 2)}
        return a, b

    assert asyncio.run(scenario()) == ({THREAD}, {"MainThread, loop"})
    assert threaded._placement is None and on_loop._placement is None


def test_a_timeout_is_honoured_on_the_loop(clock):
    slow_now = threading.Event()

    @tool
    def limited(x: int) -> int:
        """Quick, until told to be slow (past the call's deadline, really)."""
        if slow_now.is_set():
            time.sleep(2 * LIMIT)
            clock.advance()
        return x

    async def scenario() -> list:
        for i in range(PROBATION):
            await limited.execute({"x": i})
        assert limited._runs_inline
        results = [await limited.call({"x": 1}, timeout=LIMIT)]
        slow_now.set()
        results.append(await limited.call({"x": 2}, timeout=LIMIT))
        return results

    quick, late = asyncio.run(scenario())
    assert quick.ok and quick.output == 1
    assert not late.ok and late.error == f"Error: tool 'limited' timed out after {LIMIT}s"
    assert limited.overruns == 0  # the call ended: nothing runs on
    assert not limited._placement.inline


def test_a_late_exception_on_the_loop_is_a_timeout_and_an_early_one_an_error(clock):
    state = {"slow": False}

    @tool
    def failing() -> None:
        """Raises, slowly or not."""
        if state["slow"]:
            time.sleep(2 * LIMIT)
            clock.advance()
        raise ValueError("bad")

    async def scenario() -> list:
        for _ in range(PROBATION):
            await failing.call({})
        assert failing._runs_inline
        results = [await failing.call({}, timeout=LIMIT)]
        state["slow"] = True
        results.append(await failing.call({}, timeout=LIMIT))
        return results

    early, late = asyncio.run(scenario())
    assert early.error == "Error: ValueError: bad"
    assert late.error == f"Error: tool 'failing' timed out after {LIMIT}s"


def test_the_way_back_to_the_loop_grows_with_each_slow_call():
    placement = Placement()
    needed = []
    for _ in range(6):
        placement.inline = True
        placement._ran_slow_inline()
        needed.append(placement.needed)
    assert needed == [16, 64, 256, 1024, MAX_PROBATION, MAX_PROBATION]
    for _ in range(MAX_PROBATION - 1):
        placement._ran_in_thread(0.0)
    assert not placement.inline
    placement._ran_in_thread(SLOW)  # a slow one starts the count again
    assert placement.streak == 0
    for _ in range(MAX_PROBATION):
        placement._ran_in_thread(0.0)
    assert placement.inline


def test_a_slow_thread_call_that_ends_after_the_move_to_the_loop_moves_it_back():
    placement = Placement()
    for _ in range(PROBATION):
        placement._ran_in_thread(0.0)
    assert placement.inline
    placement._ran_in_thread(SLOW)  # one of a batch's calls, ending late
    assert not placement.inline and placement.demotions == 0


def portable(x: int) -> int:
    """A module-level function, so a sandbox can import it again."""
    return x


@pytest.mark.parametrize("blocking", [None, True, False])
def test_the_sandbox_spec_carries_the_blocking_option(blocking):
    from jianmu_bt.sandbox.toolspec import describe_tool, recreate_tool

    made = tool(portable, name="portable_tool", blocking=blocking)
    assert made.blocking is blocking
    assert recreate_tool(describe_tool(made)).blocking is blocking
