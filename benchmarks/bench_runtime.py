"""Tree runtime benchmarks (issue 3): tick overhead, a 10-call batch, parallel fan-out, idle CPU.

(a) Per-node tick overhead on 1,000 trivial nodes: our nodes ticked through `TreeRunner.tick()`
    next to plain py_trees behaviours ticked with `root.tick_once()` (and `BehaviourTree.tick()`).
    Target: ours within 1.25x.
(b) One batch of 10 trivial tool calls, from `actions` in state to the tool messages: a
    ToolExecutor run by `TreeRunner.arun()`, next to LangGraph's prebuilt ToolNode on the same
    functions (async tools and sync tools). Target: at least 10x faster.
(c) Tools that each sleep 100 ms, run in parallel by a ToolExecutor in a TreeRunner: 10 calls
    (target at most 115 ms) and 1,000 calls (issue 9's target: at most 0.5 s).
(d) Process CPU time while a tree waits 2 s on one slow tool. Target: under 2% of the wall time.

Contenders take turns inside every round (rotated order) after warm-up rounds, so a busy machine
slows all of them alike; the table shows medians, and each ratio is the median of the per-round
ratios. Method, machine and what the numbers mean: docs/performance.md.

Run: python benchmarks/bench_runtime.py [a] [b] [c] [d]   (anchors: pip install -e ".[bench]")
"""

from __future__ import annotations

import asyncio
import gc
import os
import platform
import resource
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import anyio
import py_trees
from py_trees.common import Status

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import fmt_time

from jianmu_bt import tool
from jianmu_bt.nodes import ToolExecutor, ToolNode
from jianmu_bt.runtime import AgentState, AsyncNode, ContextNode, StateManager, TreeRunner

N_NODES = 1000
BATCH = 10
NAP = 0.1


@dataclass
class Check:
    """One measured line: ours, the anchor, the ratio the target is about, and the verdict."""

    what: str
    ours: float
    anchor: float | None
    anchor_name: str
    ratio: str
    target: str
    met: bool | None
    share: bool = False  # ours is a fraction (CPU / wall), not seconds


Samples = dict[str, list[float]]


def interleave(samplers: dict[str, Callable[[], float]], rounds: int, warmup: int = 2) -> Samples:
    """Samples of each sampler; every sampler takes a turn in every round, in rotated order."""
    names = list(samplers)
    samples: Samples = {name: [] for name in names}
    for index in range(warmup + rounds):
        shift = index % len(names)
        for name in names[shift:] + names[:shift]:
            value = samplers[name]()
            if index >= warmup:
                samples[name].append(value)
    return samples


async def ainterleave(
    samplers: dict[str, Callable[[], Awaitable[float]]], rounds: int, warmup: int = 2
) -> Samples:
    """`interleave` for async samplers."""
    names = list(samplers)
    samples: Samples = {name: [] for name in names}
    for index in range(warmup + rounds):
        shift = index % len(names)
        for name in names[shift:] + names[:shift]:
            value = await samplers[name]()
            if index >= warmup:
                samples[name].append(value)
    return samples


def paired(top: list[float], bottom: list[float]) -> float:
    """Median of the per-round ratios top/bottom (robust to load that drifts between rounds)."""
    if len(top) != len(bottom):
        return statistics.median(top) / statistics.median(bottom)
    return statistics.median(a / b for a, b in zip(top, bottom, strict=True))


def slower(what: str, ours: list, anchor: list, name: str, limit: float | None) -> Check:
    """A row where ours should stay within `limit` times the anchor (ratio = ours / anchor)."""
    ratio = paired(ours, anchor)
    met = None if limit is None else ratio <= limit
    target = f"<={limit:g}x" if limit else "-"
    median = statistics.median
    return Check(what, median(ours), median(anchor), name, f"{ratio:.2f}x", target, met)


def faster(what: str, ours: list, anchor: list, name: str, factor: float | None) -> Check:
    """A row where ours should be `factor` times faster (ratio = anchor / ours)."""
    ratio = paired(anchor, ours)
    met = None if factor is None else ratio >= factor
    target = f">={factor:g}x" if factor else "-"
    median = statistics.median
    return Check(what, median(ours), median(anchor), name, f"{ratio:.1f}x", target, met)


def within(what: str, ours: list, ideal: float, limit: float | None, target: str = "") -> Check:
    """A wall-time row against the ideal time (ratio = ours / ideal) and an absolute limit."""
    value = statistics.median(ours)
    met = None if limit is None else value <= limit
    return Check(what, value, ideal, "ideal", f"{value / ideal:.2f}x", target or "-", met)


