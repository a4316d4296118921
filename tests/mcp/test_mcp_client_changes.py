"""`notifications/tools/list_changed`: a server that adds a tool is listed again, in both
protocol eras (2026-07-28 carries the notice on a `subscriptions/listen` stream; earlier ones
send it bare), and a flood of notices costs a bounded number of listings.

The server is `mcp_client_features_server.py` (the official SDK's MCPServer), a real process.
"""

from __future__ import annotations

import anyio
import pytest
from mcp_test_support import HERE, PYTHON

from jianmu_bt.mcp import MCPClient, MCPToolProvider
from jianmu_bt.tools import ToolSet

pytestmark = pytest.mark.anyio

FEATURES = str(HERE / "mcp_client_features_server.py")
HANG_GUARD = 60


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_tool_the_server_adds_is_there_when_the_call_that_added_it_returns(
    mode: str,
) -> None:
    client = MCPClient(command=PYTHON, args=[FEATURES], name="features", mode=mode)
    changes: list[list[str]] = []
    async with MCPToolProvider(client, prefix="f") as provider:
        provider.on_tools_changed(lambda p: changes.append([t.name for t in p.get_tools()]))
        before = ToolSet.from_tools(provider.get_tools())
        with anyio.fail_after(HANG_GUARD):
            grown = await before.call("f_grow", {"name": "twice"})
        after = ToolSet.from_tools(provider.get_tools())
        doubled = await after.call("f_twice", {"x": 21})
    assert grown.ok, grown.error
    assert "f_twice" not in before.names()  # a ToolSet handed out earlier does not change
    assert changes and "f_twice" in changes[-1]
    assert doubled.output == 42
    assert provider.version == 1 + len(changes)


async def test_a_flood_of_change_notices_costs_a_bounded_number_of_listings() -> None:
    client = MCPClient(command=PYTHON, args=[FEATURES], name="features", mode="legacy")
    listings = running = most = 0
    async with MCPToolProvider(client) as provider:
        real_list = client.list_tools

        async def counted() -> list:
            nonlocal listings, running, most
            listings += 1
            running += 1
            most = max(most, running)
            try:
                return await real_list()
            finally:
                running -= 1

        client.list_tools = counted  # type: ignore[method-assign]
        with anyio.fail_after(HANG_GUARD):
            flooded = await ToolSet.from_tools(provider.get_tools()).call("flood", {"times": 50})
    assert flooded.output == "sent 50"
    # One listing at a time, one more for all the notices that came while it ran: never one
    # per notice (how many depends on how the notices and the listings interleave).
    assert most == 1
    assert 1 <= listings < 50
    assert provider.version == 1 + listings
