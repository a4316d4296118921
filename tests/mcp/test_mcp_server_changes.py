"""`notifications/tools/list_changed` when the served tools change at run time, heard by the
official SDK client: on the 2025 protocol (`mode="legacy"`, a standalone notification) and on the
2026-07-28 protocol (a `subscriptions/listen` stream), over stdio and streamable HTTP (real
server processes) and in-process."""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import AsyncIterator, Iterator
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters
from mcp_sample_tools import add
from mcp_server_sample_tools import square
from mcp_test_support import HERE, PYTHON, SERVER_ENV, http_transport, printed_token

from jianmu_bt import ToolSet
from jianmu_bt.mcp import ServedTools, build_mcp_server

pytestmark = pytest.mark.anyio

SCRIPT = str(HERE / "mcp_changing_server.py")


@pytest.fixture(scope="module")
def http_url() -> Iterator[tuple[str, dict[str, str]]]:
    """The URL of the changing server over HTTP, and the headers with the token it printed."""
    proc = subprocess.Popen(
        [PYTHON, SCRIPT, "--http"],
        env={**os.environ, **SERVER_ENV},
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    found = re.search(r"(http://\S+)", proc.stderr.readline())
    try:
        assert found, "the changing server did not start"
        token = printed_token(proc.stderr.readline())  # serve() prints the token it generated
        assert token, "the changing server printed no token"
        yield found.group(1), {"Authorization": f"Bearer {token}"}
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        proc.stderr.close()


def target(kind: str, http_url: tuple[str, dict[str, str]]) -> Any:
    if kind == "stdio":
        return StdioServerParameters(command=PYTHON, args=[SCRIPT], env=SERVER_ENV)
    return http_transport(*http_url)


class Heard:
    """A message handler that records tools/list_changed notifications."""

    def __init__(self) -> None:
        self.changes = 0

    async def __call__(self, message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            self.changes += 1


async def wait_for(check: Any, seconds: float = 20) -> None:
    with anyio.fail_after(seconds):
        while not check():
            await anyio.sleep(0.02)


@pytest.mark.parametrize("kind", ["stdio", "http"])
async def test_a_2025_client_hears_that_the_tools_changed(
    kind: str, http_url: tuple[str, dict[str, str]]
) -> None:
    heard = Heard()
    async with Client(
        target(kind, http_url), mode="legacy", message_handler=heard, read_timeout_seconds=20
    ) as client:
        assert client.server_capabilities.tools.list_changed is True
        before = [t.name for t in (await client.list_tools()).tools]
        await client.call_tool("grow", {"name": f"legacy_{kind}"})
        await wait_for(lambda: heard.changes >= 1)
        after = [t.name for t in (await client.list_tools()).tools]
        answer = await client.call_tool(f"legacy_{kind}", {})
        await client.call_tool("shrink", {"name": f"legacy_{kind}"})
        await wait_for(lambda: heard.changes >= 2)
        final = [t.name for t in (await client.list_tools()).tools]
    assert f"legacy_{kind}" not in before and f"legacy_{kind}" in after
    assert answer.content[0].text == f"legacy_{kind}"
    assert f"legacy_{kind}" not in final


@pytest.mark.parametrize("kind", ["stdio", "http"])
async def test_a_2026_client_hears_it_on_its_listen_stream(
    kind: str, http_url: tuple[str, dict[str, str]]
) -> None:
    async with (
        Client(target(kind, http_url), read_timeout_seconds=20) as client,
        client.listen(tools_list_changed=True) as subscription,
    ):
        await client.call_tool("grow", {"name": f"modern_{kind}"})
        with anyio.fail_after(20):
            event = await subscription.__anext__()
        names = [t.name for t in (await client.list_tools(cache_mode="refresh")).tools]
    assert type(event).__name__ == "ToolsListChanged"
    assert f"modern_{kind}" in names


# -- in-process: the Python API --------------------------------------------------------------


@pytest.fixture
async def served() -> AsyncIterator[ServedTools]:
    yield ServedTools(ToolSet([add]))


async def test_tools_added_through_the_python_api_are_listed_and_callable(
    served: ServedTools,
) -> None:
    heard = Heard()
    async with Client(build_mcp_server(served), mode="legacy", message_handler=heard) as client:
        assert [t.name for t in (await client.list_tools()).tools] == ["add"]
        assert served.listeners == 1
        await served.add(square)
        await wait_for(lambda: heard.changes == 1)
        listed = [t.name for t in (await client.list_tools()).tools]
        squared = await client.call_tool("square", {"x": 4})
        await served.remove("add")
        await wait_for(lambda: heard.changes == 2)
        with pytest.raises(Exception, match="Unknown tool: add"):
            await client.call_tool("add", {"a": 1, "b": 2})
    assert listed == ["add", "square"]
    assert squared.structured_content == {"result": 16}


async def test_a_client_that_never_listed_tools_is_not_told(served: ServedTools) -> None:
    heard = Heard()
    async with Client(build_mcp_server(served), mode="legacy", message_handler=heard):
        await served.add(square)
        await anyio.sleep(0.1)
    assert served.listeners == 0 and heard.changes == 0


def test_replace_needs_a_toolset() -> None:
    with pytest.raises(TypeError, match="ServedTools needs a ToolSet"):
        ServedTools([add])  # type: ignore[arg-type]
