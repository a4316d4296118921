"""Fixtures for the MCP tests (helpers live in mcp_test_support)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest
from mcp import Client, StdioServerParameters
from mcp_server_sample_tools import ALL
from mcp_test_support import (
    PYTHON,
    SERVER_ENV,
    HTTPServer,
    descendants,
    http_transport,
    serve_args,
)

from jianmu_bt import ToolSet
from jianmu_bt.mcp import build_mcp_server


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    # Module scope, so module-scoped async fixtures can share one running server.
    return "asyncio"


@pytest.fixture(scope="module", autouse=True)
def no_leftover_processes() -> Iterator[None]:
    """Assert, after the module's other fixtures close, that no process it started is left.

    Autouse fixtures are set up first, so this one is torn down after every server fixture.
    """
    before = descendants()
    yield
    left = descendants() - before
    assert not left, f"processes left behind: {sorted(left)}"


SAMPLE_TOOLS = "mcp_server_sample_tools:ALL"


@pytest.fixture(scope="module")
def http_server() -> Iterator[HTTPServer]:
    """Our server of the sample tools over streamable HTTP on 127.0.0.1, for a test module."""
    server = HTTPServer(tools=SAMPLE_TOOLS)
    yield server
    server.stop()


@pytest.fixture(scope="module", params=["in-process", "stdio", "http"])
async def client(request: pytest.FixtureRequest, http_server: HTTPServer) -> AsyncIterator[Client]:
    """The official SDK client connected to our server of the sample tools: in-process, over
    stdio (a real server process) and over streamable HTTP."""
    target: object
    if request.param == "stdio":
        args = serve_args(tools=SAMPLE_TOOLS)
        target = StdioServerParameters(command=PYTHON, args=args, env=SERVER_ENV)
    elif request.param == "http":
        target = http_transport(http_server.url, http_server.headers)  # with its token
    else:
        target = build_mcp_server(ToolSet(ALL))
    async with Client(target, read_timeout_seconds=20) as connected:  # type: ignore[arg-type]
        yield connected
