"""Tree runtime benchmarks: tick overhead, a 10-call batch, parallel fan-out, CPU while waiting.

- ticks: per-node tick overhead on 1,000 trivial nodes, our nodes ticked through
  `TreeRunner.tick()` next to plain py_trees behaviours ticked with `root.tick_once()` (and
  `BehaviourTree.tick()`). Target: ours within 1.25x.
- batch: one batch of 10 trivial tool calls, from `actions` in state to the tool messages: the
  ToolExecutor node, and a whole `TreeRunner.arun()` of it, next to LangGraph's prebuilt ToolNode
  bare and in a one-node graph (async tools and sync tools). Target: at least 10x faster.
- fanout: tools that each sleep 100 ms, run in parallel by a ToolExecutor in a TreeRunner:
  10 calls (target at most 115 ms) and 1,000 calls (target at most 0.5 s).
- idle: process CPU time while a tree waits on one slow tool. Target: under 2% of the wall time.

Run: python benchmarks/bench_runtime.py [--quick] [--only ticks,batch,fanout,idle]
"""

from __future__ import annotations

import asyncio
import gc
import resource
import statistics
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import anyio
import py_trees
from py_trees.common import Status

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.anchors import LangGraphBatch, executor_batch, executor_node_batch
from benchmarks.harness import (
    Section,
    Settings,
    ainterleave,
    aper_call,
    faster,
    ideal,
    info,
    interleave,
    share,
    within,
)
from benchmarks.suite import main
from jianmu_bt import tool
from jianmu_bt.nodes import ToolExecutor, ToolNode
from jianmu_bt.runtime import AgentState, AsyncNode, ContextNode, StateManager, TreeRunner

N_NODES = 1000
BATCH = 10
NAP = 0.1
SYNC_NOTE = (
    "sync tools run in worker threads, so a blocking function cannot stall the tree; a batch hands "
    "its calls over together and gets the results back in one event-loop wake-up, which costs "
    "about 0.1 ms a batch here (docs/performance.md)"
)


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


