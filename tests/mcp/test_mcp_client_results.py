"""What comes back from a server, and what a server may ask: media kept as content parts,
task-only tools left out with the reason, legacy HTTP+SSE servers named (and reachable with
`transport: sse`), roots offered in both protocol eras, elicitation and sampling declined.

The server is `mcp_client_features_server.py` (the official SDK's MCPServer), a real process.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import anyio
import pytest
from mcp_test_support import HERE, PYTHON, SERVER_ENV

from jianmu_bt.mcp import MCPClient, MCPConnectionError, MCPToolProvider
from jianmu_bt.mcp.results import MediaText
from jianmu_bt.tools import ToolSet

pytestmark = pytest.mark.anyio

FEATURES = str(HERE / "mcp_client_features_server.py")
HANG_GUARD = 60


@pytest.fixture(scope="module")
def root_dirs(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    base = tmp_path_factory.mktemp("roots")
    found = [base / "one", base / "two"]
    for path in found:
        path.mkdir()
    return found


@pytest.fixture(scope="module")
async def legacy(root_dirs: list[Path]) -> AsyncIterator[MCPToolProvider]:
    """The server over the 2025-11-25 handshake (tasks and bare requests still exist there)."""
    client = MCPClient(
        command=PYTHON, args=[FEATURES], name="features", mode="legacy", roots=root_dirs
    )
    async with MCPToolProvider(client) as provider:
        yield provider


async def test_images_and_audio_stay_content_parts_behind_a_text_stand_in(
    legacy: MCPToolProvider,
) -> None:
    result = await ToolSet.from_tools(legacy.get_tools()).call("picture", {})
    assert result.ok
    assert result.content == "a red dot\n[image: image/png, 66 bytes]\n[audio: audio/wav, 16 bytes]"
    assert isinstance(result.output, MediaText)
    text, image, audio = result.output.parts
    assert text == {"type": "text", "text": "a red dot"}
    assert image["type"] == "image_url"
    assert image["image_url"]["url"].startswith("data:image/png;base64,iVBORw0KGgo")
    assert audio["type"] == "input_audio" and audio["input_audio"]["format"] == "wav"
    assert "base64" not in result.content  # an LLM reading the text gets no base64


async def test_a_tool_that_requires_tasks_is_left_out_with_the_reason(
    legacy: MCPToolProvider,
) -> None:
    assert "queued" not in {tool.name for tool in legacy.get_tools()}
    assert "count" in {tool.name for tool in legacy.get_tools()}
    assert "requires task-augmented execution" in legacy.skipped["queued"]


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_the_roots_are_offered_in_both_protocol_eras(
    mode: str, root_dirs: list[Path]
) -> None:
    client = MCPClient(command=PYTHON, args=[FEATURES], mode=mode, roots=root_dirs)
    async with client:
        with anyio.fail_after(HANG_GUARD):
            result = await client.call_tool("roots", {})
    assert result.content[0].text.split("\n") == [path.resolve().as_uri() for path in root_dirs]


async def test_a_missing_root_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"MCP root '.*nowhere' is not a directory"):
        MCPClient(command=PYTHON, args=[FEATURES], roots=[tmp_path / "nowhere"])


async def test_elicitation_is_declined_and_the_call_fails_clearly(
    legacy: MCPToolProvider,
) -> None:
    result = await ToolSet.from_tools(legacy.get_tools()).call("ask", {})
    assert not result.ok
    assert "rejected tools/call 'ask': Elicitation not supported" in result.error


async def test_sampling_is_declined_and_the_call_fails_clearly(legacy: MCPToolProvider) -> None:
    result = await ToolSet.from_tools(legacy.get_tools()).call("sample", {})
    assert not result.ok
    assert "rejected tools/call 'sample': Sampling not supported" in result.error


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_call_given_up_on_is_cancelled_on_the_server(mode: str, tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    client = MCPClient(command=PYTHON, args=[FEATURES], name="features", mode=mode, timeout=1)
    async with MCPToolProvider(client) as provider:
        tools = ToolSet.from_tools(provider.get_tools())
        with anyio.fail_after(HANG_GUARD):
            given_up = await tools.call("linger", {"path": str(marker)})
            while not marker.exists():  # the server's handler runs its clean-up
                await anyio.sleep(0.05)
    assert "did not answer tools/call 'linger' within 1.0s" in given_up.error
    assert marker.read_text() == "cancelled"


@pytest.fixture(scope="module")
def sse_url() -> Iterator[str]:
    """The features server over the legacy HTTP+SSE transport, as a real process."""
    proc = subprocess.Popen(
        [PYTHON, FEATURES, "--sse"],
        env={**os.environ, **SERVER_ENV},
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    line = proc.stderr.readline()
    found = re.search(r"(http://\S+)", line)
    try:
        assert found, f"the SSE server did not start: {line}"
        yield found.group(1)
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        proc.stderr.close()


async def test_a_legacy_sse_server_is_named_as_such(sse_url: str) -> None:
    client = MCPClient(url=sse_url, name="old", connect_timeout=5)
    with anyio.fail_after(HANG_GUARD), pytest.raises(MCPConnectionError) as caught:
        await client.connect()
    assert str(caught.value) == (
        f"MCP server 'old' ({sse_url}) speaks the legacy HTTP+SSE transport; set transport: sse"
    )


async def test_a_legacy_sse_server_works_with_transport_sse(sse_url: str) -> None:
    provider = MCPToolProvider.from_config({"url": sse_url, "transport": "sse", "name": "old"})
    async with provider:
        tools = ToolSet.from_tools(provider.get_tools())
        with anyio.fail_after(HANG_GUARD):
            result = await tools.call("count", {"steps": 2, "pause": 0})
    assert result.output == "counted 2"
