"""Tick overhead: our nodes ticked through `TreeRunner.tick()` next to plain py_trees behaviours.

- 10- and 100-node Sequences of trivial nodes: seconds per tick, ours through `TreeRunner.tick()`
  (the step-by-step API, called from synchronous code) next to `root.tick_once()` of the same
  tree of plain py_trees behaviours. Target: ours within 1.25x.
- 1,000 nodes: per-node tick overhead of a Sequence (`TreeRunner.tick()` vs `root.tick_once()` and
  `BehaviourTree.tick()`) and of a Parallel of async nodes whose work is done. Target: 1.25x.

Run: python benchmarks/bench_ticks.py [--quick]
"""

from __future__ import annotations

import gc
import sys
import time
from collections.abc import Callable
from pathlib import Path

import anyio
import py_trees
from py_trees.common import Status

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.harness import (
    Section,
    Settings,
    ainterleave,
    aper_call,
    interleave,
    per_call,
    within,
)
from benchmarks.suite import main
from jianmu_bt.runtime import AgentState, AsyncNode, ContextNode, StateManager, TreeRunner

N_NODES = 1000
SMALL = (10, 100)


# -- ticks: tick overhead ---------------------------------------------------------------------


class PlainNode(py_trees.behaviour.Behaviour):
    """A plain py_trees behaviour that succeeds at once."""

    def update(self) -> Status:
        return Status.SUCCESS


class SyncNode(ContextNode):
    """Our sync node kind (bound to the run's context) that succeeds at once."""

    def update(self) -> Status:
        return Status.SUCCESS


class InstantWork(AsyncNode):
    """An async node whose work ends at once."""

    async def run_async(self) -> bool:
        return True


def sequence(kind: type, size: int = N_NODES) -> py_trees.behaviour.Behaviour:
    """A Sequence (memory=False) of `size` nodes of `kind`: every tick ticks every child."""
    root = py_trees.composites.Sequence("root", memory=False)
    root.add_children([kind(f"n{i}") for i in range(size)])
    return root


def parallel(kind: type, size: int = N_NODES) -> py_trees.behaviour.Behaviour:
    """A Parallel (SuccessOnAll) of `size` nodes of `kind`."""
    policy = py_trees.common.ParallelPolicy.SuccessOnAll(synchronise=False)
    root = py_trees.composites.Parallel("root", policy=policy)
    root.add_children([kind(f"n{i}") for i in range(size)])
    return root


def per_node(tick: Callable[[], object], nodes: int = N_NODES, ticks: int = 3) -> Callable:
    """A sampler: seconds per node of `ticks` calls of `tick`."""

    def sample() -> float:
        start = time.perf_counter()
        for _ in range(ticks):
            tick()
        return (time.perf_counter() - start) / ticks / nodes

    return sample


def done_tick(runner: TreeRunner) -> Callable[[], float]:
    """Enter every AsyncNode (spawn), wait until all work ended, then time the tick that sees it."""

    def sample() -> float:
        runner.tick()
        while runner.context.in_flight:
            time.sleep(0.0005)
        gc.collect()  # the garbage of 1,000 finished tasks is the entering tick's, not this one's
        start = time.perf_counter()
        status = runner.tick()
        elapsed = time.perf_counter() - start
        assert status == Status.SUCCESS, status
        return elapsed / N_NODES

    return sample


def small_trees(settings: Settings) -> dict[str, list[float]]:
    """Seconds per tick of 10- and 100-node Sequences: ours through `TreeRunner.tick()` (what a
    user calls to tick step by step) next to plain py_trees' `root.tick_once()`."""
    samplers, runners = {}, []
    for size in SMALL:
        runner = TreeRunner(sequence(SyncNode, size), StateManager(AgentState))
        runners.append(runner)
        ticks = max(1, 3000 // size)
        samplers[f"ours{size}"] = per_call(runner.tick, ticks)
        samplers[f"plain{size}"] = per_call(sequence(PlainNode, size).tick_once, ticks)
    try:
        return interleave(samplers, rounds=settings.pick(15, 5))
    finally:
        for runner in runners:
            runner.close()


def ticks(settings: Settings) -> Section:
    """Our nodes through TreeRunner.tick() next to plain py_trees trees, per node."""
    small = small_trees(settings)
    plain_seq, plain_par = sequence(PlainNode), parallel(PlainNode)
    plain_tree = py_trees.trees.BehaviourTree(sequence(PlainNode))
    ours_seq = TreeRunner(sequence(SyncNode), StateManager(AgentState))
    ours_par = TreeRunner(parallel(InstantWork), StateManager(AgentState))
    with ours_seq, ours_par:
        t = interleave(
            {
                "plain": per_node(plain_seq.tick_once),
                "plain_tree": per_node(plain_tree.tick),
                "ours": per_node(ours_seq.tick),
                "plain_par": per_node(plain_par.tick_once),
                "ours_par": done_tick(ours_par),
            },
            rounds=settings.pick(31, 7),
        )
    runner = TreeRunner(parallel(InstantWork), StateManager(AgentState))

    async def full_run() -> None:
        result = await runner.arun()
        assert result.ok, result.reason

    full = anyio.run(ainterleave, {"full": aper_call(full_run, 1)}, settings.pick(15, 3))
    full_per_node = [x / N_NODES for x in full["full"]]
    return Section(
        "Tick overhead: 10, 100 and 1,000 trivial nodes (ratio ours / py_trees)",
        [
            *(
                within(
                    f"{size}-node Sequence: TreeRunner.tick() vs tick_once()",
                    small[f"ours{size}"],
                    small[f"plain{size}"],
                    "py_trees root.tick_once()",
                    1.25,
                    headline=f"tick{size}",
                )
                for size in SMALL
            ),
            within(
                "1,000 ContextNodes, Sequence: TreeRunner.tick()",
                t["ours"],
                t["plain"],
                "py_trees root.tick_once()",
                1.25,
            ),
            within(
                "  same, vs BehaviourTree.tick()",
                t["ours"],
                t["plain_tree"],
                "py_trees BehaviourTree.tick()",
                None,
            ),
            within(
                "1,000 AsyncNodes done, Parallel: TreeRunner.tick()",
                t["ours_par"],
                t["plain_par"],
                "py_trees Parallel tick_once()",
                1.25,
            ),
            within(
                "  AsyncNode full cycle (spawn, run, observe) in arun",
                full_per_node,
                t["plain_par"],
                "py_trees Parallel tick_once()",
                None,
                "a task per node: spawn, run, wake the runner, observe (async work, not a tick)",
            ),
        ],
    )


AREAS = {"ticks": ticks}

if __name__ == "__main__":
    sys.exit(main(AREAS))
