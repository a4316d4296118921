"""A stdio MCP server that writes an endless line: the client reads it in linear time, faults
the connection once the line passes `max_message_bytes`, and ends the server's process group.
Before, every chunk re-split the whole buffer (quadratic: seconds of CPU) without bound."""

from __future__ import annotations

import sys
import textwrap

import pytest
from mcp_test_support import PYTHON, alive, descendants

from jianmu_bt.mcp import MCPClient, MCPConnectionError

pytestmark = pytest.mark.anyio

ENDLESS = textwrap.dedent(
    """
    import os, sys
    chunk = b"x" * 65536
    while True:  # one line that never ends, as fast as the pipe takes it
        os.write(sys.stdout.fileno(), chunk)
    """
)


async def test_an_endless_line_faults_the_connection_and_ends_the_server() -> None:
    before = descendants()
    client = MCPClient(
        command=PYTHON, args=["-c", ENDLESS], connect_timeout=60, max_message_bytes=4 * 1024**2
    )
    with pytest.raises(MCPConnectionError) as caught:
        await client.connect()  # before the cap, this waited out connect_timeout, CPU bound
    assert not any(map(alive, descendants() - before))  # the server's group was ended
    assert "sent a message longer than 4194304 bytes (max_message_bytes)" in str(caught.value)


def test_the_cap_is_a_validated_option() -> None:
    with pytest.raises(ValueError, match="max_message_bytes"):
        MCPClient(command=sys.executable, max_message_bytes=10)
