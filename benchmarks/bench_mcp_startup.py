"""Start-up of a tree's MCP servers: four stdio servers together next to the slowest one alone.

Each round starts our own server (`python -m jianmu_bt.mcp serve --tools calculator`) four times
on its own (through a one-server tree's ProviderSession: spawn, handshake, `tools/list`), and
then a tree with four such servers (prefixed `s0`..`s3`) at once; ours is the four-server start,
the anchor the slowest of that round's single starts. The servers start side by side, so the
target is at most 1.2x. Closing is not timed. A server's start is mostly CPU (importing the SDK),
so with fewer free cores than servers the ratio cannot go below servers / cores (2x for four
servers on two idle cores): read it next to the machine's load. A second row therefore sets
the four-server start next to what this machine allows: the slowest single start, or the CPU
time the four servers spent starting (read from /proc when the start returned) spread over the
cores this process may use, whichever is longer.

Run: python benchmarks/bench_mcp_startup.py [--quick]
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.harness import Section, Settings, within
from benchmarks.suite import main
from jianmu_bt.loader import load_tree

TARGET = 1.2
SERVERS = 4


def tree_text(count: int) -> str:
    """A tree whose tools are `count` MCP servers (each one of ours, over stdio)."""
    entries = "\n".join(
        f"  - mcp: {{command: {sys.executable}, args: [-m, jianmu_bt.mcp, serve, --tools, "
        f"calculator], prefix: s{index}, connect_timeout: 60}}"
        for index in range(count)
    )
    return f"tools:\n{entries}\nroot:\n  condition: {{check: 'True'}}\n"


def children_cpu() -> float:
    """CPU seconds (user + system) the live child processes of this process have used."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == os.getpid():
            total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / tick


async def start_once(count: int) -> tuple[float, float]:
    """Seconds to start a tree's `count` servers (its ProviderSession.open), and the CPU
    seconds the servers used meanwhile; then close them."""
    tree = load_tree(tree_text(count))
    try:
        began = time.perf_counter()
        await tree.providers.open()
        took = time.perf_counter() - began
        cpu = children_cpu()
        assert len(tree.providers.toolset or ()) == count, "every server's tool is there"
        await tree.providers.close()
        return took, cpu
    finally:
        tree.close()


async def rounds(settings: Settings) -> tuple[list[float], list[float], list[float]]:
    """Per round: the four-server start, the slowest of four single starts, and the longer of
    that and the four servers' start CPU over the usable cores (the machine's bound)."""
    cores = len(os.sched_getaffinity(0))
    together: list[float] = []
    slowest: list[float] = []
    bound: list[float] = []
    for _ in range(settings.pick(5, 2)):
        singles = [(await start_once(1))[0] for _ in range(SERVERS)]
        slowest.append(max(singles))
        took, cpu = await start_once(SERVERS)
        together.append(took)
        bound.append(max(slowest[-1], cpu / cores))
    return together, slowest, bound


def mcp_startup(settings: Settings) -> Section:
    """A tree with four stdio MCP servers, next to the slowest of them started alone, and next
    to the machine's bound for CPU-bound starts."""
    together, slowest, bound = anyio.run(rounds, settings)
    cores = len(os.sched_getaffinity(0))
    rows = [
        within(
            f"start a tree's {SERVERS} stdio MCP servers",
            together,
            slowest,
            "slowest single server",
            TARGET,
            note=f"side by side (ProviderSession.open); CPU-bound: at best servers/cores "
            f"({SERVERS}/{cores} here)",
        ),
        within(
            f"  same, next to the machine's bound ({cores} cores)",
            together,
            bound,
            "max(slowest, servers' CPU/cores)",
            TARGET,
            note="what the start would take if nothing but CPU held it",
        ),
    ]
    return Section("MCP servers of a tree: start-up (ratio ours / slowest alone)", rows)


AREAS = {"mcp_startup": mcp_startup}

if __name__ == "__main__":
    sys.exit(main(AREAS))
