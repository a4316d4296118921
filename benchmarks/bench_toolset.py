"""Per-call overhead of ToolSet.execute on a trivial two-argument tool.

Compared in one run with a direct function call and with LangChain's `@tool` on the same function
(`pip install -e ".[bench]"`). Overhead = per-call time minus the direct call. Target: at least 10x
less overhead than LangChain's invoke.

Run: python benchmarks/bench_toolset.py
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import Row, per_call, per_call_async, print_table

from jianmu_bt import ToolSet, tool

CALLS, REPEATS = 2000, 15


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


async def aadd(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def main() -> None:
    try:
        from langchain_core.tools import tool as lc_tool
    except ImportError:
        sys.exit("langchain-core is not installed: pip install -e '.[bench]'")

    args = {"a": 1, "b": 2}
    ours_inline = ToolSet.from_tools([tool(add, blocking=False)])
    ours_async = ToolSet.from_tools([tool(aadd)])
    ours_thread = ToolSet.from_tools([tool(add)])
    lc_sync, lc_async = lc_tool(add), lc_tool(aadd)

    direct = per_call(lambda: add(1, 2), CALLS, REPEATS)
    lc_invoke = per_call(lambda: lc_sync.invoke(args), CALLS // 4, REPEATS)

    async def measure():
        return (
            await per_call_async(lambda: ours_inline.execute("add", args), CALLS, REPEATS),
            await per_call_async(lambda: ours_async.execute("aadd", args), CALLS, REPEATS),
            await per_call_async(lambda: lc_async.ainvoke(args), CALLS // 4, REPEATS),
            await per_call_async(lambda: ours_thread.execute("add", args), CALLS // 4, REPEATS),
            await per_call_async(lambda: lc_sync.ainvoke(args), CALLS // 4, REPEATS),
        )

    inline, async_fn, lc_ainvoke, thread, lc_sync_ainvoke = asyncio.run(measure())

    def overhead(t: float) -> float:
        return max(t - direct, 1e-9)

    print(f"direct call of the function: {direct * 1e6:.3f} us")
    print_table(
        "Per-call overhead (time per call minus a direct call); ratio = anchor / ours",
        [
            Row(
                "sync fn on the loop: execute vs LangChain invoke",
                overhead(inline),
                overhead(lc_invoke),
                "langchain invoke",
                10,
            ),
            Row(
                "async fn: execute vs LangChain ainvoke",
                overhead(async_fn),
                overhead(lc_ainvoke),
                "langchain ainvoke",
                10,
            ),
            Row(
                "sync fn in a worker thread: execute vs ainvoke",
                overhead(thread),
                overhead(lc_sync_ainvoke),
                "langchain ainvoke",
                None,
            ),
        ],
    )


if __name__ == "__main__":
    main()
