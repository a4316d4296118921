"""TreeRunner and AsyncNode: event-driven ticking, halting, timeouts, events, isolation."""

import subprocess
import sys
import threading
import time

import anyio
import py_trees
import pytest
from py_trees.common import Status

from jianmu_bt.nodes import SetValues
from jianmu_bt.runtime import (
    AgentState,
    AsyncNode,
    StateManager,
    TraceWriter,
    TreeRunner,
    read_trace,
)


class Sleep(AsyncNode):
    def __init__(self, name, seconds, result=True):
        super().__init__(name)
        self.seconds = seconds
        self.result = result
        self.cancelled = False

    async def run_async(self):
        try:
            await anyio.sleep(self.seconds)
        except BaseException:
            self.cancelled = True
            raise
        return self.result


class Boom(AsyncNode):
    async def run_async(self):
        raise ValueError("exploded")


class Writer(AsyncNode):
    def __init__(self, name, key, value):
        super().__init__(name)
        self.key, self.value = key, value

    async def run_async(self):
        self.state.write_port(self.key, self.value)


class Counter(AgentState):
    count: int = 0
    text: str = ""


def run(root, state=None, **kwargs):
    state = state or StateManager(Counter)
    return TreeRunner(root, state, **kwargs).run()


def test_async_node_success_and_failure():
    assert run(Sleep("ok", 0.01)).status == Status.SUCCESS
    result = run(Sleep("no", 0.01, result=False))
    assert result.status == Status.FAILURE


def test_exception_becomes_failure_with_reason():
    result = run(py_trees.composites.Sequence("seq", memory=True, children=[Boom("boom")]))
    assert result.status == Status.FAILURE
    assert result.reason == "boom: ValueError: exploded"


def test_node_timeout_is_failure():
    node = Sleep("slow", 10)
    node.timeout = 0.05
    result = run(node)
    assert result.status == Status.FAILURE and "timed out after 0.05s" in result.reason


def test_runner_sleeps_while_waiting_instead_of_spinning():
    result = run(Sleep("wait", 0.5))
    assert result.status == Status.SUCCESS
    assert result.ticks <= 4  # start, (progress re-check), finish — not one tick per loop turn


def test_sequence_and_selector_with_memory_run_children_in_order():
    order = []

    class Note(AsyncNode):
        async def run_async(self):
            order.append(self.name)
            await anyio.sleep(0.01)
            return self.name != "fails"

    root = py_trees.composites.Sequence(
        "main",
        memory=True,
        children=[
            Note("a"),
            py_trees.composites.Selector(
                "pick", memory=True, children=[Note("fails"), Note("b"), Note("never")]
            ),
            Note("c"),
        ],
    )
    assert run(root).status == Status.SUCCESS
    assert order == ["a", "fails", "b", "c"]


def test_parallel_children_overlap():
    arrived = []

    class Meet(AsyncNode):
        """Finishes only once all five have started: one after another, the first never would."""

        async def run_async(self):
            arrived.append(self.name)
            while len(arrived) < 5:
                await anyio.sleep(0.01)
            return True

    root = py_trees.composites.Parallel(
        "both",
        policy=py_trees.common.ParallelPolicy.SuccessOnAll(),
        children=[Meet(f"m{i}") for i in range(5)],
    )
    result = TreeRunner(root, StateManager(Counter)).run(timeout=60)  # a hang guard, not a bound
    assert result.status == Status.SUCCESS, result.reason
    assert sorted(arrived) == [f"m{i}" for i in range(5)]


def test_parallel_success_on_one_cancels_the_others():
    slow = Sleep("slow", 30)
    root = py_trees.composites.Parallel(
        "race",
        policy=py_trees.common.ParallelPolicy.SuccessOnOne(),
        children=[Sleep("fast", 0.01), slow],
    )
    assert run(root).status == Status.SUCCESS
    assert slow.cancelled


def test_timeout_decorator_fires_without_other_events():
    root = py_trees.decorators.Timeout("limit", Sleep("forever", 60), duration=0.1)
    result = run(root)
    assert result.status == Status.FAILURE


