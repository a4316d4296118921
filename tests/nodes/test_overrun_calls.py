"""Tree-level calls never overlap a timed-out sync call whose thread still runs: retries,
serial batches, a Selector of ToolNodes, and batches of blocking calls that were halted.

Real threads, coordinated with threading.Event; no assertion depends on how long anything takes.
"""

from __future__ import annotations

import asyncio
import threading
import time

import anyio
import py_trees

from jianmu_bt import ToolCall, tool
from jianmu_bt.nodes import CallOptions, ExecutorOptions, ToolExecutor
from jianmu_bt.nodes.calling import run_tool_call
from jianmu_bt.runtime import AgentState, StateManager, TreeRunner
from jianmu_bt.runtime.context import RunContext
from jianmu_bt.tools import RetryPolicy
from jianmu_bt.tools.base import wait_for_overruns

WAIT = 10.0  # generous upper bound for things that should happen at once
SHORT = 0.05  # a timeout a first attempt is meant to exceed
# A timeout the first attempt exceeds and a later one, which waits for the first one's thread
# (released as soon as the later one is seen waiting), does not.
ROOM = 0.3


def pool_threads() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name == "jianmu-blocking"}


class Recorder:
    """Start and end of every run, in order, and the most runs seen at once."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.order: list[tuple[str, int]] = []
        self.running = 0
        self.peak = 0
        self.release = threading.Event()

    def run(self, n: int) -> int:
        with self.lock:
            self.order.append(("start", n))
            self.running += 1
            self.peak = max(self.peak, self.running)
        try:
            if n == 1:  # the first run blocks until released
                self.release.wait(WAIT)
        finally:
            with self.lock:
                self.order.append(("end", n))
                self.running -= 1
        return n

    def started(self, n: int) -> bool:
        with self.lock:
            return ("start", n) in self.order

    def starts(self) -> list[int]:
        with self.lock:
            return [n for what, n in self.order if what == "start"]


def attempts_tool(recorder: Recorder, failing: tuple[int, ...] = ()):
    """A sync tool whose first run blocks; later runs return at once, the `failing` ones with
    an error. Counts its runs."""
    runs = iter(range(1, 100))
    lock = threading.Lock()

    @tool
    def work() -> int | str:
        """Blocks on its first run."""
        with lock:
            n = next(runs)
        recorder.run(n)
        return f"Error: run {n} failed" if n in failing else n

    return work


def numbered_tool(recorder: Recorder, **options):
    @tool(**options)
    def work(n: int) -> int:
        """Run number n; run 1 blocks until released."""
        return recorder.run(n)

    return work


def waiting(found) -> int:
    record = getattr(found, "_overruns", None)
    return record.waiting if record is not None else 0


def release_when(predicate, recorder: Recorder) -> threading.Thread:
    """Release the first run once `predicate` holds (or after WAIT), from a thread of its own."""

    def watch() -> None:
        deadline = time.monotonic() + WAIT
        while not predicate() and time.monotonic() < deadline:
            time.sleep(0.001)
        recorder.release.set()

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    return watcher


def test_a_retry_after_a_timeout_never_overlaps_its_previous_attempt():
    recorder = Recorder()
    work = attempts_tool(recorder, failing=(2,))
    events = []

    async def scenario():
        context = RunContext(StateManager(AgentState))
        context.events.subscribe(events.append)
        # The retry either waits for attempt 1's thread (then attempt 1 is released) or, as it
        # did before, starts beside it.
        watcher = release_when(lambda: waiting(work) or recorder.started(2), recorder)
        result = await run_tool_call(
            context,
            "node",
            work,
            ToolCall("work", {}, "c1"),
            retry=RetryPolicy.from_retries(2, 0),
            timeout=ROOM,
        )
        watcher.join()
        return result

    before = pool_threads()
    result = asyncio.run(scenario())
    assert pool_threads() <= before
    assert result.ok and result.output == 3
    assert recorder.peak == 1
    assert recorder.starts() == [1, 2, 3]
    assert recorder.order[:3] == [("start", 1), ("end", 1), ("start", 2)]
    after_timeout, after_error = [e.data for e in events if e.type == "tool.call.retry"]
    assert "timed out" in after_timeout["error"] and after_timeout["overruns"] == 1
    assert after_error["error"] == "Error: run 2 failed" and "overruns" not in after_error
    (completed,) = [e for e in events if e.type == "tool.call.completed"]
    assert completed.data["attempts"] == 3


def test_a_retry_that_cannot_start_within_its_timeout_fails_without_starting():
    recorder = Recorder()
    work = attempts_tool(recorder)
    events = []

    def seen(event):
        events.append(event)
        if event.type == "tool.call.overrun":
            # The retry has failed without starting; the call now holds its slot until the
            # first attempt's thread ends, so let that thread end.
            assert recorder.starts() == [1]
            recorder.release.set()

    async def scenario():
        context = RunContext(StateManager(AgentState))
        context.events.subscribe(seen)
        result = await run_tool_call(
            context,
            "node",
            work,
            ToolCall("work", {}, "c1"),
            retry=RetryPolicy.from_retries(1, 0),
            timeout=SHORT,
        )
        assert recorder.starts() == [1]  # the retry never started
        await wait_for_overruns([work])
        return result

    result = asyncio.run(scenario())
    assert result.error == (
        "Error: tool 'work' is still running a timed-out earlier call; not started"
    )
    assert recorder.order == [("start", 1), ("end", 1)]
    (retry,) = [e for e in events if e.type == "tool.call.retry"]
    assert retry.data["overruns"] == 1
    (failed,) = [e for e in events if e.type == "tool.call.failed"]
    assert failed.data["attempts"] == 2


def test_a_serial_batch_does_not_start_the_next_call_of_a_timed_out_tool():
    recorder = Recorder()
    work = numbered_tool(recorder, parallel_safe=False)
    state = StateManager(AgentState)
    state.set("actions", [ToolCall("work", {"n": 1}, "c1"), ToolCall("work", {"n": 2}, "c2")])
    watcher = release_when(lambda: waiting(work) or recorder.started(2), recorder)
    before = pool_threads()
    executor = ToolExecutor([work], options=ExecutorOptions(call_timeout=ROOM))
    result = TreeRunner(executor, state).run(timeout=WAIT)
    watcher.join()
    assert result.ok
    first, second = state.get("messages")
    assert "timed out" in first["content"] and second["content"] == "2"
    assert recorder.peak == 1
    assert recorder.order == [("start", 1), ("end", 1), ("start", 2), ("end", 2)]
    assert pool_threads() <= before


def test_a_selector_of_tool_nodes_falls_back_only_after_the_thread_ends():
    recorder = Recorder()
    work = numbered_tool(recorder)
    first = work.as_node(name="first", arguments={"n": 1}, options=CallOptions(call_timeout=ROOM))
    second = work.as_node(name="second", arguments={"n": 2}, options=CallOptions(call_timeout=ROOM))
    root = py_trees.composites.Selector("either", memory=True, children=[first, second])
    watcher = release_when(lambda: waiting(work) or recorder.started(2), recorder)
    before = pool_threads()
    result = TreeRunner(root, StateManager(AgentState)).run(timeout=WAIT)
    watcher.join()
    assert result.ok
    assert "timed out" in first.last_result.error and second.last_result.output == 2
    assert recorder.peak == 1
    assert recorder.order == [("start", 1), ("end", 1), ("start", 2), ("end", 2)]
    assert pool_threads() <= before


def test_a_halted_batch_of_blocking_calls_is_waited_for_by_the_next_batch():
    recorder = Recorder()
    work = numbered_tool(recorder)
    executor = ToolExecutor([work], options=ExecutorOptions(execution_mode="parallel"))
    TreeRunner(executor, StateManager(AgentState))  # binds the node; execute is called directly

    async def scenario():
        results = {}
        with anyio.move_on_after(SHORT) as scope:  # a halt of the batch
            await executor.execute([ToolCall("work", {"n": 1}, "c1")], results)
        assert scope.cancelled_caught and results == {}
        assert work.overruns == 1  # the call still running was recorded
        watcher = release_when(lambda: waiting(work) or recorder.started(2), recorder)
        await executor.execute([ToolCall("work", {"n": 2}, "c2")], results)
        watcher.join()
        assert results["c2"].output == 2 and work.overruns == 0

    before = pool_threads()
    asyncio.run(scenario())
    assert pool_threads() <= before
    assert recorder.peak == 1
    assert recorder.order == [("start", 1), ("end", 1), ("start", 2), ("end", 2)]


def test_a_sequence_moves_to_its_next_tool_only_after_a_timed_out_thread_ends():
    recorder = Recorder()
    slow = numbered_tool(recorder, name="slow")
    other = numbered_tool(recorder, name="other")
    first = slow.as_node(name="first", arguments={"n": 1}, options=CallOptions(call_timeout=ROOM))
    second = other.as_node(name="second", arguments={"n": 2})
    root = py_trees.composites.Sequence(
        "seq", memory=True, children=[py_trees.decorators.FailureIsSuccess("ok", first), second]
    )
    watcher = release_when(lambda: waiting(slow) or recorder.started(2), recorder)
    result = TreeRunner(root, StateManager(AgentState)).run(timeout=WAIT)
    watcher.join()
    assert result.ok
    assert "timed out" in (first.last_result.error or "")
    assert recorder.order == [("start", 1), ("end", 1), ("start", 2), ("end", 2)]
