"""A served tool set stays usable when a client misbehaves: a stuck or broken connection does
not hold up a tool-list change, a progress notice that cannot be sent does not fail the call,
and listing resources (a folder, the run store) runs off the event loop."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

import jianmu_bt.mcp.server_tools as server_tools
from jianmu_bt import ToolSet, tool
from jianmu_bt.mcp import ServedTools, build_mcp_server
from jianmu_bt.mcp.server_progress import forward_progress
from jianmu_bt.mcp.server_resources import ServedResources
from jianmu_bt.store import open_store

pytestmark = pytest.mark.anyio


@tool
def echo(text: str) -> str:
    """Say `text` back."""
    return text


class Connection:
    """Stands in for one client's connection: it answers, hangs, or fails."""

    def __init__(self, behaviour: str) -> None:
        self.behaviour = behaviour
        self.told = 0

    async def send_tool_list_changed(self) -> None:
        if self.behaviour == "stuck":
            await anyio.sleep_forever()
        if self.behaviour == "broken":
            raise RuntimeError("connection reset")
        self.told += 1


async def test_a_stuck_or_broken_client_does_not_hold_up_a_change(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(server_tools, "NOTICE_TIMEOUT", 0.2)
    served = ServedTools(ToolSet([echo]))
    connections = [Connection("stuck"), Connection("broken"), Connection("fine")]
    for connection in connections:
        served._listeners.add(connection)
    with anyio.fail_after(20):
        await served.remove("echo")
    assert served.toolset.names() == []
    assert connections[2].told == 1  # the others' troubles did not keep it from hearing
    assert "did not take the tools/list_changed notice" in caplog.text
    assert "connection reset" in caplog.text


async def test_a_progress_notice_that_cannot_be_sent_does_not_fail_the_call(
    caplog: pytest.LogCaptureFixture,
) -> None:
    attempts = []

    async def send(progress: float, total: float | None, message: str | None) -> None:
        attempts.append(progress)
        raise ValueError("the transport refused it")

    async with forward_progress(send) as sink:
        sink(1, 3, "one")
        await anyio.sleep(0)
        sink(2, 3, "two")
        sink(3, 3, "three")
    assert attempts == [1.0]  # after the failure, no more tries
    assert "progress notification could not be sent" in caplog.text


async def test_resources_are_listed_off_the_event_loop(tmp_path: Path) -> None:
    store = open_store(tmp_path / "runs.db")
    threads: list[int] = []
    real_runs = store.runs

    def runs(limit: int | None = None) -> Any:
        threads.append(threading.get_ident())
        return real_runs(limit)

    store.runs = runs  # type: ignore[method-assign]
    try:
        resources = ServedResources({}, store=store, traces=tmp_path)
        server = build_mcp_server(ToolSet([echo]), extras=[resources])
        async with Client(server, read_timeout_seconds=20) as client:  # type: ignore[arg-type]
            listed = (await client.list_resources()).resources
    finally:
        store.close()
    assert listed == []
    assert threads and threading.get_ident() not in threads