def ticks(settings: Settings) -> Section:
    """Our nodes through TreeRunner.tick() next to plain py_trees trees, per node."""
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
        "Tick overhead per node, 1,000 trivial nodes (ratio ours / py_trees)",
        [
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


# -- batch: 10 trivial calls ------------------------------------------------------------------


async def aecho(x: int) -> int:
    """Return x."""
    return x


def echo(x: int) -> int:
    """Return x."""
    return x


async def measure_batches(settings: Settings) -> tuple[dict[str, list[float]], str]:
    """Samples per contender (seconds per batch), and why LangGraph is missing (or '')."""
    lg, missing = LangGraphBatch.load([aecho, echo])
    n = settings.pick(20, 5)  # batches per sample
    samplers = {
        "ours_async": aper_call(executor_batch("aecho", [tool(aecho)], BATCH), n),
        "ours_sync": aper_call(executor_batch("echo", [tool(echo)], BATCH), n),
        "ours_inline": aper_call(executor_batch("echo", [tool(echo, blocking=False)], BATCH), n),
        "ours_node": aper_call(executor_node_batch("aecho", [tool(aecho)], BATCH), n),
        "ours_node_sync": aper_call(executor_node_batch("echo", [tool(echo)], BATCH), n),
    }
    if lg is not None:
        samplers |= {
            "node_async": aper_call(lg.node_batch("aecho", BATCH), n),
            "node_sync_a": aper_call(lg.node_batch("echo", BATCH), n),
            "node_sync_s": aper_call(lg.node_batch("echo", BATCH, sync=True), n),
            "graph_async": aper_call(lg.graph_batch("aecho", BATCH), n),
            "graph_sync_a": aper_call(lg.graph_batch("echo", BATCH), n),
            "graph_sync_s": aper_call(lg.graph_batch("echo", BATCH, sync=True), n),
        }
    t = await ainterleave(samplers, rounds=settings.pick(12, 3))
    if lg is not None:  # for sync tools: LangGraph's faster entry point (invoke or ainvoke)
        for kind in ("node", "graph"):
            pairs = zip(t[f"{kind}_sync_a"], t[f"{kind}_sync_s"], strict=True)
            t[f"{kind}_sync"] = [min(p) for p in pairs]
    return t, missing


def thread_round_trip(rounds: int) -> float:
    """Median seconds for a wake-up of a sleeping thread and its answer (two lock hand-offs):
    the floor of any hop to a worker thread and back on this machine."""
    ping, pong = threading.Lock(), threading.Lock()
    ping.acquire()
    pong.acquire()

    def answer() -> None:
        for _ in range(rounds):
            ping.acquire()
            pong.release()

    other = threading.Thread(target=answer)
    other.start()
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        ping.release()
        pong.acquire()
        times.append(time.perf_counter() - start)
    other.join()
    return statistics.median(times)


def batch(settings: Settings) -> Section:
    """One batch of 10 trivial calls: ToolExecutor next to LangGraph's ToolNode."""
    t, missing = asyncio.run(measure_batches(settings))
    floor = thread_round_trip(settings.pick(2000, 300))
    node, graph = "LangGraph ToolNode", "LangGraph 1-node graph"
    sync_note = missing or SYNC_NOTE
    return Section(
        "A batch of 10 trivial tool calls (ratio LangGraph / ours)",
        [
            faster(
                "10 async calls: executor node vs bare ToolNode",
                t["ours_node"],
                t.get("node_async"),
                f"{node}.ainvoke",
                10,
                missing,
            ),
            faster(
                "10 async calls: tree run (arun) vs 1-node graph",
                t["ours_async"],
                t.get("graph_async"),
                f"{graph}.ainvoke",
                10,
                missing,
            ),
            faster(
                "10 sync calls: executor node vs bare ToolNode",
                t["ours_node_sync"],
                t.get("node_sync"),
                f"{node}, faster (a)invoke",
                10,
                sync_note,
            ),
            faster(
                "10 sync calls: tree run (arun) vs 1-node graph",
                t["ours_sync"],
                t.get("graph_sync"),
                f"{graph}, faster (a)invoke",
                10,
                sync_note,
            ),
            faster(
                "  10 sync calls: tree run (arun) vs bare ToolNode",
                t["ours_sync"],
                t.get("node_sync"),
                f"{node}, faster (a)invoke",
                None,
                missing,
            ),
            faster(
                "  10 sync calls, blocking=False (on the loop): arun",
                t["ours_inline"],
                t.get("node_sync"),
                f"{node}, faster (a)invoke",
                None,
                missing,
            ),
            faster(
                "  10 async calls: tree run (arun) vs bare ToolNode",
                t["ours_async"],
                t.get("node_async"),
                f"{node}.ainvoke",
                None,
                missing,
            ),
            info(
                "  wake a sleeping thread and back (floor of a hop)",
                floor,
                note="two lock hand-offs: every hop to a worker thread and back pays it",
            ),
        ],
    )


# -- fanout: parallel sleeping calls ----------------------------------------------------------


async def nap(x: int) -> int:
    """Sleep 100 ms, return x."""
    await anyio.sleep(NAP)
    return x


def nap_sync(x: int) -> int:
    """Sleep 100 ms in a worker thread, return x."""
    time.sleep(NAP)
    return x


async def measure_fan_out(settings: Settings) -> dict[str, list[float]]:
    """Seconds per batch of sleeping calls, per contender."""
    rounds = settings.pick(7, 3)
    t = await ainterleave(
        {
            "default": aper_call(executor_batch("nap", [tool(nap)], BATCH), 1),
            "bound": aper_call(executor_batch("nap", [tool(nap)], BATCH, max_concurrency=10), 1),
            "sync": aper_call(
                executor_batch("nap_sync", [tool(nap_sync)], BATCH, max_concurrency=10), 1
            ),
        },
        rounds=rounds,
    )
    many = executor_batch("nap", [tool(nap)], 1000, max_concurrency=1000)
    t |= await ainterleave({"many": aper_call(many, 1)}, rounds=settings.pick(5, 2), warmup=1)
    t["many_default"] = [await aper_call(executor_batch("nap", [tool(nap)], 1000), 1)()]
    return t


def fanout(settings: Settings) -> Section:
    """Batches of tools that sleep 100 ms, next to the ideal 100 ms."""
    default = ToolExecutor().options.max_concurrency
    t = asyncio.run(measure_fan_out(settings))
    return Section(
        "Parallel fan-out of tools that sleep 100 ms (ratio ours / ideal)",
        [
            ideal(
                f"10 x 100 ms async, default max_concurrency={default}", t["default"], NAP, 0.115
            ),
            ideal("10 x 100 ms async, max_concurrency=10", t["bound"], NAP, 0.115),
            ideal("  10 x 100 ms sync (threads), max_concurrency=10", t["sync"], NAP, None),
            ideal("1,000 x 100 ms async, max_concurrency=1000", t["many"], NAP, 0.5),
            ideal(
                f"  1,000 x 100 ms async, default max_concurrency={default}",
                t["many_default"],
                NAP,
                None,
                f"max_concurrency={default} bounds one batch: 1,000 calls run in waves",
            ),
        ],
    )


# -- idle: CPU while waiting --------------------------------------------------------------------


def idle_cpu(fn: Callable[..., object], runs: int) -> float:
    """Median of process CPU seconds / wall seconds over runs of a tree waiting on `fn`."""
    shares = []
    for _ in range(runs):
        runner = TreeRunner(ToolNode(tool(fn)), StateManager(AgentState))
        usage = resource.getrusage(resource.RUSAGE_SELF)
        cpu, wall = time.process_time(), time.perf_counter()
        result = runner.run()
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        after = resource.getrusage(resource.RUSAGE_SELF)
        rusage = after.ru_utime + after.ru_stime - usage.ru_utime - usage.ru_stime
        assert result.ok, result.reason
        shares.append(max(cpu, rusage) / wall)
    return statistics.median(shares)


def idle(settings: Settings) -> Section:
    """The share of a core a tree uses while it waits on one slow tool."""
    wait, runs = (2.0, 3) if not settings.quick else (0.5, 1)

    async def slow() -> str:
        """Wait."""
        await anyio.sleep(wait)
        return "done"

    def slow_sync() -> str:
        """Wait in a worker thread."""
        time.sleep(wait)
        return "done"

    return Section(
        "CPU while a tree waits on one slow tool (CPU seconds / wall seconds)",
        [
            share(f"CPU / wall, waiting {wait:g} s on one async tool", idle_cpu(slow, runs), 0.02),
            share(
                f"CPU / wall, waiting {wait:g} s on one sync tool (a thread)",
                idle_cpu(slow_sync, runs),
                0.02,
            ),
        ],
    )


AREAS = {"batch": batch, "ticks": ticks, "fanout": fanout, "idle": idle}

if __name__ == "__main__":
    sys.exit(main(AREAS))