def test_retry_decorator_makes_progress():
    attempts = []

    class Flaky(AsyncNode):
        async def run_async(self):
            attempts.append(1)
            return len(attempts) >= 3

    root = py_trees.decorators.Retry("retry", Flaky("flaky"), num_failures=5)
    assert run(root).status == Status.SUCCESS
    assert len(attempts) == 3


def test_plain_behaviour_raising_ends_the_run_cleanly():
    class Broken(py_trees.behaviour.Behaviour):
        def update(self):
            raise RuntimeError("bad update")

    result = run(Broken("broken"))
    assert result.status == Status.FAILURE
    assert "RuntimeError: bad update" in result.reason


def test_max_ticks_stops_a_run():
    root = py_trees.behaviours.Running("spin")
    result = TreeRunner(root, StateManager(Counter), max_ticks=3, idle_interval=0.001).run()
    assert result.status == Status.FAILURE and "max_ticks=3" in result.reason
    assert result.ticks == 3


def test_run_timeout_halts_and_cancels():
    node = Sleep("stuck", 60)
    result = TreeRunner(node, StateManager(Counter)).run(timeout=0.1)
    assert result.status == Status.FAILURE and "timed out after 0.1s" in result.reason
    assert node.cancelled
    assert node.status == Status.INVALID


def test_state_write_from_a_node_is_visible_and_inputs_are_applied():
    root = py_trees.composites.Sequence("seq", memory=True, children=[Writer("w", "text", "hi")])
    result = TreeRunner(root, StateManager(Counter)).run(inputs={"count": 5})
    assert result.state["text"] == "hi" and result.state["count"] == 5


def test_bad_input_is_refused_before_any_tick():
    runner = TreeRunner(Sleep("x", 0), StateManager(Counter))
    with pytest.raises(ValueError, match="count"):
        runner.run(inputs={"count": "not a number"})
    assert runner.tick_count == 0


def test_events_report_node_status_changes_and_trace_file(tmp_path):
    path = tmp_path / "trace.jsonl"
    root = py_trees.composites.Sequence("seq", memory=True, children=[Sleep("a", 0.01)])
    runner = TreeRunner(root, StateManager(Counter))
    with TraceWriter(path) as trace:
        runner.events.subscribe(trace)
        runner.run()
    events = read_trace(path)
    changes = [(e["node"], e["old"], e["new"]) for e in events if e["type"] == "node.status"]
    assert ("a", "INVALID", "RUNNING") in changes
    assert ("a", "RUNNING", "SUCCESS") in changes
    assert events[-1]["type"] == "tree.finished" and events[-1]["status"] == "SUCCESS"


def test_failing_event_subscriber_does_not_break_the_run():
    runner = TreeRunner(Sleep("a", 0.01), StateManager(Counter))
    runner.events.subscribe(lambda event: 1 / 0)
    assert runner.run().status == Status.SUCCESS


def test_halt_leaves_no_task_or_thread_behind():
    before = threading.active_count()
    nodes = [Sleep(f"n{i}", 60) for i in range(20)]
    root = py_trees.composites.Parallel(
        "all", policy=py_trees.common.ParallelPolicy.SuccessOnAll(), children=nodes
    )
    runner = TreeRunner(root, StateManager(Counter))
    runner.run(timeout=0.1)
    assert all(n.cancelled for n in nodes)
    assert runner.context.in_flight == 0
    assert threading.active_count() == before


@pytest.mark.anyio
async def test_arun_inside_an_event_loop_and_cancellation_from_outside():
    node = Sleep("long", 60)
    runner = TreeRunner(node, StateManager(Counter))
    with anyio.move_on_after(0.1):
        await runner.arun()
    assert node.cancelled and runner.context.in_flight == 0


def test_step_by_step_ticks_keep_work_running_between_calls():
    root = py_trees.composites.Sequence(
        "seq", memory=True, children=[Sleep("a", 0.05), Sleep("b", 0.05)]
    )
    with TreeRunner(root, StateManager(Counter)) as runner:
        statuses = [runner.tick()]
        deadline = time.monotonic() + 5
        while statuses[-1] == Status.RUNNING and time.monotonic() < deadline:
            time.sleep(0.02)
            statuses.append(runner.tick())
    assert statuses[0] == Status.RUNNING and statuses[-1] == Status.SUCCESS


