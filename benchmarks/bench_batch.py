"""A batch of 10 trivial tool calls: our ToolExecutor next to LangGraph's prebuilt ToolNode.

From `actions` in state to the tool messages: the ToolExecutor node's own work next to the bare
ToolNode, and a whole `TreeRunner.arun()` of it next to a one-node LangGraph graph, for async
tools and plain sync tools with the default settings; then the node with a per-call timeout set
and with retries set, and the timeout batch again while another process keeps one core busy.
Target: at least 10x faster. The `(tuned: ...)` row is not the default path.

Run: python benchmarks/bench_batch.py [--quick]
"""

from __future__ import annotations

import asyncio
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.anchors import LangGraphBatch, executor_batch, executor_node_batch
from benchmarks.harness import Samples, Section, Settings, ainterleave, aper_call, faster, info
from benchmarks.suite import main
from jianmu_bt import tool
from jianmu_bt.nodes import ExecutorOptions
from jianmu_bt.tools.retry import RetryPolicy

BATCH = 10
SYNC_NOTE = (
    "a plain sync @tool with the default settings (no blocking=False); LangGraph runs sync tools "
    "in its executor's threads"
)
BUSY_NOTE = (
    "a `python -c 'while True: pass'` child keeps one of the cores busy while both are measured"
)


# -- batch: 10 trivial calls ------------------------------------------------------------------


async def aecho(x: int) -> int:
    """Return x."""
    return x


def echo(x: int) -> int:
    """Return x."""
    return x


TIMEOUT = ExecutorOptions(call_timeout=30)
RETRIES = ExecutorOptions(retry=RetryPolicy.from_retries(2))


def anchors(lg: LangGraphBatch | None, n: int) -> dict[str, Callable[[], Awaitable[float]]]:
    """LangGraph's samplers: bare ToolNode and 1-node graph, async tools and sync tools."""
    if lg is None:
        return {}
    return {
        "node_async": aper_call(lg.node_batch("aecho", BATCH), n),
        "node_sync_a": aper_call(lg.node_batch("echo", BATCH), n),
        "node_sync_s": aper_call(lg.node_batch("echo", BATCH, sync=True), n),
        "graph_async": aper_call(lg.graph_batch("aecho", BATCH), n),
        "graph_sync_a": aper_call(lg.graph_batch("echo", BATCH), n),
        "graph_sync_s": aper_call(lg.graph_batch("echo", BATCH, sync=True), n),
    }


def fastest_sync(t: Samples) -> Samples:
    """For sync tools, LangGraph's faster entry point (invoke or ainvoke) in each round."""
    for kind in ("node", "graph"):
        if f"{kind}_sync_a" in t:
            pairs = zip(t[f"{kind}_sync_a"], t[f"{kind}_sync_s"], strict=True)
            t[f"{kind}_sync"] = [min(p) for p in pairs]
    return t


async def measure_batches(settings: Settings) -> tuple[Samples, str]:
    """Samples per contender (seconds per batch), and why LangGraph is missing (or '')."""
    lg, missing = LangGraphBatch.load([aecho, echo])
    n = settings.pick(20, 5)  # batches per sample
    sync = [tool(echo)]  # a plain sync function, the default settings
    samplers = {
        "ours_async": aper_call(executor_batch("aecho", [tool(aecho)], BATCH), n),
        "ours_sync": aper_call(executor_batch("echo", sync, BATCH), n),
        "ours_inline": aper_call(executor_batch("echo", [tool(echo, blocking=False)], BATCH), n),
        "ours_node": aper_call(executor_node_batch("aecho", [tool(aecho)], BATCH), n),
        "ours_node_sync": aper_call(executor_node_batch("echo", sync, BATCH), n),
        "timeout": aper_call(executor_node_batch("echo", sync, BATCH, TIMEOUT), n),
        "retries": aper_call(executor_node_batch("echo", sync, BATCH, RETRIES), n),
    }
    t = await ainterleave(samplers | anchors(lg, n), rounds=settings.pick(12, 3))
    return fastest_sync(t), missing


async def measure_busy(settings: Settings) -> Samples:
    """The timeout batch next to the bare ToolNode while another process keeps a core busy."""
    lg, _ = LangGraphBatch.load([aecho, echo])
    if lg is None:
        return {}
    n = settings.pick(20, 5)
    samplers = {
        "busy": aper_call(executor_node_batch("echo", [tool(echo)], BATCH, TIMEOUT), n),
        "node_sync_a": aper_call(lg.node_batch("echo", BATCH), n),
        "node_sync_s": aper_call(lg.node_batch("echo", BATCH, sync=True), n),
    }
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        return fastest_sync(await ainterleave(samplers, rounds=settings.pick(8, 3)))
    finally:
        spinner.kill()  # our own child, by its handle
        spinner.wait()


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
    busy = asyncio.run(measure_busy(settings))
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
                "10 sync calls, call_timeout set: executor vs ToolNode",
                t["timeout"],
                t.get("node_sync"),
                f"{node}, faster (a)invoke",
                10,
                sync_note,
                headline="batch_timeout",
            ),
            faster(
                "10 sync calls, retries set: executor vs ToolNode",
                t["retries"],
                t.get("node_sync"),
                f"{node}, faster (a)invoke",
                10,
                sync_note,
                headline="batch_retries",
            ),
            faster(
                "10 sync calls, call_timeout set, a core kept busy",
                busy.get("busy", []) or t["timeout"],
                busy.get("node_sync"),
                f"{node}, faster (a)invoke",
                10,
                missing or BUSY_NOTE,
                headline="batch_busy",
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
                "  (tuned: blocking=False) 10 sync calls: arun",
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


AREAS = {"batch": batch}

if __name__ == "__main__":
    sys.exit(main(AREAS))
