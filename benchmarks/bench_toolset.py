"""Per-call overhead of ToolSet.execute on a trivial two-argument tool, next to LangChain's @tool.

Overhead = time per call minus a direct call of the same function. Ours: `ToolSet.execute` of a
plain `@tool` as a new user writes it (a sync function, the default settings; an async one). The
anchor: LangChain's `@tool` on the same functions, `invoke` and `ainvoke`. Target: at least 10x
less overhead than LangChain's invoke. The `(tuned: blocking=False)` row declares the sync
function non-blocking, which a user must choose to do.

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
    default = ToolSet.from_tools([tool(add)])
    native = ToolSet.from_tools([tool(aadd)])
    inline = ToolSet.from_tools([tool(add, blocking=False)])
    lc_sync = lc.tool(add) if lc else None
    lc_async = lc.tool(aadd) if lc else None

    sync = {"direct": per_call(lambda: add(1, 2), calls)}
    if lc_sync:
        sync["lc_invoke"] = per_call(lambda: lc_sync.invoke(ARGS), calls // 4)
    t = interleave(sync, rounds)

    async def measure() -> dict[str, list[float]]:
        samplers = {
            "default": aper_call(lambda: default.execute("add", ARGS), calls // 2),
            "native": aper_call(lambda: native.execute("aadd", ARGS), calls),
            "inline": aper_call(lambda: inline.execute("add", ARGS), calls),
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
                "plain sync fn, default @tool: execute vs LangChain invoke",
                overhead("default"),
                overhead("lc_invoke"),
                f"{lc_name} invoke",
                10,
                missing,
                headline="toolset",
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
                "  plain sync fn, default @tool: execute vs ainvoke",
                overhead("default"),
                overhead("lc_thread"),
                f"{lc_name} ainvoke",
                None,
                missing or "LangChain's ainvoke of a sync function runs it in a worker thread",
            ),
            faster(
                "  (tuned: blocking=False) sync fn: execute vs invoke",
                overhead("inline"),
                overhead("lc_invoke"),
                f"{lc_name} invoke",
                None,
                missing,
            ),
            info("  direct call of the function (subtracted above)", direct),
        ],
    )


AREAS = {"toolset": toolset}

if __name__ == "__main__":
    sys.exit(main(AREAS))
