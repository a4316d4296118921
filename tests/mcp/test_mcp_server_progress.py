"""Progress notifications and cancellation of served calls, with the official SDK client over
stdio (a real server process), streamable HTTP (127.0.0.1) and in-process."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp_server_sample_tools import ALL
from mcp_test_support import alive

from jianmu_bt import ToolSet
from jianmu_bt.mcp import build_mcp_server
from jianmu_bt.mcp.server_progress import MAX_PENDING

pytestmark = pytest.mark.anyio


class Progress:
    """A progress callback that records what it hears."""

    def __init__(self) -> None:
        self.seen: list[tuple[float, float | None, str | None]] = []

    async def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        self.seen.append((progress, total, message))


async def test_an_async_tool_reports_progress_to_the_client(client: Client) -> None:
    progress = Progress()
    result = await client.call_tool("count_async", {"n": 5}, progress_callback=progress)
    assert result.structured_content == {"result": 5}
    assert progress.seen == [(float(i), 5.0, f"step {i}") for i in range(1, 6)]


async def test_a_sync_tool_reports_progress_from_its_worker_thread(client: Client) -> None:
    progress = Progress()
    result = await client.call_tool("count_in_thread", {"n": 20}, progress_callback=progress)
    assert result.content[0].text != threading.current_thread().name  # it ran in a worker
    assert progress.seen == [(float(i), 20.0, f"thread step {i}") for i in range(1, 21)]


async def test_without_a_progress_token_nothing_is_sent(client: Client) -> None:
    result = await client.call_tool("count_async", {"n": 3})  # no progress_callback
    assert result.structured_content == {"result": 3}


async def test_a_flood_of_reports_is_bounded_and_only_moves_forward(client: Client) -> None:
    progress = Progress()
    result = await client.call_tool("flood", {"n": 10_000}, progress_callback=progress)
    assert result.structured_content == {"result": 10_000}
    values = [p for p, _, _ in progress.seen]
    assert values == sorted(set(values))  # strictly increasing, as MCP requires
    assert 0 < len(values) <= MAX_PENDING  # the latest ones are kept
    assert values[-1] == 9_999


async def test_a_cancelled_call_is_cancelled_on_the_server(client: Client, tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    async with anyio.create_task_group() as tg:

        async def call() -> None:
            await client.call_tool("wait_for_cancel", {"marker": str(marker)})

        tg.start_soon(call)
        with anyio.fail_after(20):
            while not marker.exists():
                await anyio.sleep(0.02)
        tg.cancel_scope.cancel()  # the SDK client sends notifications/cancelled
    with anyio.fail_after(20):
        while marker.read_text() != "cancelled":
            await anyio.sleep(0.02)
    # The connection stays usable.
    assert (await client.call_tool("square", {"x": 3})).structured_content == {"result": 9}


async def test_a_cancelled_call_leaves_no_child_process(client: Client, tmp_path: Path) -> None:
    marker = tmp_path / "pid"
    with anyio.move_on_after(20) as scope:
        async with anyio.create_task_group() as tg:
            tg.start_soon(client.call_tool, "run_child", {"marker": str(marker)})
            while not marker.exists() or not marker.read_text():
                await anyio.sleep(0.02)
            child = int(marker.read_text())
            assert alive(child)
            tg.cancel_scope.cancel()
    assert not scope.cancelled_caught
    with anyio.fail_after(20):
        while alive(child):
            await anyio.sleep(0.02)
    assert child != os.getpid()


def test_nothing_is_left_running_after_serving_in_process(tmp_path: Path) -> None:
    """Progress from worker threads, a cancelled call: once the loop ends, no thread is left."""
    before = set(threading.enumerate())

    async def scenario() -> None:
        async with Client(build_mcp_server(ToolSet(ALL))) as connected:
            progress = Progress()
            await connected.call_tool("count_in_thread", {"n": 50}, progress_callback=progress)
            assert len(progress.seen) == 50
            marker = tmp_path / "marker"
            with anyio.move_on_after(20):
                async with anyio.create_task_group() as tg:
                    tg.start_soon(connected.call_tool, "wait_for_cancel", {"marker": str(marker)})
                    while not marker.exists():
                        await anyio.sleep(0.02)
                    tg.cancel_scope.cancel()
            assert marker.read_text() == "cancelled"

    # A loop of its own, in a thread of its own (this module's fixtures keep a loop running here).
    errors: list[BaseException] = []

    def run() -> None:
        try:
            anyio.run(scenario)
        except BaseException as exc:
            errors.append(exc)

    worker = threading.Thread(target=run)
    worker.start()
    worker.join(timeout=60)
    assert not worker.is_alive() and not errors, errors
    left = [t for t in set(threading.enumerate()) - before if t.is_alive()]
    assert not left, f"threads left behind: {left}"