# -- (a) tick overhead ------------------------------------------------------------------------


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


def sequence(kind: type) -> py_trees.behaviour.Behaviour:
    """A Sequence (memory=False) of N_NODES nodes of `kind`: every tick ticks every child."""
    root = py_trees.composites.Sequence("root", memory=False)
    root.add_children([kind(f"n{i}") for i in range(N_NODES)])
    return root


def parallel(kind: type) -> py_trees.behaviour.Behaviour:
    """A Parallel (SuccessOnAll) of N_NODES nodes of `kind`."""
    policy = py_trees.common.ParallelPolicy.SuccessOnAll(synchronise=False)
    root = py_trees.composites.Parallel("root", policy=policy)
    root.add_children([kind(f"n{i}") for i in range(N_NODES)])
    return root


def per_node(tick: Callable[[], object], ticks: int = 3) -> Callable[[], float]:
    """A sampler: seconds per node of `ticks` calls of `tick`."""

    def sample() -> float:
        start = time.perf_counter()
        for _ in range(ticks):
            tick()
        return (time.perf_counter() - start) / ticks / N_NODES

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


def bench_ticks() -> list[Check]:
    """(a): our nodes through TreeRunner.tick() next to plain py_trees trees."""
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
            rounds=31,
        )
    full = anyio.run(full_cycle)
    return [
        slower(
            "(a) 1,000 ContextNodes, Sequence: TreeRunner.tick()",
            t["ours"],
            t["plain"],
            "py_trees root.tick_once()",
            1.25,
        ),
        slower(
            "    same, vs BehaviourTree.tick()",
            t["ours"],
            t["plain_tree"],
            "py_trees BehaviourTree.tick()",
            None,
        ),
        slower(
            "(a) 1,000 AsyncNodes done, Parallel: TreeRunner.tick()",
            t["ours_par"],
            t["plain_par"],
            "py_trees Parallel tick_once()",
            1.25,
        ),
        slower(
            "    AsyncNode full cycle (spawn, run, observe) in arun",
            full,
            t["plain_par"],
            "py_trees Parallel tick_once()",
            None,
        ),
    ]


async def full_cycle() -> list[float]:
    """Per node: a run of a Parallel of 1,000 AsyncNodes, from the first tick to SUCCESS."""
    runner = TreeRunner(parallel(InstantWork), StateManager(AgentState))

    async def sample() -> float:
        start = time.perf_counter()
        result = await runner.arun()
        assert result.ok, result.reason
        return (time.perf_counter() - start) / N_NODES

    return (await ainterleave({"full": sample}, rounds=15))["full"]  # samples


# -- (b) a batch of 10 trivial calls ----------------------------------------------------------


async def aecho(x: int) -> int:
    """Return x."""
    return x


def echo(x: int) -> int:
    """Return x."""
    return x


def executor_batch(
    name: str, tools: list, count: int = BATCH, **options: object
) -> Callable[[], Awaitable[None]]:
    """One batch as a user sees it: actions written to state, a run, the tool messages."""
    state = StateManager(AgentState)
    runner = TreeRunner(ToolExecutor(tools, **options), state)

    async def batch() -> None:
        calls = [{"id": f"call_{i}", "name": name, "arguments": {"x": i}} for i in range(count)]
        state.set("messages", [])  # the ids repeat: earlier answers would mark them done
        state.set("actions", calls)
        result = await runner.arun()
        assert result.ok and len(result.state["messages"]) == count, result.reason

    return batch


def timed(batch: Callable[[], Awaitable[None]], repeat: int) -> Callable[[], Awaitable[float]]:
    """A sampler: seconds per batch over `repeat` batches in a row."""

    async def sample() -> float:
        start = time.perf_counter()
        for _ in range(repeat):
            await batch()
        return (time.perf_counter() - start) / repeat

    return sample


