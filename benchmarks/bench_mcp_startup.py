"""Start-up of a tree's MCP servers: four stdio servers together next to the slowest one alone.

Each round starts our own server (`python -m jianmu_bt.mcp serve --tools calculator`) four times
on its own (through a one-server tree's ProviderSession: spawn, handshake, `tools/list`), and
then a tree with four such servers (prefixed `s0`..`s3`) at once; ours is the four-server start,
the anchor the slowest of that round's single starts. The servers start side by side, so the
target is at most 1.2x. Closing is not timed. A server's start is mostly CPU (importing the SDK),
so with fewer free cores than servers the ratio cannot go below servers / cores (2x for four
servers on two idle cores): read it next to the machine's load.

Run: python benchmarks/bench_mcp_startup.py [--quick]
"""

from __future__ import annotations

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


async def start_once(count: int) -> float:
    """Seconds to start a tree's `count` servers (its ProviderSession.open), then close them."""
    tree = load_tree(tree_text(count))
    try:
        began = time.perf_counter()
        await tree.providers.open()
        took = time.perf_counter() - began
        assert len(tree.providers.toolset or ()) == count, "every server's tool is there"
        await tree.providers.close()
        return took
    finally:
        tree.close()


async def rounds(settings: Settings) -> tuple[list[float], list[float]]:
    """Per round: the four-server start, and the slowest of four single starts."""
    together: list[float] = []
    slowest: list[float] = []
    for _ in range(settings.pick(5, 2)):
        singles = [await start_once(1) for _ in range(SERVERS)]
        slowest.append(max(singles))
        together.append(await start_once(SERVERS))
    return together, slowest


def mcp_startup(settings: Settings) -> Section:
    """A tree with four stdio MCP servers, next to the slowest of them started alone."""
    together, slowest = anyio.run(rounds, settings)
    row = within(
        f"start a tree's {SERVERS} stdio MCP servers",
        together,
        slowest,
        "slowest single server",
        TARGET,
        note="side by side (ProviderSession.open); CPU-bound: at best servers/cores",
    )
    return Section("MCP servers of a tree: start-up (ratio ours / slowest alone)", [row])


AREAS = {"mcp_startup": mcp_startup}

if __name__ == "__main__":
    sys.exit(main(AREAS))
