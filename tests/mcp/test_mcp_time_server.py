"""A third-party MCP server, `mcp-server-time` from PyPI, as a tool provider.

Test dependency: `pip install mcp-server-time` (it puts an `mcp-server-time` command on PATH).
"""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator

import pytest
from mcp_test_support import FAULTY_SERVER, PYTHON

from jianmu_bt import ToolSet
from jianmu_bt.mcp import (
    MCPClientError,
    MCPToolProvider,
    ToolNameClashError,
    merge_providers_tools,
)

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(
        shutil.which("mcp-server-time") is None,
        reason="mcp-server-time is not installed (pip install mcp-server-time)",
    ),
]


@pytest.fixture(scope="module")
async def time_provider() -> AsyncIterator[MCPToolProvider]:
    provider = MCPToolProvider.from_config(
        {"command": "mcp-server-time", "args": ["--local-timezone", "UTC"], "prefix": "time"}
    )
    await provider.initialize()
    yield provider
    await provider.close()


async def test_its_tools_get_the_prefix_and_the_server_description(
    time_provider: MCPToolProvider,
) -> None:
    tools = ToolSet.from_tools(time_provider.get_tools())
    assert tools.names() == ["time_get_current_time", "time_convert_time"]
    current = tools["time_get_current_time"]
    assert current.remote_name == "get_current_time"
    assert current.get_description() == "Get current time in a specific timezone"
    assert current.to_schema()["parameters"]["required"] == ["timezone"]
    assert time_provider.server_name == "mcp-time"


async def test_its_read_only_annotation_makes_the_tools_parallel_safe(
    time_provider: MCPToolProvider,
) -> None:
    tools = ToolSet.from_tools(time_provider.get_tools())
    assert tools.is_parallel_safe(["time_get_current_time", "time_convert_time"])
    assert tools["time_convert_time"].effect_tags == ()


async def test_a_call_returns_its_structured_content(time_provider: MCPToolProvider) -> None:
    tools = ToolSet.from_tools(time_provider.get_tools())
    result = await tools.call("time_get_current_time", {"timezone": "Asia/Tokyo"})
    assert result.ok
    assert result.output["timezone"] == "Asia/Tokyo"
    assert result.output["datetime"].endswith("+09:00")


async def test_a_tool_error_is_a_failed_result_with_its_message(
    time_provider: MCPToolProvider,
) -> None:
    tools = ToolSet.from_tools(time_provider.get_tools())
    result = await tools.call("time_get_current_time", {"timezone": "Mars/Olympus"})
    assert not result.ok
    assert result.error.startswith("Error: ")
    assert "Invalid timezone" in result.error


async def test_a_tool_the_server_does_not_have_is_a_clear_error(
    time_provider: MCPToolProvider,
) -> None:
    with pytest.raises(MCPClientError, match="rejected tools/call 'nope': Unknown tool: nope"):
        await time_provider.client.call_tool("nope", {})
    tools = ToolSet.from_tools(time_provider.get_tools())
    unknown = await tools.call("get_current_time", {"timezone": "UTC"})
    assert "unknown tool 'get_current_time'" in unknown.error


async def test_two_servers_with_the_same_tool_name_clash_without_a_prefix(
    time_provider: MCPToolProvider,
) -> None:
    unprefixed = MCPToolProvider(time_provider.client)  # the same server, without a prefix
    await unprefixed.initialize()
    other = MCPToolProvider(command=PYTHON, args=[FAULTY_SERVER, "--tools", "get_current_time"])
    async with other:  # initialize on entry, close on exit
        with pytest.raises(ToolNameClashError) as caught:
            merge_providers_tools([unprefixed, other])
        prefixed = merge_providers_tools([time_provider, other])
    message = str(caught.value)
    assert "'get_current_time'" in message
    assert "MCP server 'mcp-time'" in message and "MCP server 'faulty'" in message
    assert [t.name for t in prefixed] == [
        "time_get_current_time",
        "time_convert_time",
        "get_current_time",
    ]


async def test_include_keeps_only_the_named_tools(time_provider: MCPToolProvider) -> None:
    only = MCPToolProvider(time_provider.client, include=["convert_time"])
    await only.initialize()
    assert [t.name for t in only.get_tools()] == ["convert_time"]
    missing = MCPToolProvider(time_provider.client, include=["sunrise"])
    with pytest.raises(MCPClientError, match=r"has no tool 'sunrise'.*offers: get_current_time"):
        await missing.initialize()
