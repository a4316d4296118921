"""The default path of a batch: quick sync calls on the loop, deadlines and retries without a
task or a thread per call, a concurrency cap sized for I/O-bound async tools, and a tool that
blocks never holding the tree's loop.

No assertion is about time: thread names, task counts, events and outcomes only. The placement's
clock is a virtual one (`clock`): it moves only when a tool says it was slow, so a busy machine
never makes a quick call look slow.
"""

from __future__ import annotations

import asyncio
import threading
import time

import anyio
import py_trees
import pytest
from placement_clock import VirtualClock, install

from jianmu_bt import ToolCall, tool
from jianmu_bt.nodes import ExecutorOptions, RetryPolicy, ToolExecutor, ToolNode
from jianmu_bt.runtime import AgentState, AsyncNode, StateManager, TreeRunner
from jianmu_bt.tools.placement import PROBATION

WAIT = 10.0
LIMIT = 0.05  # a call timeout that a quick call never reaches and a call of 2 * LIMIT passes


@pytest.fixture(autouse=True)
def clock(monkeypatch) -> VirtualClock:
    return install(monkeypatch)


def names_tool(**options):
    @tool(**options)
    def name_of(i: int) -> str:
        """The thread the call ran in."""
        return threading.current_thread().name

    return name_of


def batch_state(name: str, count: int, arguments=None) -> StateManager:
    state = StateManager(AgentState)
    calls = [ToolCall(name, arguments or {"i": i}, f"{name}{i}") for i in range(count)]
    state.set("actions", calls)
    return state


async def counted_run(runner: TreeRunner) -> tuple[object, int]:
    """Run `runner` in this loop; the result and the number of tasks the run created."""
    loop = asyncio.get_running_loop()
    created = 0

    def factory(loop, coro, **kwargs):
        nonlocal created
        created += 1
        return asyncio.Task(coro, loop=loop, **kwargs)

    loop.set_task_factory(factory)
    try:
        return await runner.arun(timeout=WAIT), created
    finally:
        loop.set_task_factory(None)


def warm(found, count: int = PROBATION) -> None:
    """Make the calls that show a sync tool is quick (they run in worker threads)."""

    async def calls() -> None:
        for i in range(count):
            await found.execute({"i": i})

    asyncio.run(calls())


def test_quick_sync_calls_with_a_timeout_run_on_the_loop_without_a_task_each():
    name_of = names_tool()
    warm(name_of)
    options = ExecutorOptions(call_timeout=60)
    state = batch_state("name_of", 10)
    result, tasks = asyncio.run(
        counted_run(TreeRunner(ToolExecutor([name_of], options=options), state))
    )
    assert result.ok
    assert {m["content"] for m in state.get("messages")} == {threading.current_thread().name}
    assert tasks < 10  # the run's own few, none per call


def test_a_deadline_is_honoured_for_a_blocking_call_of_a_batch():
    release = threading.Event()

    @tool(blocking=True)
    def hold(i: int) -> int:
        """Call 0 blocks until released; the others return at once."""
        if i == 0:
            release.wait(WAIT)
        return i

    state = batch_state("hold", 5)
    events = []
    runner = TreeRunner(ToolExecutor([hold], options=ExecutorOptions(call_timeout=LIMIT)), state)
    runner.events.subscribe(lambda e: events.append((e.type, e.data.get("call_id"))))

    def release_when_overrun() -> None:
        deadline = time.monotonic() + WAIT
        while ("tool.call.overrun", "hold0") not in events and time.monotonic() < deadline:
            time.sleep(0.001)
        release.set()

    watcher = threading.Thread(target=release_when_overrun, daemon=True)
    watcher.start()
    result, tasks = asyncio.run(counted_run(runner))
    watcher.join()
    assert result.ok
    contents = [m["content"] for m in state.get("messages")]
    assert contents == [f"Error: tool 'hold' timed out after {LIMIT}s", "1", "2", "3", "4"]
    # The timed-out call's slot stays taken until its thread ends; it alone got a task for that.
    mine = [e for e in events if e[1] == "hold0"]
    assert mine == [
        ("tool.call.started", "hold0"),
        ("tool.call.overrun", "hold0"),
        ("tool.call.failed", "hold0"),
    ]
    assert tasks < 5
    assert hold.overruns == 0


