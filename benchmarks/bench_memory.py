"""Many concurrent runs in one process: 10,000 runs of a small tree, their time and memory.

Ours: 10,000 `TreeRunner.arun()` coroutines, each a task of one `asyncio.TaskGroup` (as
`asyncio.gather` would run them; an anyio task group adds about 3.7 KiB of its own to every task),
each over its own `StateManager`, of a
Sequence of `SetValues` (writes `count`), a `ToolNode` whose async tool waits, and a `Condition`
(`count == 1`). Time: from building the first run to the end of the last, the tools released as
soon as every run waits in one (target at most 2 s). Memory is taken when every run is waiting
inside its tool (all in flight), as Python allocations since before the runs were built
(tracemalloc), divided by the runs (target at most 8 KiB a run).
The anchor for memory: as many plain py_trees `BehaviourTree`s of the same shape (a writer with
a blackboard client in a namespace of its own, a behaviour that stays RUNNING until released, a
reader), each ticked once so that all wait. Plain py_trees has no async work: its waiting node
is polled by ticks, where ours holds a task per run and per tool call.

Run: python benchmarks/bench_memory.py [--quick]
"""

from __future__ import annotations

import asyncio
import gc
import statistics
import sys
import time
from pathlib import Path

import anyio
import py_trees
from py_trees.common import Access, Status
from pydantic import BaseModel

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.harness import Section, Settings, Traced, info, limit, within
from benchmarks.suite import main
from jianmu_bt import Tool, tool
from jianmu_bt.nodes import Condition, SetValues, ToolNode
from jianmu_bt.runtime import RunResult, StateManager, TreeRunner

RUNS = 10_000


class SmallState(BaseModel):
    """The small tree's state."""

    count: int = 0
    answer: str | None = None


class Gate:
    """Counts the runs that reached the waiting step, and releases them all at once."""

    def __init__(self, runs: int) -> None:
        """Made in the event loop that runs the runs."""
        self.runs = runs
        self.waiting = 0
        self.all_waiting = anyio.Event()
        # One future all runs wait on: about 100 bytes a waiter, where an anyio.Event's wait()
        # takes 600. (No waiter is cancelled here: one that was would cancel the future.)
        self._open = asyncio.get_running_loop().create_future()

    def open(self) -> None:
        """Release every run."""
        self._open.set_result(None)

    def wait(self) -> asyncio.Future[None]:
        """Called by every run's tool, which awaits what it returns: released when opened.

        (A plain function: the tool's own coroutine is the only frame that waits.)"""
        self.waiting += 1
        if self.waiting == self.runs:
            self.all_waiting.set()
        return self._open


def gate_tool(gate: Gate) -> Tool:
    """The tool every run calls (built once: a tool is shared by the runs that use it)."""

    @tool(name="wait")
    async def wait() -> str:
        """Wait until the benchmark releases every run."""
        await gate.wait()
        return "done"

    return wait


def start_runs(group: asyncio.TaskGroup, runs: int, wait: Tool) -> list[asyncio.Task[RunResult]]:
    """Start `runs` runs of the small tree, each `arun()` a task of `group`, as a user would."""
    return [
        group.create_task(TreeRunner(small_tree(wait), StateManager(SmallState)).arun())
        for _ in range(runs)
    ]


def finished(tasks: list[asyncio.Task[RunResult]]) -> None:
    """Check that every run ended in SUCCESS."""
    results = [task.result() for task in tasks]
    assert all(result.ok for result in results), results[:1]


def small_tree(wait: Tool) -> py_trees.behaviour.Behaviour:
    """Our small tree: set a value, wait in a tool, check the value."""
    root = py_trees.composites.Sequence("run", memory=True)
    root.add_children(
        [
            SetValues("start", {"count": 1}),
            ToolNode(wait, output_key="answer"),
            Condition("check", "count == 1"),
        ]
    )
    return root


async def ours_per_run(runs: int) -> int:
    """Bytes per run while `runs` runs of the small tree wait at once."""
    gate = Gate(runs)
    wait = gate_tool(gate)
    with Traced() as memory:
        async with asyncio.TaskGroup() as group:
            tasks = start_runs(group, runs, wait)
            await gate.all_waiting.wait()
            alive = memory.now()
            gate.open()
    finished(tasks)
    return alive // runs


async def ours_seconds(runs: int, frozen: bool = False) -> float:
    """Seconds from building the first of `runs` runs to the end of the last (no tracing).

    `frozen` (a tuned variant, not the default path): the collector is paused while the runs
    start (`gc.disable()`), and once every run waits their objects are frozen (`gc.freeze()`,
    then `gc.enable()`), unfrozen after the last run has ended: no full pass walks the runs.
    """
    gate = Gate(runs)
    wait = gate_tool(gate)
    start = time.perf_counter()
    if frozen:
        gc.disable()
    try:
        async with asyncio.TaskGroup() as group:
            tasks = start_runs(group, runs, wait)
            await gate.all_waiting.wait()
            if frozen:
                gc.freeze()
                gc.enable()
            gate.open()
        elapsed = time.perf_counter() - start
    finally:
        if frozen:
            gc.enable()
            gc.unfreeze()
    finished(tasks)
    return elapsed


