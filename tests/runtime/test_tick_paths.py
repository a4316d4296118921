"""Where ticks run and when they wait: step-by-step ticks in the caller's thread, the tick cap
only for ticks that no finished work asked for. No wall-clock times: threads, counts, order."""

import threading

import anyio
import py_trees
import pytest
from py_trees.common import Status

from jianmu_bt.runtime import (
    AgentState,
    AsyncNode,
    ContextNode,
    StateManager,
    TreeRunner,
    runner as runner_module,
)
from jianmu_bt.runtime.pacing import TICK_BURST, TickPacer


class WhereTicked(ContextNode):
    """A sync node that records the thread of each of its updates."""

    def __init__(self, name, threads):
        super().__init__(name)
        self.threads = threads

    def update(self):
        self.threads.append(threading.get_ident())
        return Status.SUCCESS


class Gate(AsyncNode):
    """Async work that waits until the test opens the gate; records its thread."""

    def __init__(self, name, gate, threads):
        super().__init__(name)
        self.gate, self.threads = gate, threads
        self.started = False

    async def run_async(self):
        self.started = True
        self.threads.append(threading.get_ident())
        while not self.gate.is_set():
            await anyio.sleep(0.001)
        return True


class Instant(AsyncNode):
    async def run_async(self):
        return True


def wait_until(predicate, limit=5000):
    event = threading.Event()
    for _ in range(limit):
        if predicate():
            return True
        event.wait(0.001)
    return predicate()


def test_a_tick_without_work_runs_in_the_calling_thread_and_starts_no_loop():
    threads = []
    root = py_trees.composites.Sequence(
        "seq", memory=False, children=[WhereTicked(f"n{i}", threads) for i in range(3)]
    )
    with TreeRunner(root, StateManager(AgentState)) as runner:
        assert runner.tick() == Status.SUCCESS
        assert runner.tick() == Status.SUCCESS
        assert not runner.has_background_loop  # nothing async: no event loop, no thread
    assert threads == [threading.get_ident()] * 6


def test_work_a_tick_starts_runs_in_the_loop_and_ticks_wait_for_it_there():
    gate, work_threads, tick_threads = threading.Event(), [], []
    work = Gate("work", gate, work_threads)
    root = py_trees.composites.Parallel(
        "p",
        policy=py_trees.common.ParallelPolicy.SuccessOnAll(synchronise=False),
        children=[work, WhereTicked("sync", tick_threads)],
    )
    here = threading.get_ident()
    with TreeRunner(root, StateManager(AgentState)) as runner:
        assert runner.tick() == Status.RUNNING  # inline: the work is handed over afterwards
        assert tick_threads == [here] and runner.has_background_loop
        assert wait_until(lambda: work.started)
        assert work_threads[0] != here
        assert runner.tick() == Status.RUNNING  # work in flight: this tick runs in the loop
        gate.set()
        assert wait_until(lambda: runner.context.in_flight == 0)
        assert runner.tick() == Status.SUCCESS  # nothing in flight again: back in this thread
    assert tick_threads[1] == work_threads[0]
    assert tick_threads[2] == here


def test_work_started_and_stopped_in_one_inline_tick_ends_cancelled():
    gate = threading.Event()
    slow = Gate("slow", gate, [])
    root = py_trees.composites.Parallel(
        "first wins",
        policy=py_trees.common.ParallelPolicy.SuccessOnOne(),
        children=[slow, py_trees.behaviours.Success("quick")],
    )
    with TreeRunner(root, StateManager(AgentState)) as runner:
        assert runner.tick() == Status.SUCCESS  # `slow` entered, then stopped in the same tick
        handle = slow._handle
        assert handle is not None and handle.cancelled
        assert wait_until(lambda: handle.done)
        assert runner.context.in_flight == 0 and handle.result is None
    gate.set()


def test_pacer_holds_self_driven_ticks_and_lets_work_through():
    pacer = TickPacer(10.0)
    assert [pacer.delay() for _ in range(TICK_BURST)] == [0.0] * TICK_BURST
    assert pacer.delay() > 0  # the burst is spent: ten a second from now on
    pacer.work_done()
    assert pacer.delay() == 0.0
    assert TickPacer(0).delay() == 0.0  # 0: no cap


class RecordingPacer(TickPacer):
    delays: list = []

    def delay(self):
        value = super().delay()
        RecordingPacer.delays.append(value)
        return value


@pytest.fixture
def delays(monkeypatch):
    RecordingPacer.delays = []
    monkeypatch.setattr(runner_module, "TickPacer", RecordingPacer)
    return RecordingPacer.delays


def test_ticks_that_follow_finished_work_never_wait_for_the_cap(delays):
    # 40 rounds of async work, at least two ticks each, under a cap of 5 ticks a second: each
    # tick follows finished work (or the change it made), so none of them waits.
    root = py_trees.decorators.Repeat("loop", Instant("work"), num_success=40)
    result = TreeRunner(root, StateManager(AgentState), max_ticks_per_second=5).run(timeout=60)
    assert result.status == Status.SUCCESS and result.ticks >= 80
    # A tick that follows finished work does not even ask the cap; those after a change do.
    assert 0 < len(delays) <= result.ticks - 40 and not any(delays)


def test_a_run_whose_ticks_all_follow_work_makes_no_pacer(delays):
    # The start, then the work's end: neither tick was self-driven, so no cap was asked.
    result = TreeRunner(Instant("work"), StateManager(AgentState)).run(timeout=60)
    assert result.status == Status.SUCCESS and result.ticks == 2
    assert delays == []


class Flip(py_trees.behaviour.Behaviour):
    """Succeeds and fails in turn: every tick changes its status, with no work in between."""

    def __init__(self, name):
        super().__init__(name)
        self.count = 0

    def update(self):
        self.count += 1
        return Status.SUCCESS if self.count % 2 else Status.FAILURE


def test_a_tree_that_keeps_changing_by_itself_is_held_to_the_cap(delays):
    child = py_trees.decorators.FailureIsSuccess("always", Flip("flip"))
    root = py_trees.decorators.Repeat("busy", child, num_success=3 * TICK_BURST)
    # 100 a second: a tick takes far less than the 10 ms between two, even on a busy machine,
    # so the bucket does not refill by itself while the ticks run.
    result = TreeRunner(root, StateManager(AgentState), max_ticks_per_second=100).run(timeout=60)
    assert result.status == Status.SUCCESS
    assert delays[:TICK_BURST] == [0.0] * TICK_BURST  # a burst goes at once
    assert sum(1 for d in delays if d > 0) >= TICK_BURST  # then it waits its turn