class LangGraphAnchor:
    """LangGraph's prebuilt ToolNode on the same functions: bare, and as a one-node graph."""

    def __init__(self) -> None:
        try:
            from langchain_core.messages import AIMessage
            from langchain_core.tools import tool as lc_tool
            from langgraph.graph import END, START, MessagesState, StateGraph
            from langgraph.prebuilt import ToolNode as LangGraphToolNode
            from langgraph.runtime import Runtime
        except ImportError:
            sys.exit("langgraph/langchain-core are not installed: pip install -e '.[bench]'")
        self.message = AIMessage
        self.node = LangGraphToolNode([lc_tool(aecho), lc_tool(echo)])
        # Outside a graph the node asks for a runtime in its config (see FIELD-NOTES.md).
        self.config = {"configurable": {"__pregel_runtime": Runtime()}}
        builder = StateGraph(MessagesState)
        builder.add_node("tools", self.node)
        builder.add_edge(START, "tools")
        builder.add_edge("tools", END)
        self.graph = builder.compile()

    def _input(self, name: str) -> dict:
        calls = [{"id": f"call_{i}", "name": name, "args": {"x": i}} for i in range(BATCH)]
        return {"messages": [self.message(content="", tool_calls=calls)]}

    async def node_batch(self, name: str, sync: bool = False) -> None:
        """One batch through the bare ToolNode (`invoke` or `ainvoke`)."""
        if sync:
            out = self.node.invoke(self._input(name), self.config)
        else:
            out = await self.node.ainvoke(self._input(name), self.config)
        assert len(out["messages"]) == BATCH

    async def graph_batch(self, name: str, sync: bool = False) -> None:
        """One batch through a compiled graph whose only node is the ToolNode."""
        if sync:
            out = self.graph.invoke(self._input(name))
        else:
            out = await self.graph.ainvoke(self._input(name))
        assert len(out["messages"]) == BATCH + 1  # the AI message and one answer per call


async def bench_batches() -> list[Check]:
    """(b): one batch of 10 calls through a ToolExecutor next to LangGraph's ToolNode."""
    lg = LangGraphAnchor()
    direct_state = StateManager(AgentState)
    direct = ToolExecutor([tool(aecho)])
    TreeRunner(direct, direct_state)  # binds the node to the state; run_async is then called

    async def ours_direct() -> None:
        direct_state.set("messages", [])
        calls = [{"id": f"c{i}", "name": "aecho", "arguments": {"x": i}} for i in range(BATCH)]
        direct_state.set("actions", calls)
        await direct.run_async()
        assert len(direct_state.get("messages")) == BATCH

    n = 20  # batches per sample
    t = await ainterleave(
        {
            "ours_async": timed(executor_batch("aecho", [tool(aecho)]), n),
            "ours_sync": timed(executor_batch("echo", [tool(echo)]), n),
            "ours_inline": timed(executor_batch("echo", [tool(echo, blocking=False)]), n),
            "ours_direct": timed(ours_direct, n),
            "node_async": timed(lambda: lg.node_batch("aecho"), n),
            "node_sync_a": timed(lambda: lg.node_batch("echo"), n),
            "node_sync_s": timed(lambda: lg.node_batch("echo", sync=True), n),
            "graph_async": timed(lambda: lg.graph_batch("aecho"), n),
            "graph_sync_a": timed(lambda: lg.graph_batch("echo"), n),
            "graph_sync_s": timed(lambda: lg.graph_batch("echo", sync=True), n),
        },
        rounds=12,
        warmup=2,
    )
    # For sync tools the anchor is LangGraph's faster entry point (invoke or ainvoke) each round.
    node_sync = [min(p) for p in zip(t["node_sync_a"], t["node_sync_s"], strict=True)]
    graph_sync = [min(p) for p in zip(t["graph_sync_a"], t["graph_sync_s"], strict=True)]
    ours_async, ours_sync = t["ours_async"], t["ours_sync"]
    return [
        faster(
            "(b) 10 async calls, executor node vs bare ToolNode",
            t["ours_direct"],
            t["node_async"],
            "LangGraph ToolNode.ainvoke",
            10,
        ),
        faster(
            "(b) 10 async calls, arun vs one-node graph",
            ours_async,
            t["graph_async"],
            "LangGraph graph.ainvoke (ToolNode)",
            10,
        ),
        faster(
            "(b) 10 sync calls, arun vs bare ToolNode",
            ours_sync,
            node_sync,
            "LangGraph ToolNode, faster (a)invoke",
            10,
        ),
        faster(
            "(b) 10 sync calls, arun vs one-node graph",
            ours_sync,
            graph_sync,
            "LangGraph graph, faster (a)invoke",
            10,
        ),
        faster(
            "    10 sync calls, blocking=False (on the loop), arun",
            t["ours_inline"],
            node_sync,
            "LangGraph ToolNode, faster (a)invoke",
            None,
        ),
        faster(
            "    10 async calls, whole tree run (arun) vs bare node",
            ours_async,
            t["node_async"],
            "LangGraph ToolNode.ainvoke",
            None,
        ),
    ]


# -- (c) parallel fan-out -------------------------------------------------------------------------


async def nap(x: int) -> int:
    """Sleep 100 ms, return x."""
    await anyio.sleep(NAP)
    return x


def nap_sync(x: int) -> int:
    """Sleep 100 ms in a worker thread, return x."""
    time.sleep(NAP)
    return x