class Writer(py_trees.behaviour.Behaviour):
    """Writes count = 1 through a blackboard client in the tree's own namespace."""

    def __init__(self, name: str, namespace: str) -> None:
        super().__init__(name)
        self.board = self.attach_blackboard_client(namespace=namespace)
        self.board.register_key("count", access=Access.WRITE)

    def update(self) -> Status:
        self.board.count = 1
        return Status.SUCCESS


class Waiter(py_trees.behaviour.Behaviour):
    """RUNNING until the shared flag is set."""

    def __init__(self, name: str, flag: list[bool]) -> None:
        super().__init__(name)
        self.flag = flag

    def update(self) -> Status:
        return Status.SUCCESS if self.flag[0] else Status.RUNNING


class Reader(py_trees.behaviour.Behaviour):
    """SUCCESS when count == 1."""

    def __init__(self, name: str, namespace: str) -> None:
        super().__init__(name)
        self.board = self.attach_blackboard_client(namespace=namespace)
        self.board.register_key("count", access=Access.READ)

    def update(self) -> Status:
        return Status.SUCCESS if self.board.count == 1 else Status.FAILURE


def plain_tree(index: int, flag: list[bool]) -> py_trees.trees.BehaviourTree:
    """The same shape in plain py_trees, in a blackboard namespace of its own."""
    namespace = f"/plain/run_{index}"
    root = py_trees.composites.Sequence("run", memory=True)
    root.add_children(
        [Writer("start", namespace), Waiter("wait", flag), Reader("check", namespace)]
    )
    return py_trees.trees.BehaviourTree(root)


def plain_seconds(runs: int) -> float:
    """Seconds to build `runs` plain py_trees trees, tick each until all wait, then release
    them and tick each to its end."""
    flag = [False]
    start = time.perf_counter()
    trees = [plain_tree(i, flag) for i in range(runs)]
    for tree in trees:
        tree.tick()
    flag[0] = True
    for tree in trees:
        tree.tick()
    elapsed = time.perf_counter() - start
    assert all(tree.root.status == Status.SUCCESS for tree in trees)
    del trees
    py_trees.blackboard.Blackboard.clear()
    return elapsed


def plain_per_run(runs: int) -> int:
    """Bytes per run while `runs` plain py_trees trees wait at once."""
    flag = [False]
    with Traced() as memory:
        trees = [plain_tree(i, flag) for i in range(runs)]
        for tree in trees:
            tree.tick()
        assert all(tree.root.status == Status.RUNNING for tree in trees)
        alive = memory.now()
        flag[0] = True
        for tree in trees:
            tree.tick()
        assert all(tree.root.status == Status.SUCCESS for tree in trees)
    py_trees.blackboard.Blackboard.clear()
    return alive // runs


def memory(settings: Settings) -> Section:
    """10,000 concurrent runs of a small tree: time, and bytes per run next to plain py_trees."""
    runs, traced = RUNS, settings.pick(RUNS, RUNS // 5)
    anyio.run(ours_per_run, 50)  # warm-up: imports, caches, the event loop's first tasks
    seconds: list[float] = []
    plain_time: list[float] = []
    frozen: list[float] = []
    for _ in range(settings.pick(3, 1)):  # interleaved: a busier moment slows all three
        # Each round starts from a collected heap, as the first does: the previous round's
        # 10,000 finished trees are cyclic garbage (py_trees' parent links) that the next
        # round's full passes would otherwise walk and free on its clock.
        gc.collect()
        seconds.append(anyio.run(ours_seconds, runs))
        gc.collect()
        plain_time.append(plain_seconds(runs))
        gc.collect()
        frozen.append(anyio.run(ours_seconds, runs, True))
    ours: list[float] = []
    plain: list[float] = []
    for _ in range(settings.pick(2, 1)):
        ours.append(anyio.run(ours_per_run, traced))
        plain.append(plain_per_run(traced))
    return Section(
        f"{runs:,} concurrent runs of a small tree in one process (arun, default settings)",
        [
            limit(
                f"{runs:,} concurrent small runs: time until all are done",
                seconds,
                2.0,
                headline="runs_time",
            ),
            within(
                "  time vs plain py_trees trees, built and ticked to their end",
                seconds,
                plain_time,
                "plain py_trees trees",
                None,
                "plain py_trees has no async work: no task per run or per call",
            ),
            within(
                "  (tuned: collector paused, then frozen) time vs default",
                frozen,
                seconds,
                "the default path (row above)",
                None,
                "gc.disable() as runs start, gc.freeze() once all wait: no full pass walks them",
            ),
            limit(
                f"bytes per run, {traced:,} runs waiting at once",
                ours,
                8 * 1024,
                "bytes",
                "state, a runner, a run task and a tool-call task per run (tracemalloc)",
                headline="runs_memory",
            ),
            within(
                "  bytes per run vs plain py_trees trees",
                ours,
                plain,
                "plain py_trees trees",
                None,
                "plain py_trees polls its waiting node and has no async work",
                unit="bytes",
            ),
            info(
                f"  all {traced:,} runs of ours together", statistics.median(ours) * traced, "bytes"
            ),
        ],
    )


AREAS = {"memory": memory}

if __name__ == "__main__":
    sys.exit(main(AREAS))
