"""Per-call overhead of ToolSet.execute on a trivial two-argument tool, next to LangChain's @tool.

Overhead = time per call minus a direct call of the same function. Ours: `ToolSet.execute` of a
`@tool` (a sync function on the event loop, an async one, a sync one in a worker thread). The
anchor: LangChain's `@tool` on the same functions, `invoke` and `ainvoke`. Target: at least 10x
less overhead than LangChain's invoke.

Run: python benchmarks/bench_toolset.py [--quick]   (the anchor: pip install -e ".[bench]")
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.harness import (
    Section,
    Settings,
    ainterleave,
    aper_call,
    faster,
    info,
    interleave,
    optional,
    per_call,
)
from benchmarks.suite import main
from jianmu_bt import ToolSet, tool

ARGS = {"a": 1, "b": 2}


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


async def aadd(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def toolset(settings: Settings) -> Section:
    """Overhead per call of `ToolSet.execute` next to LangChain's `invoke`/`ainvoke`."""
    lc, missing = optional("langchain_core.tools")
    calls, rounds = settings.pick(2000, 300), settings.pick(15, 5)
    inline = ToolSet.from_tools([tool(add, blocking=False)])
    native = ToolSet.from_tools([tool(aadd)])
    thread = ToolSet.from_tools([tool(add)])
    lc_sync = lc.tool(add) if lc else None
    lc_async = lc.tool(aadd) if lc else None

    sync = {"direct": per_call(lambda: add(1, 2), calls)}
    if lc_sync:
        sync["lc_invoke"] = per_call(lambda: lc_sync.invoke(ARGS), calls // 4)
    t = interleave(sync, rounds)

    async def measure() -> dict[str, list[float]]:
        samplers = {
            "inline": aper_call(lambda: inline.execute("add", ARGS), calls),
            "native": aper_call(lambda: native.execute("aadd", ARGS), calls),
            "thread": aper_call(lambda: thread.execute("add", ARGS), calls // 4),
        }
        if lc_sync and lc_async:
            samplers["lc_ainvoke"] = aper_call(lambda: lc_async.ainvoke(ARGS), calls // 4)
            samplers["lc_thread"] = aper_call(lambda: lc_sync.ainvoke(ARGS), calls // 4)
        return await ainterleave(samplers, rounds)

    t |= asyncio.run(measure())
    direct = min(t["direct"])

    def overhead(name: str) -> list[float] | None:
        return [max(x - direct, 1e-9) for x in t[name]] if name in t else None

    lc_name = "LangChain @tool" if lc else "LangChain (missing)"
    return Section(
        "ToolSet.execute: per-call overhead (time per call minus a direct call)",
        [
            faster(
                "sync fn on the loop: execute vs LangChain invoke",
                overhead("inline"),
                overhead("lc_invoke"),
                f"{lc_name} invoke",
                10,
                missing,
            ),
            faster(
                "async fn: execute vs LangChain ainvoke",
                overhead("native"),
                overhead("lc_ainvoke"),
                f"{lc_name} ainvoke",
                10,
                missing,
            ),
            faster(
                "  sync fn in a worker thread: execute vs ainvoke",
                overhead("thread"),
                overhead("lc_thread"),
                f"{lc_name} ainvoke",
                None,
                missing or "both sides pay a worker-thread hop per call",
            ),
            info("  direct call of the function (subtracted above)", direct),
        ],
    )


AREAS = {"toolset": toolset}

if __name__ == "__main__":
    sys.exit(main(AREAS))