async def bench_fan_out() -> list[Check]:
    """(c): batches of tools that sleep 100 ms, next to the ideal 100 ms."""
    default = ToolExecutor().max_concurrency
    t = await ainterleave(
        {
            "default": timed(executor_batch("nap", [tool(nap)]), 1),
            "bound": timed(executor_batch("nap", [tool(nap)], max_concurrency=BATCH), 1),
            "sync": timed(executor_batch("nap_sync", [tool(nap_sync)], max_concurrency=BATCH), 1),
        },
        rounds=7,
    )
    many = await ainterleave(
        {"many": timed(executor_batch("nap", [tool(nap)], 1000, max_concurrency=1000), 1)},
        rounds=5,
        warmup=1,
    )
    many_default = [await timed(executor_batch("nap", [tool(nap)], 1000), 1)()]
    return [
        within(
            f"(c) 10 x 100 ms async, default max_concurrency={default}",
            t["default"],
            NAP,
            0.115,
            "<=115 ms",
        ),
        within("(c) 10 x 100 ms async, max_concurrency=10", t["bound"], NAP, 0.115, "<=115 ms"),
        within("    10 x 100 ms sync (threads), max_concurrency=10", t["sync"], NAP, None),
        within("(c) 1,000 x 100 ms async, max_concurrency=1000", many["many"], NAP, 0.5, "<=0.5 s"),
        within("    1,000 x 100 ms async, default (one run)", many_default, NAP, None),
    ]


# -- (d) CPU while waiting ----------------------------------------------------------------------


async def slow() -> str:
    """Wait 2 s."""
    await anyio.sleep(2.0)
    return "done"


def slow_sync() -> str:
    """Wait 2 s in a worker thread."""
    time.sleep(2.0)
    return "done"


def idle_cpu(fn: Callable[..., object], runs: int = 3) -> float:
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


def bench_idle() -> list[Check]:
    """(d): the share of a core a tree uses while it waits 2 s on one tool."""
    rows = []
    for label, fn in (("async tool", slow), ("sync tool (a thread)", slow_sync)):
        share = idle_cpu(fn)
        what = f"(d) CPU / wall, waiting 2 s on one {label}"
        if label != "async tool":
            what = f"    CPU / wall, waiting 2 s on one {label}"
        rows.append(Check(what, share, None, "-", f"{share:.2%}", "<2%", share < 0.02, True))
    return rows


# -- output -------------------------------------------------------------------------------------


def show(value: float | None, row: Check) -> str:
    """A cell: a time in its best unit, a CPU share as a percentage, or '-'."""
    if value is None:
        return "-"
    return f"{value:.2%}" if row.share else fmt_time(value)


def print_checks(rows: list[Check]) -> None:
    """measure | ours | anchor | ratio | target | met | anchor."""
    header = f"{'measure':<56} {'ours':>10} {'anchor':>10} {'ratio':>8} {'target':>9}  met  anchor"
    print(header)
    print("-" * len(header))
    for row in rows:
        met = "-" if row.met is None else ("yes" if row.met else "NO")
        print(
            f"{row.what:<56} {show(row.ours, row):>10} {show(row.anchor, row):>10} "
            f"{row.ratio:>8} {row.target:>9}  {met:<4} {row.anchor_name}"
        )


def installed(package: str) -> str:
    """The installed version of `package`, or 'not installed'."""
    try:
        return version(package)
    except PackageNotFoundError:
        return "not installed"


def main() -> None:
    """Run the parts named on the command line (a, b, c, d; all by default), print one table."""
    parts = set("".join(sys.argv[1:])) or set("abcd")  # e.g. `bench_runtime.py b c`
    if not parts <= set("abcd"):
        sys.exit(f"unknown part(s) {''.join(sorted(parts - set('abcd')))}: use a, b, c or d")
    print(
        f"Python {platform.python_version()} on {platform.machine()}, "
        f"{len(os.sched_getaffinity(0))} CPUs; "
        + ", ".join(f"{p} {installed(p)}" for p in ("py_trees", "anyio", "pydantic", "langgraph"))
    )
    rows = bench_ticks() if "a" in parts else []
    rows += asyncio.run(bench_batches()) if "b" in parts else []
    rows += asyncio.run(bench_fan_out()) if "c" in parts else []
    rows += bench_idle() if "d" in parts else []
    print(
        "\nratio: (a) ours/anchor, per node; (b) anchor/ours, per batch; "
        "(c) ours/ideal, wall per batch; (d) CPU/wall"
    )
    print_checks(rows)


if __name__ == "__main__":
    main()
