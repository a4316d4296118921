"""Our MCP server as a real process (stdio and HTTP), used by the SDK's client and by ours."""

from __future__ import annotations

import os
import subprocess
from collections.abc import AsyncIterator, Iterator

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp_test_support import (
    PYTHON,
    SAMPLE_TOOLS,
    SERVER_ENV,
    HTTPServer,
    alive,
    descendants,
    serve_args,
)

from jianmu_bt import ToolSet
from jianmu_bt.mcp import MCPClientError, MCPConnectionError, MCPToolProvider

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def http_server() -> Iterator[HTTPServer]:
    server = HTTPServer(tools=f"calculator,{SAMPLE_TOOLS}")  # a built-in by name, and Python tools
    yield server
    server.stop()


@pytest.fixture(scope="module")
async def stdio_tools() -> AsyncIterator[ToolSet]:
    provider = MCPToolProvider(
        command=PYTHON, args=serve_args(), env=SERVER_ENV, server_name="ours", timeout=5
    )
    await provider.initialize()
    yield ToolSet.from_tools(provider.get_tools())
    await provider.close()


@pytest.fixture(scope="module")
async def sdk_stdio_client() -> AsyncIterator[Client]:
    params = StdioServerParameters(command=PYTHON, args=serve_args(), env=SERVER_ENV)
    async with Client(params, read_timeout_seconds=10) as client:
        yield client


# -- the official SDK client on our server ------------------------------------------------


async def test_the_sdk_client_lists_our_tools_over_stdio(sdk_stdio_client: Client) -> None:
    listed = {t.name: t for t in (await sdk_stdio_client.list_tools()).tools}
    assert {"add", "describe_point", "save_note", "fetch"} <= set(listed)
    assert listed["add"].input_schema["required"] == ["a", "b"]
    assert listed["save_note"].annotations.destructive_hint is True


async def test_the_sdk_client_calls_our_tools_over_stdio(sdk_stdio_client: Client) -> None:
    ok = await sdk_stdio_client.call_tool("add", {"a": 20, "b": 22})
    failed = await sdk_stdio_client.call_tool("fail", {"reason": "on purpose"})
    assert ok.content[0].text == "42" and not ok.is_error
    assert failed.is_error and failed.content[0].text == "Error: ValueError: on purpose"


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_the_sdk_client_calls_our_tools_over_http(http_server: HTTPServer, mode: str) -> None:
    async with http_server.sdk_client(mode=mode, read_timeout_seconds=10) as client:
        names = [t.name for t in (await client.list_tools()).tools]
        result = await client.call_tool("describe_point", {"x": 6, "y": 8})
    assert {"calculator", "describe_point"} <= set(names)
    assert result.structured_content == {"x": 6.0, "y": 8.0, "norm": 10.0}


# -- our provider on our server -----------------------------------------------------------


async def test_our_annotations_round_trip_to_tool_metadata(stdio_tools: ToolSet) -> None:
    assert stdio_tools["add"].parallel_safe is True
    assert stdio_tools["add"].effect_tags == ()
    assert stdio_tools["save_note"].parallel_safe is False
    assert stdio_tools["save_note"].effect_tags == ("destructive",)
    assert stdio_tools["fetch"].effect_tags == ("open_world",)
    assert stdio_tools["add"].get_description() == "Add two integers."


async def test_calls_through_the_provider_return_tool_results(stdio_tools: ToolSet) -> None:
    added = await stdio_tools.call("add", {"a": 1, "b": 2})
    point = await stdio_tools.call("describe_point", {"x": 3, "y": 4})
    failed = await stdio_tools.call("fail", {"reason": "boom"})
    assert (added.ok, added.output) == (True, 3)  # typed: `-> int` has an outputSchema
    assert point.output == {"x": 3.0, "y": 4.0, "norm": 5.0}
    assert (failed.ok, failed.error) == (False, "Error: ValueError: boom")


async def test_concurrent_calls_share_one_connection(stdio_tools: ToolSet) -> None:
    results: dict[int, object] = {}

    async def add(i: int) -> None:
        results[i] = (await stdio_tools.call("add", {"a": i, "b": 1000})).output

    async with anyio.create_task_group() as tg:
        for i in range(20):
            tg.start_soon(add, i)
    assert results == {i: i + 1000 for i in range(20)}


