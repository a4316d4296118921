"""Resource subscriptions, listings and notices of MCPClient against a server that misbehaves
on purpose (`mcp_paging_server.py`: the SDK's low-level Server over stdio, protocol
2026-07-28, so subscriptions ride `subscriptions/listen` streams).

One server process serves the module; the test of a lost connection starts its own.
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import AsyncIterator

import anyio
import pytest
from mcp_test_support import HERE, PYTHON, descendants

from jianmu_bt.mcp import MCPClient, MCPClientError, MCPTimeoutError
from jianmu_bt.mcp.client_features import MAX_LIST_PAGES
from jianmu_bt.mcp.faults import METHOD_NOT_FOUND
from jianmu_bt.mcp.resource_tools import ListResourcesTool

pytestmark = pytest.mark.anyio

ODD = str(HERE / "mcp_paging_server.py")
#: Bound on anything a test waits for, so a broken server fails the test instead of hanging it.
HANG_GUARD = 20
#: The client's timeout: also the bound of one whole listing.
TIMEOUT = 3


def stream_tasks() -> list[asyncio.Task[object]]:
    """The resource-subscription stream tasks still running."""
    return [
        t for t in asyncio.all_tasks() if t.get_name().startswith("mcp-resources:") and not t.done()
    ]


@pytest.fixture(scope="module")
async def odd() -> AsyncIterator[MCPClient]:
    async with MCPClient(command=PYTHON, args=[ODD], name="odd", timeout=TIMEOUT) as client:
        yield client
    assert stream_tasks() == []  # closing the client ended its streams, at once


class Updates:
    """An update listener that records URIs and lets a test wait for the n-th one."""

    def __init__(self) -> None:
        self.seen: list[str] = []
        self._changed = anyio.Event()

    def __call__(self, uri: str) -> None:
        self.seen.append(uri)
        self._changed.set()

    async def wait_for(self, count: int) -> None:
        with anyio.fail_after(HANG_GUARD):
            while len(self.seen) < count:
                self._changed = anyio.Event()
                await self._changed.wait()


async def test_endless_pagination_is_bounded_per_listing(odd: MCPClient) -> None:
    await odd.call_tool("paginate_forever", {"kind": "tools", "on": True})
    try:
        with pytest.raises(
            MCPClientError, match=f"kept paginating tools/list past {MAX_LIST_PAGES}"
        ):
            await odd.list_tools()
    finally:
        await odd.call_tool("paginate_forever", {"kind": "tools", "on": False})
    # Slow pages: one deadline (the client's timeout) for the whole listing, not one per page.
    await odd.call_tool("paginate_forever", {"kind": "resources", "on": True})
    try:
        with pytest.raises(
            MCPTimeoutError, match=r"did not finish resources/list within 3(\.0)?s"
        ) as e:
            await odd.list_resources()
        pages = int(str(e.value).split("(")[1].split()[0])
        assert 0 < pages < MAX_LIST_PAGES
    finally:
        await odd.call_tool("paginate_forever", {"kind": "resources", "on": False})
    assert [str(r.uri) for r in await odd.list_resources()] == ["odd://a"]
    assert len(await odd.list_tools()) == 4


async def test_a_server_without_templates_lists_its_resources(odd: MCPClient) -> None:
    with pytest.raises(MCPClientError, match="rejected resources/templates/list") as refused:
        await odd.list_resource_templates()
    assert refused.value.code == METHOD_NOT_FOUND
    listed = await ListResourcesTool(odd, "odd_list_resources").run({})
    assert listed.ok and listed.output == '{"uri": "odd://a", "name": "a"}'


async def test_two_subscribers_of_one_uri_are_counted(odd: MCPClient) -> None:
    uri = "odd://shared"
    first, second = Updates(), Updates()
    removes = [odd.on_resource_updated(first), odd.on_resource_updated(second)]
    try:
        await odd.subscribe_resource(uri)  # two waiters on one URI, as two tree nodes would
        await odd.subscribe_resource(uri)
        assert odd.subscribers(uri) == 2 and len(stream_tasks()) == 1
        await odd.call_tool("touch", {"uri": uri})
        await first.wait_for(1)
        await second.wait_for(1)
        removes.pop(0)()
        await odd.unsubscribe_resource(uri)  # the first is done; the second still waits
        assert odd.subscribers(uri) == 1
        await odd.call_tool("touch", {"uri": uri})
        await second.wait_for(2)
        assert second.seen == [uri, uri]

        await odd.unsubscribe_resource(uri)
        assert odd.subscribers(uri) == 0 and stream_tasks() == []
        await odd.unsubscribe_resource(uri)  # one too many: nothing to take back
    finally:
        for remove in removes:
            remove()


async def test_a_refused_subscription_keeps_the_stream_before_it(odd: MCPClient) -> None:
    updates = Updates()
    remove = odd.on_resource_updated(updates)
    try:
        await odd.subscribe_resource("odd://kept")
        with pytest.raises(MCPClientError, match=r"did not honour the subscription to refused://x"):
            await odd.subscribe_resource("refused://x")
        assert odd.subscribers("refused://x") == 0 and len(stream_tasks()) == 1
        await odd.call_tool("touch", {"uri": "odd://kept"})  # the old stream still carries it
        await updates.wait_for(1)
        assert updates.seen == ["odd://kept"]
    finally:
        remove()
        await odd.unsubscribe_resource("odd://kept")
    assert stream_tasks() == []


async def test_a_stream_the_server_ends_is_opened_again(odd: MCPClient) -> None:
    updates = Updates()
    remove = odd.on_resource_updated(updates)
    try:
        await odd.subscribe_resource("odd://a")
        await odd.call_tool("end_streams", {})
        # Reopened after a delay; updates in between are not replayed, so listeners hear of
        # a possible change once the new stream stands.
        await updates.wait_for(1)
        await odd.call_tool("touch", {"uri": "odd://a"})
        await updates.wait_for(2)
        assert updates.seen == ["odd://a", "odd://a"]
        assert len(stream_tasks()) == 1
    finally:
        remove()
        await odd.unsubscribe_resource("odd://a")


async def test_a_flood_of_updates_is_folded_while_a_listener_is_busy(odd: MCPClient) -> None:
    uri, marker = "odd://flooded", "odd://marker"
    release, marked = anyio.Event(), anyio.Event()
    rounds: list[str] = []

    async def slow(changed: str) -> None:
        if changed == marker:
            marked.set()
            return
        rounds.append(changed)
        await release.wait()

    remove = odd.on_resource_updated(slow)
    try:
        await odd.subscribe_resource(uri)
        await odd.subscribe_resource(marker)
        tasks = len(asyncio.all_tasks())
        await odd.call_tool("flood", {"uri": uri, "n": 300})
        await odd.call_tool("touch", {"uri": marker})  # after the flood on the same stream
        with anyio.fail_after(HANG_GUARD):
            await marked.wait()
        # 300 notices, one round under way; nothing piles up behind it.
        assert rounds == [uri]
        assert len(asyncio.all_tasks()) <= tasks + 2
        release.set()
        with anyio.fail_after(HANG_GUARD):
            while len(rounds) < 2:  # the folded notices: one more round
                await anyio.sleep(0.01)
        await odd.read_resource(uri)  # the client keeps working
        assert rounds == [uri, uri]
    finally:
        remove()
        release.set()
        await odd.unsubscribe_resource(uri)
        await odd.unsubscribe_resource(marker)


async def test_unsubscribing_after_the_server_went_away_starts_no_server() -> None:
    before = descendants()
    client = MCPClient(command=PYTHON, args=[ODD], name="odd-lost", timeout=TIMEOUT)
    try:
        await client.subscribe_resource("odd://a")
        (server,) = descendants() - before
        os.kill(server, signal.SIGKILL)
        with anyio.fail_after(HANG_GUARD):
            while client.connected or server in descendants():
                await anyio.sleep(0.01)
        await client.unsubscribe_resource("odd://a")  # forgotten: the server is gone
        assert client.reconnects == 0 and descendants() - before == set()
        assert client.subscribers("odd://a") == 0
    finally:
        await client.close()
    assert stream_tasks() == []
