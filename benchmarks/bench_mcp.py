"""Round-trip latency of a trivial MCP tool call: MCPToolProvider next to the SDK's ClientSession.

Both sides call `add(a, b)` on our own MCP server (`python -m jianmu_bt.mcp serve`) in the same
run: over streamable HTTP both clients talk to the same server process; over stdio each client
spawns its own copy of the same server. Ours is the whole path a tree takes
(`ToolSet.call` -> MCPTool -> MCPClient -> ClientSession.call_tool -> ToolResult); the anchor is
the SDK's `ClientSession.call_tool` on a session the SDK's `mcp.Client` negotiated (the same
protocol version as ours). Batches alternate between the two; medians are compared.
Target: ours within 1.1x of the anchor.

Run: python benchmarks/bench_mcp.py
"""

from __future__ import annotations

import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import fmt_time

from jianmu_bt import ToolSet
from jianmu_bt.mcp import MCPToolProvider

ROOT = Path(__file__).resolve().parent.parent
CALLS, WARMUP = 2000, 200
TARGET = 1.1
SERVER_ARGS = ["-m", "jianmu_bt.mcp", "serve", "--tools", "bench_tools:add"]
# The server imports the tool from a temporary directory put on its PYTHONPATH.
ENV: dict[str, str] = {}

TOOLS_SOURCE = '''
from jianmu_bt import tool


@tool(blocking=False)
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b
'''


async def timed(fn: Callable[[], Awaitable[object]]) -> float:
    start = time.perf_counter()
    await fn()
    return time.perf_counter() - start


async def compare(
    ours: Callable[[], Awaitable[object]], anchor: Callable[[], Awaitable[object]]
) -> tuple[float, float]:
    """Median seconds per call of each, after a warm-up.

    Calls alternate one by one (and which side goes first alternates too), so both sides see
    the same machine load; the median discards the outliers that load causes.
    """
    for _ in range(WARMUP):
        await ours()
        await anchor()
    ours_s, anchor_s = [], []
    for i in range(CALLS):
        if i % 2:
            anchor_s.append(await timed(anchor))
            ours_s.append(await timed(ours))
        else:
            ours_s.append(await timed(ours))
            anchor_s.append(await timed(anchor))
    return statistics.median(ours_s), statistics.median(anchor_s)


async def measure(provider: MCPToolProvider, server: object) -> tuple[float, float]:
    from mcp import Client

    await provider.initialize()
    tools = ToolSet.from_tools(provider.get_tools())
    args = {"a": 1, "b": 2}
    try:
        async with Client(server) as sdk:  # type: ignore[arg-type]
            session = sdk.session
            await session.list_tools()
            result = await tools.call("add", args)
            assert result.ok and result.output == "3", result

            async def ours() -> object:
                return await tools.call("add", args)

            async def anchor() -> object:
                return await session.call_tool("add", args)

            return await compare(ours, anchor)
    finally:
        await provider.close()


def start_http_server() -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, *SERVER_ARGS, "--transport", "http", "--port", "0"],
        env={**os.environ, **ENV},
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    line = proc.stderr.readline()
    found = re.search(r"(http://\S+)", line)
    if not found:
        proc.kill()
        sys.exit(f"the MCP server did not start: {line}{proc.stderr.read()}")
    return proc, found.group(1)


def report(rows: list[tuple[str, float, float]]) -> None:
    print(f"\nMCP tool-call round trip (median of {CALLS} calls each, alternating)")
    header = (
        f"{'transport':<10} {'ours':>10} {'SDK ClientSession':>18} {'ours/SDK':>9} "
        f"{'target':>8}  met"
    )
    print(header)
    print("-" * len(header))
    for what, ours, anchor in rows:
        ratio = ours / anchor
        met = "yes" if ratio <= TARGET else "NO"
        print(
            f"{what:<10} {fmt_time(ours):>10} {fmt_time(anchor):>18} {ratio:>8.2f}x "
            f"{'<=' + format(TARGET, 'g') + 'x':>8}  {met}"
        )


async def main() -> None:
    with tempfile.TemporaryDirectory() as tools_dir:
        (Path(tools_dir) / "bench_tools.py").write_text(TOOLS_SOURCE)
        ENV["PYTHONPATH"] = f"{tools_dir}{os.pathsep}{ROOT}"
        report(await run_all())


async def run_all() -> list[tuple[str, float, float]]:
    from mcp import StdioServerParameters, stdio_client

    rows = []
    stdio_provider = MCPToolProvider(command=sys.executable, args=SERVER_ARGS, env=ENV)
    stdio_params = StdioServerParameters(command=sys.executable, args=SERVER_ARGS, env=ENV)
    with open(os.devnull, "w") as quiet:  # the server's stderr, as ours captures it too
        rows.append(("stdio", *await measure(stdio_provider, stdio_client(stdio_params, quiet))))

    proc, url = start_http_server()
    try:
        rows.append(("http", *await measure(MCPToolProvider(url=url), url)))
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    return rows


if __name__ == "__main__":
    anyio.run(main)
