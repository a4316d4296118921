"""Attack class 7a: a stdio MCP server's own children must not outlive the client's use of it.

Real server processes (mcp_spawning_server.py) start helpers (children that inherit the
server's pipes, a grandchild, a child that ignores SIGTERM) and write their pids to a file.
After close, a handshake timeout, a cancelled connect, or the server's own exit, no live
process of the server's process group may remain.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import anyio
import pytest
from mcp_test_support import FAULTY_SERVER, HERE, PYTHON, alive

from jianmu_bt.mcp import MCPClient, MCPTimeoutError, MCPToolProvider
from jianmu_bt.mcp.process_group import live_members

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc"),
]

SPAWNING_SERVER = str(HERE / "mcp_spawning_server.py")


def read_pids(path: Path) -> tuple[int, list[int]]:
    """(server pid, helper pids) from the file the spawning server wrote."""
    server, helpers = 0, []
    for line in path.read_text().splitlines():
        kind, pid = line.split()
        if kind == "server":
            server = int(pid)
        else:
            helpers.append(int(pid))
    return server, helpers


async def eventually(check, seconds: float = 15.0) -> bool:
    """Whether `check()` becomes true within `seconds` (polled; a bound, not a timing claim)."""
    with anyio.move_on_after(seconds):
        while not check():
            await anyio.sleep(0.05)
        return True
    return False


def spawning(pids: Path, *options: str, faulty: tuple[str, ...] = ()) -> dict:
    """MCPClient options for the spawning server with `options`."""
    return {
        "command": PYTHON,
        "args": [SPAWNING_SERVER, "--pids", str(pids), *options, "--", *faulty],
        "timeout": 20,
        "connect_timeout": 20,
    }


def assert_group_gone(server: int, helpers: list[int]) -> None:
    left = [pid for pid in helpers if alive(pid)]
    assert not left, f"helpers still running: {left}"
    assert live_members(server) == [], f"process group {server} still has live members"


async def test_close_ends_children_and_grandchildren(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    provider = MCPToolProvider(**spawning(pids, "--children", "2", "--grandchild"))
    await provider.initialize()
    result = await provider.get_tools()[0].call({"x": 1})
    assert result.ok, result
    server, helpers = read_pids(pids)
    assert len(helpers) == 4 and all(alive(pid) for pid in [server, *helpers])
    await provider.close()
    assert not alive(server)
    assert_group_gone(server, helpers)


async def test_a_shell_wrapper_that_backgrounds_a_helper(tmp_path: Path) -> None:
    pidfile = tmp_path / "sleep.pid"
    script = f"sleep 1000 & echo $! > {pidfile}; exec {PYTHON} {FAULTY_SERVER}"
    client = MCPClient(command="sh", args=["-c", script], timeout=20, connect_timeout=20)
    async with client:
        assert [t.name for t in await client.list_tools()][:1] == ["echo"]
        helper = int(pidfile.read_text())
        assert alive(helper)
    assert not alive(helper)


async def test_a_child_that_ignores_sigterm_is_killed(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    client = MCPClient(**spawning(pids, "--stubborn"), stop_grace=0.5)
    await client.connect()
    server, helpers = read_pids(pids)
    assert alive(helpers[0])
    await client.close()
    assert_group_gone(server, helpers)


async def test_a_handshake_timeout_ends_the_group(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    options = spawning(pids, "--children", "1", "--grandchild", faulty=("--mute",))
    options["connect_timeout"] = 3
    client = MCPClient(**options)
    with pytest.raises(MCPTimeoutError, match="did not complete the MCP handshake"):
        await client.connect()
    assert_group_gone(*read_pids(pids))


async def test_a_cancelled_connect_ends_the_group(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    client = MCPClient(**spawning(pids, "--children", "1", "--stubborn", faulty=("--mute",)))
    with anyio.move_on_after(3) as scope:
        await client.connect()
    assert scope.cancelled_caught
    assert_group_gone(*read_pids(pids))


async def test_a_cancelled_close_still_ends_the_group(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    client = MCPClient(**spawning(pids, "--children", "1", "--stubborn"), stop_grace=0.5)
    await client.connect()
    with anyio.CancelScope() as scope:
        scope.cancel()  # the caller is cancelled already when it closes
        await client.close()
    assert_group_gone(*read_pids(pids))


async def test_when_the_server_exits_its_helpers_are_ended_and_the_call_fails_fast(
    tmp_path: Path,
) -> None:
    # The helpers inherit the server's stdout, so its exit alone would not close the pipe: the
    # call would wait for its whole timeout and the helpers would live on.
    pids = tmp_path / "pids"
    client = MCPClient(**{**spawning(pids, "--children", "2", "--grandchild"), "timeout": 120})
    await client.connect()
    server, helpers = read_pids(pids)
    with anyio.fail_after(60):  # far below the call's own timeout
        with pytest.raises(Exception, match="closed the connection") as caught:
            await client.call_tool("exit", {})
    assert "exiting in the middle of a call" in str(caught.value)
    assert await eventually(lambda: not any(alive(pid) for pid in helpers))
    assert_group_gone(server, helpers)
    await client.close()


async def test_closing_does_not_block_the_event_loop(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    client = MCPClient(**spawning(pids, "--stubborn"), stop_grace=1.0)
    await client.connect()
    ticks = 0
    closed = anyio.Event()

    async def ticker() -> None:
        nonlocal ticks
        while not closed.is_set():
            ticks += 1
            await anyio.sleep(0.01)

    async with anyio.create_task_group() as tg:
        tg.start_soon(ticker)
        await client.close()  # waits out the stubborn child's SIGTERM grace
        closed.set()
    assert ticks > 5, "the event loop was blocked while the server's group was ended"
    assert_group_gone(*read_pids(pids))


async def test_every_reconnect_gets_a_group_of_its_own(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    client = MCPClient(**spawning(pids, "--children", "1"))
    await client.connect()
    first = read_pids(pids)
    with pytest.raises(Exception, match="closed the connection"):
        await client.call_tool("exit", {})
    await client.call_tool("echo", {"again": True})  # reconnects: a new server and helper
    second = read_pids(pids)
    assert second[0] != first[0] and client.reconnects == 1
    assert_group_gone(*first)
    await client.close()
    assert_group_gone(*second)


def test_the_process_group_helpers_see_this_process() -> None:
    # Sanity of the probe used above: it finds this test process in its own group.
    members = live_members(os.getpgid(0))
    assert members is not None and os.getpid() in members
