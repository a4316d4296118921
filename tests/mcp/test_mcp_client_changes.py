"""`notifications/tools/list_changed`: a server that adds a tool is listed again, in both
protocol eras (2026-07-28 carries the notice on a `subscriptions/listen` stream; earlier ones
send it bare), and a flood of notices costs a bounded number of listings; a change that does
not fit the tree's nodes is applied to none of them.

The server is `mcp_client_features_server.py` (the official SDK's MCPServer), a real process.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio
import pytest
from mcp_test_support import HERE, PYTHON

from jianmu_bt.loader.catalog import ToolCatalog
from jianmu_bt.loader.context import Binding
from jianmu_bt.loader.session import ProviderSession
from jianmu_bt.mcp import MCPClient, MCPToolProvider
from jianmu_bt.tools import Tool, ToolSet, tool
from jianmu_bt.tools.providers import BaseToolProvider

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


class _Shifting(BaseToolProvider):
    """A provider whose tools are swapped by the test, announcing each change."""

    def __init__(self, names: list[str]) -> None:
        self.tools = [_named(n) for n in names]
        self._listeners: list[Callable[[Any], None]] = []

    def get_tools(self, **kwargs: Any) -> list[Tool]:
        return list(self.tools)

    def on_tools_changed(self, listener: Callable[[Any], None]) -> Callable[[], None]:
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    def change(self, names: list[str]) -> None:
        self.tools = [_named(n) for n in names]
        for listener in self._listeners:
            listener(self)


def _named(name: str) -> Tool:
    @tool(name=name, description=f"The tool {name}.")
    def answer() -> str:
        return name

    return answer


async def test_a_change_that_does_not_fit_one_node_changes_no_node() -> None:
    provider = _Shifting(["a", "b", "c"])
    given: dict[str, list[ToolSet]] = {"a": [], "b": [], "c": []}
    bindings = [Binding(f"node {n}", [n], lambda tools, n=n: given[n].append(tools)) for n in given]
    session = ProviderSession(ToolCatalog(providers=[provider]), bindings)
    await session.open()
    try:
        first = {n: sets[-1][n] for n, sets in given.items()}
        provider.change(["a", "b"])  # the third node's tool went away
        assert session.apply_changes() is False
        assert {n: sets[-1][n] for n, sets in given.items()} == first
        assert all(len(sets) == 1 for sets in given.values())
        provider.change(["a", "b", "c"])
        assert session.apply_changes() is True
        assert all(sets[-1][n] is not first[n] for n, sets in given.items())
    finally:
        await session.close()