def test_retries_on_the_fast_path_go_on_in_a_task_of_their_own():
    failures = {"flaky1": 1}
    lock = threading.Lock()

    @tool
    def flaky(i: int, tag: str) -> str:
        """Fails as often as `failures` says for its tag."""
        with lock:
            left = failures.get(tag, 0)
            failures[tag] = left - 1
        if left > 0:
            raise RuntimeError("try again")
        return tag

    warm_calls = [ToolCall("flaky", {"i": 0, "tag": "warm"}, f"w{i}") for i in range(PROBATION)]
    calls = [ToolCall("flaky", {"i": i, "tag": f"flaky{i}"}, f"f{i}") for i in range(3)]
    options = ExecutorOptions(retry=RetryPolicy.from_retries(2, 0))
    warm_state = StateManager(AgentState)
    warm_state.set("actions", warm_calls)
    assert TreeRunner(ToolExecutor([flaky], options=options), warm_state).run(timeout=WAIT).ok
    assert flaky._placement.inline

    state = StateManager(AgentState)
    state.set("actions", calls)
    events = []
    runner = TreeRunner(ToolExecutor([flaky], options=options), state)
    runner.events.subscribe(lambda e: events.append(e))
    result, tasks = asyncio.run(counted_run(runner))
    assert result.ok
    assert [m["content"] for m in state.get("messages")] == ["flaky0", "flaky1", "flaky2"]
    retried = [(e.type, e.data.get("attempts")) for e in events if e.data.get("call_id") == "f1"]
    assert retried == [
        ("tool.call.started", None),
        ("tool.call.retry", None),
        ("tool.call.completed", 2),
    ]
    assert tasks < 5


def test_a_thousand_async_calls_run_at_once_by_default():
    count = 1000
    state = {"in_flight": 0, "peak": 0}
    everyone: list[anyio.Event] = []

    @tool
    async def gather(i: int) -> int:
        """Waits until every call of the batch has started."""
        if not everyone:
            everyone.append(anyio.Event())
        state["in_flight"] += 1
        state["peak"] = max(state["peak"], state["in_flight"])
        if state["in_flight"] == count:
            everyone[0].set()
        with anyio.fail_after(WAIT):
            await everyone[0].wait()
        return i

    batch = batch_state("gather", count)
    result = TreeRunner(ToolExecutor([gather]), batch).run(timeout=2 * WAIT)
    assert result.ok, result.reason
    assert state["peak"] == count
    assert len(batch.get("messages")) == count


class Release(AsyncNode):
    """Once the tool's call has begun, sets `released` from the tree's loop (if it gets to)."""

    def __init__(self, entered: threading.Event, released: threading.Event) -> None:
        super().__init__(name="release")
        self.entered = entered
        self.released = released

    async def run_async(self) -> bool:
        with anyio.move_on_after(WAIT):
            while not self.entered.is_set():
                await anyio.sleep(0.001)
        self.released.set()
        return True


def waiting_tool(clock):
    entered, released = threading.Event(), threading.Event()
    mode = {"how": "wait"}

    @tool
    def waiter() -> str:
        """Waits for the other node of its tree, or is quick, or slow, as `mode` says."""
        if mode["how"] == "quick":
            return "quick"
        if mode["how"] == "slow":
            clock.advance()
            return "slow"
        entered.set()
        return "released" if released.wait(WAIT) else "never released"

    return waiter, mode, entered, released


def run_beside_release(waiter, entered: threading.Event, released: threading.Event) -> str:
    entered.clear()
    released.clear()
    # synchronise: a child that succeeded is not ticked (started) again while the other runs;
    # without it each tick restarts the finished one, and the two must end in the same tick.
    policy = py_trees.common.ParallelPolicy.SuccessOnAll(synchronise=True)
    root = py_trees.composites.Parallel("both", policy=policy)
    root.add_children([ToolNode(waiter, output_key="final_answer"), Release(entered, released)])
    runner = TreeRunner(root, StateManager(AgentState))
    assert runner.run(timeout=2 * WAIT).ok
    return runner.state.get("final_answer")


def test_a_sync_tool_that_blocks_leaves_the_tree_ticking(clock):
    """The tool waits for another node of its tree: only a call off the loop can end well."""
    waiter, mode, entered, released = waiting_tool(clock)
    # A fresh tool: its first call runs in a worker thread.
    assert run_beside_release(waiter, entered, released) == "released"

    # Proven quick, it runs inline; one slow call sends it back to the threads.
    mode["how"] = "quick"
    for _ in range(PROBATION + 1):
        asyncio.run(waiter.execute({}))
    assert waiter._placement.inline
    mode["how"] = "slow"
    asyncio.run(waiter.execute({}))
    assert not waiter._placement.inline

    mode["how"] = "wait"
    assert run_beside_release(waiter, entered, released) == "released"


def test_calls_made_together_can_read_their_idempotency_key():
    from jianmu_bt.tools import idempotency_key

    @tool
    def keyed(i: int) -> str:
        """Reports the key of the call it runs for (in a thread at first, then on the loop)."""
        return idempotency_key() or "none"

    @tool(blocking=True)
    def keyed_thread(i: int) -> str:
        """The same, always in a worker thread."""
        return idempotency_key() or "none"

    for _ in range(2):  # first in worker threads, then (proven quick) on the loop
        state = StateManager(AgentState)
        calls = [ToolCall("keyed", {"i": i}, f"k{i}") for i in range(PROBATION)]
        calls += [ToolCall("keyed_thread", {"i": 0}, "t0")]
        state.set("actions", calls)
        assert TreeRunner(ToolExecutor([keyed, keyed_thread]), state).run(timeout=WAIT).ok
        assert [m["content"] for m in state.get("messages")] == ["k0", "k1", "k2", "k3", "t0"]
    assert keyed._placement.inline and idempotency_key() is None
