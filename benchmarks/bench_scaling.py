"""Scaling: time and memory against tree size and against concurrent tool calls, with a plot.

- Tree size (10, 100, 1,000, 10,000 nodes): one tick of a Sequence of trivial nodes through
  `TreeRunner.tick()` next to plain py_trees' `root.tick_once()`; and the memory of a built tree
  with its state and runner next to a plain py_trees `BehaviourTree` (tracemalloc).
- Concurrent tool calls (1, 10, 100, 1,000, each sleeping 100 ms): the wall time, process CPU
  time and peak memory of one batch through a ToolExecutor in a TreeRunner with the default
  settings, next to LangGraph's prebuilt ToolNode (`ainvoke`) and the ideal 100 ms.

Both are printed as tables and drawn to `<out>/scaling.png` (matplotlib, in the bench extra).

Run: python benchmarks/bench_scaling.py [--quick] [--out DIR]
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import py_trees

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.anchors import LangGraphBatch, executor_batch
from benchmarks.bench_ticks import PlainNode, SyncNode, sequence
from benchmarks.harness import (
    Section,
    Settings,
    Traced,
    ainterleave,
    fmt_bytes,
    fmt_time,
    interleave,
    optional,
    per_call,
)
from benchmarks.suite import main
from jianmu_bt import tool
from jianmu_bt.runtime import AgentState, StateManager, TreeRunner

SIZES = (10, 100, 1000, 10000)
CONCURRENCY = (1, 10, 100, 1000)
NAP = 0.1


# -- tree size --------------------------------------------------------------------------------


def tree_memory(size: int) -> tuple[int, int]:
    """Bytes of a built tree of `size` nodes: ours (tree, state, runner) and plain py_trees."""
    with Traced() as memory:
        runner = TreeRunner(sequence(SyncNode, size), StateManager(AgentState))
        ours = memory.now()
    runner.close()
    with Traced() as memory:
        plain = py_trees.trees.BehaviourTree(sequence(PlainNode, size))
        theirs = memory.now()
    del plain
    return ours, theirs


def by_tree_size(settings: Settings) -> list[dict[str, Any]]:
    """Per size: median seconds per tick (ours, py_trees) and bytes per tree."""
    points = []
    for size in SIZES:
        ticks = max(1, 3000 // size)  # about the same work per sample at every size
        plain = sequence(PlainNode, size)
        with TreeRunner(sequence(SyncNode, size), StateManager(AgentState)) as runner:
            t = interleave(
                {"ours": per_call(runner.tick, ticks), "plain": per_call(plain.tick_once, ticks)},
                rounds=settings.pick(9, 3),
            )
        ours_bytes, plain_bytes = tree_memory(size)
        points.append(
            {
                "nodes": size,
                "tick_ours": statistics.median(t["ours"]),
                "tick_plain": statistics.median(t["plain"]),
                "bytes_ours": ours_bytes,
                "bytes_plain": plain_bytes,
            }
        )
    return points


# -- concurrent calls -------------------------------------------------------------------------


async def nap(x: int) -> int:
    """Sleep 100 ms, return x."""
    await anyio.sleep(NAP)
    return x


def with_cpu(
    batch: Callable[[], Awaitable[None]], cpu: list[float]
) -> Callable[[], Awaitable[float]]:
    """A sampler: the wall seconds of one batch; its process CPU seconds go to `cpu`."""

    async def sample() -> float:
        wall, used = time.perf_counter(), time.process_time()
        await batch()
        cpu.append(time.process_time() - used)
        return time.perf_counter() - wall

    return sample


async def peak_memory(batch: Callable[[], Awaitable[None]]) -> int:
    """The most bytes allocated at once while one batch runs."""
    with Traced() as memory:
        await batch()
        return memory.peak()


async def by_concurrency(settings: Settings) -> tuple[list[dict[str, Any]], str]:
    """Per batch size: wall, CPU and peak memory of ours and of LangGraph's ToolNode."""
    lg, missing = LangGraphBatch.load([nap])
    points = []
    for calls in CONCURRENCY:
        ours = executor_batch("nap", [tool(nap)], calls)
        cpu: dict[str, list[float]] = {"ours": [], "langgraph": []}
        samplers = {"ours": with_cpu(ours, cpu["ours"])}
        theirs = lg.node_batch("nap", calls) if lg else None
        if theirs:
            samplers["langgraph"] = with_cpu(theirs, cpu["langgraph"])
        rounds = settings.pick(5, 2)
        t = await ainterleave(samplers, rounds, warmup=1)
        point: dict[str, Any] = {
            "calls": calls,
            "wall_ours": statistics.median(t["ours"]),
            "cpu_ours": statistics.median(cpu["ours"][-rounds:]),
            "bytes_ours": await peak_memory(ours),
        }
        if theirs:
            point |= {
                "wall_langgraph": statistics.median(t["langgraph"]),
                "cpu_langgraph": statistics.median(cpu["langgraph"][-rounds:]),
                "bytes_langgraph": await peak_memory(theirs),
            }
        points.append(point)
    return points, missing


# -- output -----------------------------------------------------------------------------------


def ratio(ours: float, theirs: float | None) -> str:
    """ours / theirs as text, or '-'."""
    return "-" if not theirs else f"{ours / theirs:.2f}x"


