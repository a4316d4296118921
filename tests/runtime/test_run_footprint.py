"""What a run waiting on its tool keeps for the garbage collector to walk.

Each object a waiting run holds is walked by every full pass of the collector, and adds to the
allocations that start the next one: with thousands of runs waiting at once, a few objects more
per run cost a whole pass (benchmarks/bench_memory.py). The count is exact, so a change that
makes a run keep one more object shows here, not only as a slower benchmark.
"""

from __future__ import annotations

import asyncio
import gc

import anyio
import py_trees
from pydantic import BaseModel

from jianmu_bt import tool
from jianmu_bt.nodes import Condition, SetValues, ToolNode
from jianmu_bt.runtime import StateManager, TreeRunner

RUNS = 300
#: Objects per waiting run, counted below: the run's own (runner, state, context, nodes, the
#: tool call's task, cancel scope and coroutines) and this test's task and coroutines around it.
MOST_OBJECTS = 57


class Small(BaseModel):
    count: int = 0
    answer: str | None = None


async def _objects_per_waiting_run() -> float:
    release = asyncio.get_running_loop().create_future()
    waiting = 0
    all_waiting = anyio.Event()

    @tool(name="wait")
    async def wait() -> str:
        """Wait until released."""
        nonlocal waiting
        waiting += 1
        if waiting == RUNS:
            all_waiting.set()
        await release
        return "done"

    def small_tree() -> py_trees.behaviour.Behaviour:
        root = py_trees.composites.Sequence("run", memory=True)
        root.add_children(
            [
                SetValues("start", {"count": 1}),
                ToolNode(wait, output_key="answer"),
                Condition("check", "count == 1"),
            ]
        )
        return root

    results = []

    async def run(runner: TreeRunner) -> None:
        results.append(await runner.arun())

    gc.collect()
    before = len(gc.get_objects())
    async with asyncio.TaskGroup() as group:
        for _ in range(RUNS):
            group.create_task(run(TreeRunner(small_tree(), StateManager(Small))))
        await all_waiting.wait()
        gc.collect()
        alive = len(gc.get_objects()) - before
        release.set_result(None)
    assert len(results) == RUNS and all(result.ok for result in results)
    return alive / RUNS


def test_a_waiting_run_keeps_few_objects_for_the_collector() -> None:
    # The least of three counts: a thread another test left running can only add objects.
    per_run = min(anyio.run(_objects_per_waiting_run) for _ in range(3))
    assert per_run <= MOST_OBJECTS + 0.5, per_run