async def test_a_cancelled_call_leaves_the_connection_usable(stdio_tools: ToolSet) -> None:
    with anyio.move_on_after(0.3) as scope:
        await stdio_tools.call("slow", {"seconds": 30})
    assert scope.cancelled_caught
    assert (await stdio_tools.call("add", {"a": 2, "b": 2})).output == 4


async def test_a_slow_call_times_out_and_the_connection_stays_usable() -> None:
    provider = MCPToolProvider(
        command=PYTHON, args=serve_args(), env=SERVER_ENV, server_name="ours", timeout=0.5
    )
    async with provider:  # initialize on entry, close on exit
        tools = ToolSet.from_tools(provider.get_tools())
        with anyio.fail_after(5):
            slow = await tools.call("slow", {"seconds": 30})
        after = await tools.call("add", {"a": 1, "b": 1})
    assert slow.error == "Error: MCP server 'ours' did not answer tools/call 'slow' within 0.5s"
    assert after.output == 2


async def test_the_provider_works_over_http_with_headers(http_server: HTTPServer) -> None:
    provider = MCPToolProvider(
        url=http_server.url, headers={"X-Test": "1", **http_server.headers}, prefix="remote"
    )
    await provider.initialize()
    try:
        tools = ToolSet.from_tools(provider.get_tools())
        result = await tools.call("remote_add", {"a": 5, "b": 5})
    finally:
        await provider.close()
    assert "remote_add" in tools.names()
    assert result.output == 10


async def test_headers_are_sent_with_every_request(http_server: HTTPServer) -> None:
    # A foreign Host header is refused by the server's DNS-rebinding protection.
    provider = MCPToolProvider(
        url=http_server.url, headers={"Host": "evil.example", **http_server.headers}
    )
    with pytest.raises(MCPConnectionError, match="cannot connect to MCP server"):
        await provider.initialize()
    await provider.close()


async def test_after_the_server_dies_the_next_call_reconnects_once() -> None:
    provider = MCPToolProvider(command=PYTHON, args=serve_args(), env=SERVER_ENV, timeout=10)
    await provider.initialize()
    try:
        tools = ToolSet.from_tools(provider.get_tools())
        first_pid = int((await tools.call("server_pid", {})).output)
        crashed = await tools.call("crash", {})
        again = await tools.call("server_pid", {})
    finally:
        await provider.close()
    assert not crashed.ok
    assert "closed the connection during tools/call 'crash'" in crashed.error
    assert again.ok and int(again.output) != first_pid
    assert provider.client.reconnects == 1


async def test_close_ends_the_server_process() -> None:
    provider = MCPToolProvider(command=PYTHON, args=serve_args(), env=SERVER_ENV)
    await provider.initialize()
    pid = int((await ToolSet.from_tools(provider.get_tools()).call("server_pid", {})).output)
    assert alive(pid)
    await provider.close()
    assert not alive(pid)
    result = await provider.get_tools()[0].call({"a": 1, "b": 2})
    assert "is closed; call connect() to reopen it" in result.error


async def test_a_failed_first_listing_ends_the_server_it_started() -> None:
    before = descendants()
    provider = MCPToolProvider(
        command=PYTHON, args=serve_args(), env=SERVER_ENV, include=["no_such_tool"]
    )
    with pytest.raises(MCPClientError, match="has no tool 'no_such_tool'"):
        await provider.initialize()
    assert descendants() - before == set()  # no server process left behind
    assert not provider.client.connected


# -- the command line ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tools", "message"),
    [
        ("no_such_module:thing", "no module named 'no_such_module'"),
        ("mcp_sample_tools:nothing", "has no attribute 'nothing'"),
        ("calculater_typo", "unknown tool 'calculater_typo'"),
        ("mcp_sample_tools:os", "is a module, not a Tool"),
        ("", "no tools to serve: pass --tools"),
    ],
)
def test_a_bad_tool_spec_exits_with_a_clear_error(tools: str, message: str) -> None:
    args = serve_args(tools=tools) if tools else ["-m", "jianmu_bt.mcp", "serve"]
    done = subprocess.run(
        [PYTHON, *args],
        env={**os.environ, **SERVER_ENV},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert message in done.stderr
    assert "Traceback" not in done.stderr
