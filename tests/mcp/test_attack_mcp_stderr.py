"""Attack class 7b: a stdio MCP server that floods stderr costs bounded memory (and no disk).

Only the last `stderr_limit` bytes (64 KiB by default) are kept; error messages quote the tail,
so the latest lines (the ones that explain a failure) are the ones shown.
"""

from __future__ import annotations

import io
import tracemalloc

import anyio
import mcp
import mcp.client.stdio
import mcp.shared.message
import mcp_types
import pytest
from mcp_test_support import HERE, PYTHON

from jianmu_bt.mcp import MCPClient, MCPConnectionError, MCPServerConfig
from jianmu_bt.mcp.stdio import StderrTail

pytestmark = pytest.mark.anyio

SPAWNING_SERVER = str(HERE / "mcp_spawning_server.py")
FLOOD_MB = 50
#: Peak Python allocations allowed while 50 MB of stderr stream through (about 0.5 MB seen).
PEAK_LIMIT = 8 * 1024 * 1024
#: The SDK is imported lazily on first use; its import-time allocations are not the flood's.
SDK_MODULES = (mcp, mcp.client.stdio, mcp.shared.message, mcp_types)


def flooding(*options: str, **client_options: object) -> MCPClient:
    return MCPClient(
        command=PYTHON,
        args=[SPAWNING_SERVER, "--flood", str(FLOOD_MB), *options],
        timeout=60,
        connect_timeout=60,
        **client_options,  # type: ignore[arg-type]
    )


async def test_a_server_that_floods_stderr_and_dies_is_reported_with_the_tail() -> None:
    client = flooding("--exit")
    tracemalloc.start()
    try:
        with pytest.raises(MCPConnectionError) as caught:
            await client.connect()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    message = str(caught.value)
    assert "END-OF-FLOOD" in message and "giving up after the flood" in message
    assert len(message) < 4000  # the tail, not 50 MB
    assert peak < PEAK_LIMIT, f"reading {FLOOD_MB} MB of stderr peaked at {peak} bytes"


async def test_a_live_server_that_flooded_stderr_keeps_only_the_tail() -> None:
    client = flooding()
    tracemalloc.start()
    try:
        async with client:
            assert "echo" in [t.name for t in await client.list_tools()]
            with anyio.fail_after(30):
                while client.stderr_bytes_seen < FLOOD_MB * 1024 * 1024:
                    await anyio.sleep(0.02)
            kept = client.stderr_tail(limit=10**9)
            _, peak = tracemalloc.get_traced_memory()
            with pytest.raises(MCPConnectionError, match="exiting in the middle of a call"):
                await client.call_tool("exit", {})
    finally:
        tracemalloc.stop()
    assert kept.endswith("END-OF-FLOOD")
    assert len(kept.encode()) <= 64 * 1024
    assert peak < PEAK_LIMIT


async def test_the_stderr_limit_can_be_lowered_or_raised() -> None:
    async with flooding(stderr_limit=4096) as client:
        await client.list_tools()
        with anyio.fail_after(30):
            while client.stderr_bytes_seen < FLOOD_MB * 1024 * 1024:
                await anyio.sleep(0.02)
        assert 0 < len(client.stderr_tail(limit=10**9).encode()) <= 4096
    with pytest.raises(ValueError, match="stderr_limit"):
        MCPServerConfig(command="x", stderr_limit=10)


async def test_stderr_is_still_copied_to_an_errlog_the_caller_gives() -> None:
    sink = io.BytesIO()
    client = MCPClient(
        command=PYTHON,
        args=[SPAWNING_SERVER, "--flood", "1"],
        timeout=30,
        connect_timeout=30,
        errlog=sink,
    )
    async with client:
        await client.list_tools()
        with anyio.fail_after(30):
            while b"END-OF-FLOOD" not in sink.getvalue():
                await anyio.sleep(0.02)
    assert len(sink.getvalue()) > 1024 * 1024


def test_the_tail_keeps_the_latest_bytes_whatever_the_chunk_sizes() -> None:
    tail = StderrTail(limit=10)
    for chunk in [b"abc", b"defghijklmnop", b"", b"q", b"0123456789ABCDEF", b"xyz"]:
        tail.feed(chunk)
        assert len(tail) <= 10
    assert tail.text() == "9ABCDEFxyz"
    assert tail.total == 3 + 13 + 1 + 16 + 3
    tail.clear()
    assert tail.text() == "" and tail.total == 0


def test_a_tail_cut_inside_a_character_still_decodes() -> None:
    tail = StderrTail(limit=5)
    tail.feed("ééé".encode())  # 6 bytes: the first character is cut in half
    assert tail.text().endswith("éé")