def size_table(points: list[dict[str, Any]]) -> str:
    """The tree-size table."""
    lines = [
        "Scaling with tree size: one tick of a Sequence of trivial nodes; memory of the built "
        "tree (ours: with its state and runner)",
        f"{'nodes':>7} {'tick ours':>11} {'py_trees':>11} {'ratio':>7}   "
        f"{'memory ours':>12} {'py_trees':>11} {'ratio':>7}",
    ]
    for p in points:
        lines.append(
            f"{p['nodes']:>7,} {fmt_time(p['tick_ours']):>11} {fmt_time(p['tick_plain']):>11} "
            f"{ratio(p['tick_ours'], p['tick_plain']):>7}   {fmt_bytes(p['bytes_ours']):>12} "
            f"{fmt_bytes(p['bytes_plain']):>11} {ratio(p['bytes_ours'], p['bytes_plain']):>7}"
        )
    return "\n".join(lines)


def concurrency_table(points: list[dict[str, Any]], missing: str) -> str:
    """The concurrent-calls table."""
    lines = [
        "Scaling with concurrent tool calls: one batch of N calls that each sleep 100 ms "
        "(ideal wall time 100 ms)",
        f"{'calls':>7} {'wall ours':>11} {'LangGraph':>11}   {'CPU ours':>10} {'LangGraph':>10}"
        f" {'ratio':>7}   {'peak mem ours':>13} {'LangGraph':>10}",
    ]
    for p in points:
        lg_wall, lg_cpu, lg_bytes = (
            p.get(k) for k in ("wall_langgraph", "cpu_langgraph", "bytes_langgraph")
        )
        lines.append(
            f"{p['calls']:>7,} {fmt_time(p['wall_ours']):>11} "
            f"{fmt_time(lg_wall) if lg_wall else '-':>11}   {fmt_time(p['cpu_ours']):>10} "
            f"{fmt_time(lg_cpu) if lg_cpu else '-':>10} {ratio(p['cpu_ours'], lg_cpu):>7}   "
            f"{fmt_bytes(p['bytes_ours']):>13} {fmt_bytes(lg_bytes) if lg_bytes else '-':>10}"
        )
    if missing:
        lines.append(f"LangGraph: {missing}")
    return "\n".join(lines)


@dataclass(frozen=True)
class Panel:
    """One chart: a measure of ours and of the anchor against the x values of `points`."""

    title: str
    x: str  # the key of the x value: "nodes" or "calls"
    key: str  # the measure: "tick", "bytes", "wall" ("<key>_ours", "<key>_<anchor_key>")
    anchor_key: str
    anchor: str
    scale: float  # from seconds or bytes to the unit of `ylabel`
    ylabel: str


PANELS = (
    Panel(
        "Tick time vs tree size\n(TreeRunner.tick() vs root.tick_once())",
        "nodes",
        "tick",
        "plain",
        "py_trees",
        1e3,
        "one tick (ms)",
    ),
    Panel(
        "Memory vs tree size\n(ours: tree, state and runner)",
        "nodes",
        "bytes",
        "plain",
        "py_trees",
        2**-20,
        "memory (MiB)",
    ),
    Panel(
        "Wall time of one batch of N calls of 100 ms\n(ToolExecutor run vs bare ToolNode)",
        "calls",
        "wall",
        "langgraph",
        "LangGraph ToolNode",
        1e3,
        "wall time (ms)",
    ),
    Panel(
        "Peak memory during that batch",
        "calls",
        "bytes",
        "langgraph",
        "LangGraph ToolNode",
        2**-20,
        "peak memory (MiB)",
    ),
)


def draw(ax: Any, panel: Panel, points: list[dict[str, Any]]) -> None:
    """One panel: ours, the anchor when measured, and the ideal for wall times."""
    xs = [p[panel.x] for p in points]
    ax.plot(xs, [p[f"{panel.key}_ours"] * panel.scale for p in points], "o-", label="jianmu_bt")
    theirs = f"{panel.key}_{panel.anchor_key}"
    if all(theirs in p for p in points):
        ax.plot(xs, [p[theirs] * panel.scale for p in points], "s--", label=panel.anchor)
    if panel.key == "wall":  # wall times stay near the ideal: a linear axis shows the gap
        ax.plot(xs, [NAP * 1e3] * len(xs), ":", color="grey", label="ideal (100 ms)")
    else:
        ax.set_yscale("log")
    ax.set_xscale("log")
    ax.set_xlabel("nodes in the tree" if panel.x == "nodes" else "concurrent tool calls")
    ax.set_ylabel(panel.ylabel)
    ax.set_title(panel.title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()


def plot(sizes: list[dict[str, Any]], calls: list[dict[str, Any]], path: Path) -> None:
    """Four panels: tick time and memory by tree size; wall time and memory by calls."""
    import matplotlib

    matplotlib.use("Agg")  # no display needed
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(11, 8.5), constrained_layout=True)
    for ax, panel in zip(axes.flat, PANELS, strict=True):
        draw(ax, panel, sizes if panel.x == "nodes" else calls)
    fig.suptitle("jianmu_bt scaling (medians; lower is better)")
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def scaling(settings: Settings) -> Section:
    """Both scaling sweeps: tables, JSON data, and the plot."""
    sizes = by_tree_size(settings)
    calls, missing = asyncio.run(by_concurrency(settings))
    section = Section(
        "Scaling",
        [],
        tables=[size_table(sizes), concurrency_table(calls, missing)],
        data={"tree_size": sizes, "concurrent_calls": calls},
    )
    _, no_plot = optional("matplotlib")
    if no_plot:
        section.tables.append(f"no plot: {no_plot}")
    else:
        path = settings.out / "scaling.png"
        plot(sizes, calls, path)
        section.files.append(path)
    return section


AREAS = {"scaling": scaling}

if __name__ == "__main__":
    sys.exit(main(AREAS))
