"""Faults: every bad server gives a clear error within its timeout and leaves no process behind.

The misbehaving server is `mcp_faulty_server.py` (plain JSON-RPC, no SDK) run as a real subprocess;
`conftest.no_leftover_processes` checks /proc after the module that no process is left.
"""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest
from mcp_test_support import FAULTY_SERVER, PYTHON, HTTPServer, descendants

from jianmu_bt import ToolSet
from jianmu_bt.mcp import (
    MCPClient,
    MCPClientError,
    MCPConnectionError,
    MCPTimeoutError,
    MCPToolProvider,
)

pytestmark = pytest.mark.anyio


def faulty(*args: str, **options: object) -> MCPClient:
    return MCPClient(command=PYTHON, args=[FAULTY_SERVER, *args], name="faulty", **options)


@pytest.fixture(scope="module")
async def faulty_tools() -> AsyncIterator[ToolSet]:
    provider = MCPToolProvider(faulty(timeout=1.0))
    await provider.initialize()
    yield ToolSet.from_tools(provider.get_tools())
    await provider.close()


# A hang guard (seconds) for calls to servers that never answer; not a bound on how fast.
HANG_GUARD = 60


# -- servers that never start --------------------------------------------------------------


async def test_a_missing_command_is_a_clear_error() -> None:
    before = descendants()
    with pytest.raises(MCPConnectionError, match=r"cannot start MCP server 'nope' .*not found"):
        await MCPClient(command="/nonexistent/mcp-server", name="nope").connect()
    assert descendants() == before


async def test_a_server_that_exits_at_start_is_reported_with_its_stderr() -> None:
    client = faulty("--exit-at-start", "config file /etc/x.toml is missing")
    with pytest.raises(MCPConnectionError) as caught:
        await client.connect()
    message = str(caught.value)
    assert "closed the connection before the MCP handshake finished" in message
    assert "config file /etc/x.toml is missing" in message


async def test_a_server_that_never_answers_the_handshake_times_out() -> None:
    client = faulty("--mute", connect_timeout=1.0)
    handshake = r"did not complete the MCP handshake within 1\.0s"
    with anyio.fail_after(HANG_GUARD), pytest.raises(MCPTimeoutError, match=handshake):
        await client.connect()
    assert not client.connected


async def test_an_unreachable_http_server_is_a_clear_error() -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    client = MCPClient(url=f"http://127.0.0.1:{port}/mcp", connect_timeout=2)
    with anyio.fail_after(10), pytest.raises(MCPConnectionError, match="cannot connect to MCP"):
        await client.connect()


# -- servers that misbehave during a call --------------------------------------------------


async def test_a_hanging_call_times_out_and_the_server_keeps_working(
    faulty_tools: ToolSet,
) -> None:
    with anyio.fail_after(HANG_GUARD):
        hung = await faulty_tools.call("hang", {})
    assert hung.error == "Error: MCP server 'faulty' did not answer tools/call 'hang' within 1.0s"
    assert (await faulty_tools.call("echo", {"x": 1})).output == '{"x": 1}'


async def test_a_malformed_result_is_a_clear_error(faulty_tools: ToolSet) -> None:
    result = await faulty_tools.call("malformed", {})
    assert not result.ok
    assert "MCP server 'faulty' returned a malformed result for tools/call 'malformed'" in (
        result.error
    )


async def test_a_tool_the_server_does_not_have_is_a_clear_error(faulty_tools: ToolSet) -> None:
    client = faulty_tools["echo"].client
    with pytest.raises(MCPClientError, match="rejected tools/call 'ghost': Unknown tool: ghost"):
        await client.call_tool("ghost", {})


async def test_a_server_that_blocks_is_timed_out_then_killed_on_close() -> None:
    before = descendants()
    with anyio.fail_after(HANG_GUARD):  # closing: stdin closed, a grace period, then SIGTERM
        async with MCPToolProvider(faulty(timeout=0.5)) as provider:
            tools = ToolSet.from_tools(provider.get_tools())
            blocked = await tools.call("block", {})
    assert "did not answer tools/call 'block' within 0.5s" in blocked.error
    assert descendants() == before  # the blocked server was killed, not left running


async def test_a_server_exiting_mid_call_is_reported_and_the_next_call_reconnects() -> None:
    provider = MCPToolProvider(faulty(timeout=5))
    await provider.initialize()
    tools = ToolSet.from_tools(provider.get_tools())
    try:
        exited = await tools.call("exit", {})
        echoed = await tools.call("echo", {"again": True})
    finally:
        await provider.close()
    assert "closed the connection during tools/call 'exit'" in exited.error
    assert "faulty server: exiting in the middle of a call" in exited.error
    assert echoed.output == '{"again": true}'
    assert provider.client.reconnects == 1


async def test_a_server_that_cannot_be_restarted_gives_a_clear_error(tmp_path: Path) -> None:
    marker = tmp_path / "started"
    provider = MCPToolProvider(faulty("--once", str(marker), timeout=5))
    await provider.initialize()
    tools = ToolSet.from_tools(provider.get_tools())
    try:
        await tools.call("exit", {})
        retried = await tools.call("echo", {})
    finally:
        await provider.close()
    assert "MCP server 'faulty' went away and could not be restarted" in retried.error
    assert "refusing to start a second time" in retried.error


async def test_an_http_server_that_goes_away_gives_a_clear_error() -> None:
    server = HTTPServer()
    provider = MCPToolProvider(url=server.url, headers=server.headers, timeout=5, connect_timeout=2)
    await provider.initialize()
    tools = ToolSet.from_tools(provider.get_tools())
    try:
        assert (await tools.call("add", {"a": 1, "b": 1})).output == 2  # typed (an outputSchema)
        server.stop()
        with anyio.fail_after(15):
            first = await tools.call("add", {"a": 1, "b": 1})
            second = await tools.call("add", {"a": 1, "b": 1})
    finally:
        await provider.close()
        server.stop()
    assert not first.ok and "MCP server 'jianmu_bt' closed the connection" in first.error
    assert "could not be restarted" in second.error


async def test_calls_after_close_are_refused_without_restarting() -> None:
    before = descendants()
    client = faulty()
    await client.connect()
    await client.close()
    with pytest.raises(MCPConnectionError, match="is closed; call connect"):
        await client.call_tool("echo", {})
    assert descendants() == before


async def test_connect_call_and_close_may_come_from_different_tasks() -> None:
    client = faulty()
    async with anyio.create_task_group() as tg:
        tg.start_soon(client.connect)  # this task ends; the connection must outlive it
    results = []

    async def call() -> None:
        results.append(await client.call_tool("echo", {"n": 1}))

    async with anyio.create_task_group() as tg:
        tg.start_soon(call)
    await client.close()
    assert results[0].content[0].text == '{"n": 1}'
    assert not client.connected