def test_close_during_step_by_step_cancels_work():
    node = Sleep("long", 60)
    runner = TreeRunner(node, StateManager(Counter))
    assert runner.tick() == Status.RUNNING
    time.sleep(0.05)
    runner.close()
    assert node.cancelled


def test_two_runs_in_one_process_are_isolated():
    first, second = StateManager(Counter), StateManager(Counter)
    TreeRunner(Writer("w", "text", "first"), first).run()
    TreeRunner(Writer("w", "text", "second"), second).run()
    assert first.get("text") == "first" and second.get("text") == "second"
    assert first.namespace != second.namespace


def test_unbound_async_node_fails_clearly_under_a_bare_py_trees_tick():
    node = Sleep("bare", 0)
    node.tick_once()
    assert node.status == Status.FAILURE
    assert "TreeRunner" in node.feedback_message


def test_repeat_over_oneshot_does_not_stall():
    child = py_trees.decorators.OneShot(
        "once",
        py_trees.behaviours.Success("ok"),
        policy=py_trees.common.OneShotPolicy.ON_SUCCESSFUL_COMPLETION,
    )
    root = py_trees.decorators.Repeat("thrice", child, num_success=3)
    result = TreeRunner(root, StateManager(Counter)).run(timeout=10)
    assert result.status == Status.SUCCESS


def test_success_has_no_failure_reason_even_if_a_branch_failed():
    root = py_trees.composites.Selector(
        "pick", memory=True, children=[Sleep("fails", 0.01, result=False), Sleep("ok", 0.01)]
    )
    result = run(root)
    assert result.status == Status.SUCCESS and result.reason == ""


def test_a_blocking_run_after_step_by_step_ticks_leaves_ticking_working():
    first = Sleep("first", 0.01)
    with TreeRunner(first, StateManager(Counter)) as runner:
        assert runner.tick() == Status.RUNNING
        assert runner.run(timeout=5).status == Status.SUCCESS
        statuses = [runner.tick()]
        deadline = time.monotonic() + 5
        while statuses[-1] == Status.RUNNING and time.monotonic() < deadline:
            time.sleep(0.02)
            statuses.append(runner.tick())
    assert statuses[-1] == Status.SUCCESS


def test_wake_from_another_thread_never_blocks_the_writer():
    state = StateManager(Counter)
    runner = TreeRunner(Sleep("wait", 0.3), state)
    blocked = []

    def writer():
        started = time.monotonic()
        for i in range(50):
            state.set("count", i)
        blocked.append(time.monotonic() - started)

    thread = threading.Thread(target=writer)

    class StartWriter(AsyncNode):
        async def run_async(self):
            thread.start()
            await anyio.sleep(0.2)

    root = py_trees.composites.Parallel(
        "p",
        policy=py_trees.common.ParallelPolicy.SuccessOnAll(),
        children=[StartWriter("w"), Sleep("s", 0.3)],
    )
    runner = TreeRunner(root, state)
    assert runner.run(timeout=10).status == Status.SUCCESS
    thread.join(5)
    assert state.get("count") == 49 and blocked


class Held(AsyncNode):
    """Works until the test lets it go."""

    def __init__(self, name, gate):
        super().__init__(name)
        self.gate = gate

    async def run_async(self):
        await self.gate.wait()


def test_a_tick_that_writes_and_starts_work_waits_for_the_work_without_a_spare_tick():
    # A write, a step that ended and one that started are all the first tick changes: a second
    # tick would find the same statuses (a Sequence with memory resumes at its running child).
    seen = []

    async def main():
        state = StateManager(Counter)
        state.subscribe(lambda keys: seen.append(sorted(keys)))
        held = Held("held", anyio.Event())
        root = py_trees.composites.Sequence(
            "main", memory=True, children=[SetValues("write", {"count": 1}), held]
        )
        runner = TreeRunner(root, state)
        async with anyio.create_task_group() as group:
            group.start_soon(runner.arun)
            while not held.working:
                await anyio.sleep(0.001)
            await anyio.sleep(0.05)  # a spare tick, if any, happens meanwhile
            ticks = runner.tick_count
            held.gate.set()
        return ticks, runner

    ticks, runner = anyio.run(main)
    # tick 1 writes and starts `held`; tick 2, once its work ends, ends the run.
    assert ticks == 1 and runner.tick_count == 2 and seen == [["count"]]


