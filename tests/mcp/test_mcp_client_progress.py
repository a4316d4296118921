"""Progress: an MCP server's progress notifications reach the caller, become `tool.progress` run
events (trace, `--watch`), and may keep a call's idle timeout from firing.

The server is `mcp_client_features_server.py` (the official SDK's MCPServer) as a real process.
"""

from __future__ import annotations

import io
import sys
import threading
from collections.abc import AsyncIterator
from types import SimpleNamespace

import anyio
import anyio.to_thread
import pytest
from mcp_test_support import HERE, PYTHON
from py_trees.behaviours import Success

from jianmu_bt.cli.activity import ActivityLog, describe_event
from jianmu_bt.cli.watch import WatchView
from jianmu_bt.mcp import MCPClient, MCPToolProvider
from jianmu_bt.nodes.progress import MAX_EVENTS_PER_CALL, progress_events
from jianmu_bt.runtime.events import Event, EventBus
from jianmu_bt.tools import ToolSet

pytestmark = pytest.mark.anyio

FEATURES = str(HERE / "mcp_client_features_server.py")
HANG_GUARD = 60


def features(**options: object) -> MCPClient:
    return MCPClient(command=PYTHON, args=[FEATURES], name="features", **options)


@pytest.fixture(scope="module")
async def resetting() -> AsyncIterator[MCPToolProvider]:
    """One server for the module, whose progress restarts the 1.5 s (idle) timeout."""
    async with MCPToolProvider(features(timeout=1.5, progress_resets_timeout=True)) as server:
        yield server


async def test_the_servers_progress_reaches_the_caller_in_order(
    resetting: MCPToolProvider,
) -> None:
    seen: list[tuple[float, float | None, str | None]] = []
    result = await resetting.client.call_tool(
        "count", {"steps": 3, "pause": 0}, progress=lambda *r: seen.append(r)
    )
    assert result.content[0].text == "counted 3"
    assert seen == [(1.0, 3.0, "step 1"), (2.0, 3.0, "step 2"), (3.0, 3.0, "step 3")]


async def test_progress_resets_the_idle_timeout_only_when_configured(
    resetting: MCPToolProvider,
) -> None:
    # Five reports 0.5 s apart: 2.5 s in all, never 1.5 s without a sign of life.
    slow = {"steps": 5, "pause": 0.5}
    async with MCPToolProvider(features(timeout=1.5)) as fixed:
        with anyio.fail_after(HANG_GUARD):
            kept_alive = await ToolSet.from_tools(resetting.get_tools()).call("count", slow)
            cut_short = await ToolSet.from_tools(fixed.get_tools()).call("count", slow)
    assert kept_alive.ok and kept_alive.output == "counted 5"
    assert cut_short.error == (
        "Error: MCP server 'features' did not answer tools/call 'count' within 1.5s"
    )


async def test_a_silent_call_still_times_out_when_progress_resets_the_timeout(
    resetting: MCPToolProvider,
) -> None:
    tools = ToolSet.from_tools(resetting.get_tools())
    with anyio.fail_after(HANG_GUARD):
        silent = await tools.call("count", {"steps": 1, "pause": 5})
        after = await tools.call("count", {"steps": 1, "pause": 0})
    assert silent.error == (
        "Error: MCP server 'features' did not answer tools/call 'count' and sent no progress "
        "for 1.5s"
    )
    assert after.ok  # the connection survived the abandoned call


def progress_event(call_id: str, done: int) -> SimpleNamespace:
    data = {"tool": "count", "call_id": call_id, "progress": done, "total": 4, "message": "go"}
    return SimpleNamespace(type="tool.progress", node="Counter", data=data)


def test_watch_shows_a_calls_latest_progress_on_one_line_and_the_summary_skips_it() -> None:
    stream = io.StringIO()
    view = WatchView(Success(name="Main"), stream, live=True, interval=0)
    log = ActivityLog()
    for done in (1, 2, 3):
        view(progress_event("c1", done))
        log(progress_event("c1", done))
    view(progress_event("c2", 1))
    assert describe_event(progress_event("c1", 1)) == "Counter: count 1/4 (25%): go"
    assert list(view._activity) == ["Counter: count 3/4 (75%): go", "Counter: count 1/4 (25%): go"]
    assert view.draws == 4  # no tick comes while a call runs: each report redraws (throttled)
    assert "count 3/4 (75%)" in stream.getvalue()
    assert log.lines == [] and sum(log.counts.values()) == 0


async def test_a_calls_progress_events_are_bounded_and_hop_to_the_loop() -> None:
    bus = EventBus()
    seen: list[tuple[float, bool]] = []
    loop_thread = threading.get_ident()

    def listen(event: Event) -> None:
        seen.append((event.data["progress"], threading.get_ident() == loop_thread))

    bus.subscribe(listen)
    sink = progress_events(bus, "Node", "tool", "c1")
    assert sink is not None
    await anyio.to_thread.run_sync(sink, 0.5, 1.0, "from a worker thread")
    for done in range(MAX_EVENTS_PER_CALL + 50):  # a flood: only the first ones become events
        sink(done, None, None)
    await anyio.sleep(0)  # the worker thread's report was scheduled on the loop
    assert len(seen) == MAX_EVENTS_PER_CALL
    assert (0.5, True) in seen and all(on_loop for _, on_loop in seen)
    assert progress_events(EventBus(), "Node", "tool", "c2") is None  # nobody listens: no cost


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))
