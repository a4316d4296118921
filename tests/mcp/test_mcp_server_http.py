"""Streamable HTTP: sessions (the SDK's session manager) and a clear refusal of legacy HTTP+SSE
clients, against our server as a real process on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Iterator

import anyio
import httpx
import pytest
from mcp.client.sse import sse_client
from mcp_test_support import HTTPServer

from jianmu_bt.mcp.server_http import legacy_sse_message

pytestmark = pytest.mark.anyio

HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
VERSION = {"mcp-protocol-version": "2025-06-18"}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"},
    },
}
LIST = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}


@pytest.fixture(scope="module")
def server() -> Iterator[HTTPServer]:
    running = HTTPServer()
    yield running
    running.stop()


def open_session(http: httpx.Client, url: str) -> str:
    started = http.post(url, json=INITIALIZE, headers=HEADERS)
    assert started.status_code == 200
    session = started.headers["mcp-session-id"]
    done = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    headers = {**HEADERS, **VERSION, "mcp-session-id": session}
    assert http.post(url, json=done, headers=headers).status_code == 202
    return session


def test_each_client_gets_its_own_session_until_it_ends_it(server: HTTPServer) -> None:
    with httpx.Client(timeout=10, headers=server.headers) as http:
        first, second = open_session(http, server.url), open_session(http, server.url)
        listed = http.post(
            server.url, json=LIST, headers={**HEADERS, **VERSION, "mcp-session-id": first}
        )
        ended = http.delete(server.url, headers={**HEADERS, **VERSION, "mcp-session-id": first})
        after = http.post(
            server.url, json=LIST, headers={**HEADERS, **VERSION, "mcp-session-id": first}
        )
        other = http.post(
            server.url, json=LIST, headers={**HEADERS, **VERSION, "mcp-session-id": second}
        )
        bogus = http.post(
            server.url, json=LIST, headers={**HEADERS, **VERSION, "mcp-session-id": "nope"}
        )
        http.delete(server.url, headers={**HEADERS, **VERSION, "mcp-session-id": second})
    assert first != second
    assert listed.status_code == 200 and '"name":"add"' in listed.text
    assert ended.status_code == 200
    assert after.status_code == 404 and "Session not found" in after.text
    assert other.status_code == 200  # ending one session leaves the others
    assert bogus.status_code == 404


async def test_the_sdk_client_works_in_both_protocol_eras(server: HTTPServer) -> None:
    for mode in ("legacy", "auto"):
        async with server.sdk_client(mode=mode, read_timeout_seconds=10) as client:
            result = await client.call_tool("add", {"a": 1, "b": 2})
        assert result.content[0].text == "3", mode


@pytest.mark.parametrize("path", ["/sse", "/messages"])
def test_a_legacy_sse_client_is_told_which_transport_to_use(server: HTTPServer, path: str) -> None:
    base = server.url.removesuffix("/mcp")
    with httpx.Client(timeout=10, headers=server.headers) as http:
        got = http.get(base + path, headers={"Accept": "text/event-stream"})
        posted = http.post(base + path, json=LIST)
    for response in (got, posted):
        assert response.status_code == 404
        assert response.text == legacy_sse_message("/mcp")
        assert "Streamable HTTP transport at /mcp" in response.text


def test_a_legacy_get_on_the_endpoint_itself_gets_the_same_message(server: HTTPServer) -> None:
    with httpx.Client(timeout=10, headers=server.headers) as http:
        got = http.get(server.url, headers={"Accept": "text/event-stream"})
    assert got.status_code == 400
    assert got.text == legacy_sse_message("/mcp")


async def test_the_sdks_legacy_sse_client_fails_at_once_with_the_http_error(
    server: HTTPServer,
) -> None:
    with anyio.fail_after(10), pytest.raises(Exception, match="404") as caught:
        async with sse_client(server.url.removesuffix("/mcp") + "/sse", headers=server.headers):
            pass
    assert "sse" in str(caught.value)
