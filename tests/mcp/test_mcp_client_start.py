"""Starting MCP servers: each timeout is one deadline, and a tree's servers start side by side.

Counted, not timed: a silent server logs how it was ended (a polite close first sends EOF on its
stdin and waits a grace period; a missed handshake ends it at once with SIGTERM), and servers
that wait at a barrier for each other only get past it when started together.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from mcp_test_support import HERE, PYTHON, descendants

from jianmu_bt.loader import load_tree
from jianmu_bt.mcp import MCPClient, MCPTimeoutError

FEATURES = str(HERE / "mcp_client_features_server.py")
SILENT = str(HERE / "mcp_client_silent_server.py")
HANG_GUARD = 60


def lines(path: Path) -> list[str]:
    """The log's lines, once the process that writes them is gone."""
    return path.read_text().split() if path.exists() else []


@pytest.mark.anyio
async def test_a_missed_handshake_ends_the_server_at_once_after_one_attempt(
    tmp_path: Path,
) -> None:
    log = tmp_path / "silent.log"
    client = MCPClient(command=PYTHON, args=[SILENT, str(log)], name="silent", connect_timeout=1)
    before = descendants()
    with anyio.fail_after(HANG_GUARD), pytest.raises(MCPTimeoutError) as caught:
        await client.connect()
    assert "did not complete the MCP handshake within 1.0s" in str(caught.value)
    assert descendants() == before
    events = [line for line in lines(log) if not line.isdigit()]
    # One start; ended by SIGTERM before any polite close (no EOF, no grace period first).
    assert events == ["started", "term"]


def barrier_tree(barrier: Path, parties: int, extra: str = "") -> str:
    servers = "\n".join(
        f"  - mcp: {{command: {PYTHON}, args: [{FEATURES}, --barrier, {barrier}, --parties, "
        f"'{parties}'], prefix: s{index}, name: s{index}, connect_timeout: 20}}"
        for index in range(parties)
    )
    return f"""
state: {{done: string}}
tools:
{servers}
{extra}
root:
  sequence:
    children:
      - tool: {{tool: s0_count, arguments: {{steps: 1, pause: 0}}, output: done}}
      - tool: {{tool: s{parties - 1}_count, arguments: {{steps: 1, pause: 0}}, output: done}}
"""


def test_a_trees_servers_start_side_by_side(tmp_path: Path) -> None:
    barrier = tmp_path / "barrier"
    before = descendants()
    with load_tree(barrier_tree(barrier, 3)) as tree:
        result = tree.run(timeout=HANG_GUARD)
    assert result.ok, result.reason
    assert len(lines(barrier)) == 2 * 3  # "started PID" once per server
    assert descendants() == before


def test_one_server_that_cannot_start_stops_the_others_and_leaves_nothing(
    tmp_path: Path,
) -> None:
    barrier = tmp_path / "barrier"
    missing = "  - mcp: {command: /nonexistent/mcp-server, name: ghost, prefix: ghost}"
    before = descendants()
    with load_tree(barrier_tree(barrier, 2, missing)) as tree:
        result = tree.run(timeout=HANG_GUARD)
    assert not result.ok
    assert "MCP server 'ghost' could not start" in result.reason
    assert "command not found" in result.reason
    assert descendants() == before


@pytest.mark.anyio
async def test_an_http_server_that_never_answers_is_tried_once_without_a_legacy_probe() -> None:
    # A socket that takes every connection and never answers: the streamable-HTTP connect times
    # out, and no legacy-SSE probe follows it (it would be a second connection and timeout).
    import socket
    import threading

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    listener.settimeout(0.2)
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def take() -> None:
        while not stop.is_set():
            try:
                accepted.append(listener.accept()[0])
            except TimeoutError:
                continue

    taker = threading.Thread(target=take, daemon=True)
    taker.start()
    port = listener.getsockname()[1]
    client = MCPClient(url=f"http://127.0.0.1:{port}/mcp", name="mute", connect_timeout=1)
    try:
        with anyio.fail_after(HANG_GUARD), pytest.raises(MCPTimeoutError):
            await client.connect()
        await anyio.sleep(0.5)  # room for a probe that should not come
    finally:
        stop.set()
        taker.join()
        await client.close()
        for conn in accepted:
            conn.close()
        listener.close()
    assert len(accepted) == 1
