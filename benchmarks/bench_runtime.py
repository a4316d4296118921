"""Tree runtime benchmarks: parallel fan-out and CPU while waiting (ticks: bench_ticks.py;
the 10-call batch: bench_batch.py).

- fanout: tools that each sleep 100 ms, run in parallel by a ToolExecutor in a TreeRunner with
  the default settings: 10 calls (target at most 115 ms) and 1,000 calls (target at most 0.3 s);
  `(tuned: ...)` rows set `max_concurrency` and are not the default path.
- idle: process CPU time while a tree waits on one slow tool. Target: under 2% of the wall time.

Run: python benchmarks/bench_runtime.py [--quick] [--only fanout,idle]
"""

from __future__ import annotations

import asyncio
import resource
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.anchors import executor_batch
from benchmarks.harness import (
    Section,
    Settings,
    ainterleave,
    aper_call,
    ideal,
    share,
)
from benchmarks.suite import main
from jianmu_bt import tool
from jianmu_bt.nodes import ToolExecutor, ToolNode
from jianmu_bt.runtime import AgentState, StateManager, TreeRunner

BATCH = 10
MANY = 1000
NAP = 0.1


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
    t = await ainterleave(
        {
            "default": aper_call(executor_batch("nap", [tool(nap)], BATCH), 1),
            "sync": aper_call(executor_batch("nap_sync", [tool(nap_sync)], BATCH), 1),
            "bound": aper_call(executor_batch("nap", [tool(nap)], BATCH, max_concurrency=10), 1),
        },
        rounds=settings.pick(7, 3),
    )
    t |= await ainterleave(
        {
            "many": aper_call(executor_batch("nap", [tool(nap)], MANY), 1),
            "many_tuned": aper_call(
                executor_batch("nap", [tool(nap)], MANY, max_concurrency=MANY), 1
            ),
        },
        rounds=settings.pick(5, 2),
        warmup=1,
    )
    return t


def fanout(settings: Settings) -> Section:
    """Batches of tools that sleep 100 ms, next to the ideal 100 ms."""
    default = getattr(ToolExecutor().options, "max_concurrency", "?")
    t = asyncio.run(measure_fan_out(settings))
    return Section(
        "Parallel fan-out of tools that sleep 100 ms (ratio ours / ideal)",
        [
            ideal("10 x 100 ms async, default settings", t["default"], NAP, 0.115),
            ideal("  10 x 100 ms sync (plain @tool), default settings", t["sync"], NAP, None),
            ideal("  (tuned: max_concurrency=10) 10 x 100 ms async", t["bound"], NAP, None),
            ideal(
                "1,000 x 100 ms async, default settings",
                t["many"],
                NAP,
                0.3,
                f"ExecutorOptions() as a user gets it (max_concurrency={default})",
                headline="fanout1000",
            ),
            ideal("  (tuned: max_concurrency=1000) 1,000 x 100 ms", t["many_tuned"], NAP, None),
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


AREAS = {"fanout": fanout, "idle": idle}

if __name__ == "__main__":
    sys.exit(main(AREAS))