@pytest.mark.parametrize("decorator", ["repeat", "retry", "inverter"])
def test_a_repeat_retry_or_inverter_over_running_work_waits_without_spare_ticks(decorator):
    # py_trees' Repeat, Retry and Inverter stay RUNNING, unchanged, while their child runs: no
    # tick is spent on them until the work ends (each unasked tick would cost a pacer's delay).
    async def main():
        gates = [anyio.Event(), anyio.Event()]
        body = py_trees.composites.Sequence(
            "body", memory=True, children=[Held("a", gates[0]), Held("b", gates[1])]
        )
        wrap = {
            "repeat": lambda: py_trees.decorators.Repeat("loop", body, num_success=1),
            "retry": lambda: py_trees.decorators.Retry("retry", body, num_failures=2),
            "inverter": lambda: py_trees.decorators.Inverter("not", body),
        }[decorator]
        runner = TreeRunner(wrap(), StateManager(Counter))
        seen = []
        async with anyio.create_task_group() as group:
            group.start_soon(runner.arun)
            for held, gate in zip(body.children, gates, strict=True):
                while not held.working:
                    await anyio.sleep(0.001)
                await anyio.sleep(0.05)  # a spare tick, if any, happens meanwhile
                seen.append(runner.tick_count)
                gate.set()
        return seen, runner.tick_count

    seen, total = anyio.run(main)
    # tick 1 starts `a`; tick 2 (a ended) starts `b`; tick 3 (b ended) ends the run.
    assert seen == [1, 2] and total == 3


def test_a_write_in_a_tick_still_reaches_an_earlier_reactive_check_at_once():
    # A Selector without memory looks again at its first child every tick: a value the same
    # tick wrote later must be seen now, not once the running work ends (it never would).
    class Set(AsyncNode):
        def update(self):  # writes during the tick itself, then succeeds
            self.state.write_port("count", 1)
            return Status.SUCCESS

    class Check(py_trees.behaviour.Behaviour):
        def __init__(self, state):
            super().__init__("count is 1")
            self.state_manager = state

        def update(self):
            return Status.SUCCESS if self.state_manager.get()["count"] == 1 else Status.FAILURE

    state = StateManager(Counter)
    forever = Held("forever", anyio.Event())
    root = py_trees.composites.Selector(
        "react",
        memory=False,
        children=[
            Check(state),
            py_trees.composites.Sequence("work", memory=True, children=[Set("set"), forever]),
        ],
    )
    result = TreeRunner(root, state).run(timeout=5)
    assert result.status == Status.SUCCESS and result.ticks == 2
    assert forever.status == Status.INVALID  # preempted: its work was cancelled


FIRST_RUN = """\
import sys
from jianmu_bt import tool
from jianmu_bt.nodes import ToolExecutor
from jianmu_bt.runtime import AgentState, StateManager, TreeRunner

@tool
def echo(x: int) -> int:
    \"\"\"Return x.\"\"\"
    return x

state = StateManager(AgentState)
state.set("actions", [{"name": "echo", "arguments": {"x": i}} for i in range(3)])
before = set(sys.modules)
result = TreeRunner(ToolExecutor([echo]), state).run()
print(result.status.name, sorted(set(sys.modules) - before))
"""


def test_a_process_first_run_imports_nothing_on_first_use():
    # The event loop backend comes with the runner's import: the first run of a process starts
    # as fast as the next ones (a structural check, no times).
    out = subprocess.run(
        [sys.executable, "-c", FIRST_RUN], capture_output=True, text=True, check=True, timeout=120
    )
    assert out.stdout.split(maxsplit=1) == ["SUCCESS", "[]\n"], out.stdout + out.stderr
