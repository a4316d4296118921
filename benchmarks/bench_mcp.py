"""Round-trip latency of a trivial MCP tool call: MCPToolProvider next to the SDK's ClientSession.

Both sides call `add(a, b)` on our own MCP server (`python -m jianmu_bt.mcp serve`) in the same
run: over streamable HTTP both clients talk to the same server process; over stdio each client
spawns its own copy of the same server. Ours is the whole path a tree takes
(`ToolSet.call` -> MCPTool -> MCPClient -> ClientSession.call_tool -> ToolResult); the anchor is
the SDK's `ClientSession.call_tool` on a session the SDK's `mcp.Client` negotiated (the same
protocol version as ours). Calls alternate one by one (which side goes first alternates too);
the ratio is the median of the per-pair ratios. Target: ours within 1.1x of the anchor.

Run: python benchmarks/bench_mcp.py [--quick]
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.harness import Row, Section, Settings, ainterleave, aper_call, within
from benchmarks.suite import main
from jianmu_bt import ToolSet
from jianmu_bt.mcp import MCPToolProvider

ROOT = Path(__file__).resolve().parents[1]
TARGET = 1.1
SERVER_ARGS = ["-m", "jianmu_bt.mcp", "serve", "--tools", "bench_tools:add"]
ARGS = {"a": 1, "b": 2}

TOOLS_SOURCE = '''
from jianmu_bt import tool


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b
'''


async def compare(
    provider: MCPToolProvider, server: Any, settings: Settings
) -> dict[str, list[float]]:
    """Seconds per call through our provider and through the SDK's session, alternating."""
    from mcp import Client

    await provider.initialize()
    try:
        tools = ToolSet.from_tools(provider.get_tools())
        async with Client(server) as sdk:
            session = sdk.session
            await session.list_tools()
            result = await tools.call("add", ARGS)
            assert result.ok and result.output == 3, result  # typed: an outputSchema
            return await ainterleave(
                {
                    "ours": aper_call(lambda: tools.call("add", ARGS), 1),
                    "anchor": aper_call(lambda: session.call_tool("add", ARGS), 1),
                },
                rounds=settings.pick(2000, 200),
                warmup=settings.pick(200, 20),
            )
    finally:
        await provider.close()


def start_http_server(env: dict[str, str]) -> tuple[subprocess.Popen[str], str]:
    """Our MCP server over streamable HTTP on a free port, and its URL."""
    proc = subprocess.Popen(
        [sys.executable, *SERVER_ARGS, "--transport", "http", "--port", "0"],
        env={**os.environ, **env},
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    line = proc.stderr.readline()
    found = re.search(r"(http://\S+)", line)
    if not found:
        proc.kill()
        raise RuntimeError(f"the MCP server did not start: {line}{proc.stderr.read()}")
    return proc, found.group(1)


async def both_transports(settings: Settings, env: dict[str, str]) -> list[Row]:
    """A row for stdio (each client spawns its own server) and one for HTTP (one server)."""
    from mcp import StdioServerParameters, stdio_client

    rows = []
    stdio_provider = MCPToolProvider(command=sys.executable, args=SERVER_ARGS, env=env)
    stdio_params = StdioServerParameters(command=sys.executable, args=SERVER_ARGS, env=env)
    with open(os.devnull, "w") as quiet:  # the server's stderr, as ours captures it too
        t = await compare(stdio_provider, stdio_client(stdio_params, quiet), settings)
    rows.append(within("add(1, 2) over stdio", t["ours"], t["anchor"], "SDK ClientSession", TARGET))

    proc, url = start_http_server(env)
    try:
        t = await compare(MCPToolProvider(url=url), url, settings)
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    rows.append(
        within(
            "add(1, 2) over streamable HTTP", t["ours"], t["anchor"], "SDK ClientSession", TARGET
        )
    )
    return rows


def mcp(settings: Settings) -> Section:
    """A trivial MCP call through MCPToolProvider next to the SDK's ClientSession."""
    with tempfile.TemporaryDirectory() as tools_dir:
        (Path(tools_dir) / "bench_tools.py").write_text(TOOLS_SOURCE)
        # The server imports the tool from the temporary directory.
        env = {"PYTHONPATH": f"{tools_dir}{os.pathsep}{ROOT}"}
        rows = anyio.run(both_transports, settings, env)
    return Section("MCP tool-call round trip (ratio ours / SDK)", rows)


AREAS = {"mcp": mcp}

if __name__ == "__main__":
    sys.exit(main(AREAS))
