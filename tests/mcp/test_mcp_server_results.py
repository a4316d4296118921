"""outputSchema, structuredContent and media blocks of served tools, seen by the official SDK
client: in-process, over stdio (a real server process) and over streamable HTTP (127.0.0.1)."""

from __future__ import annotations

import json

import pytest
from mcp import Client
from mcp_server_sample_tools import PNG, mirror, picture, square, untyped
from mcp_test_support import HERE, PYTHON

from jianmu_bt import ToolSet
from jianmu_bt.mcp import MCPToolProvider, build_mcp_server
from jianmu_bt.mcp.results import content_part
from jianmu_bt.mcp.server_results import media_block

pytestmark = pytest.mark.anyio

FEATURES = str(HERE / "mcp_client_features_server.py")


async def test_a_typed_return_is_advertised_as_an_output_schema(client: Client) -> None:
    listed = {t.name: t for t in (await client.list_tools()).tools}
    assert listed["mirror"].output_schema == mirror.output_schema  # an object: as it is
    assert listed["square"].output_schema == {
        "type": "object",
        "properties": {"result": {"type": "integer"}},
        "required": ["result"],
    }
    assert listed["words"].output_schema["properties"]["result"]["type"] == "array"
    assert listed["untyped"].output_schema is None  # no return type: nothing is claimed


async def test_structured_content_matches_the_output_schema(client: Client) -> None:
    # The SDK client validates structuredContent against the listed outputSchema.
    squared = await client.call_tool("square", {"x": 7})
    mirrored = await client.call_tool("mirror", {"x": 1, "y": 2})
    split = await client.call_tool("words", {"text": "a b c"})
    echoed = await client.call_tool("untyped", {"text": "hi"})
    assert (squared.structured_content, squared.content[0].text) == ({"result": 49}, "49")
    assert mirrored.structured_content == {"x": 2, "y": 1}
    assert json.loads(mirrored.content[0].text) == {"x": 2, "y": 1}
    assert split.structured_content == {"result": ["a", "b", "c"]}
    assert echoed.structured_content is None and echoed.content[0].text == "hi"


async def test_an_image_stays_an_image_content_block(client: Client) -> None:
    result = await client.call_tool("picture", {"caption": "a dot"})
    image, caption = result.content
    assert (image.type, image.mime_type, image.data) == ("image", "image/png", PNG)
    assert (caption.type, caption.text) == ("text", "a dot")
    assert result.structured_content["result"][0]["data"] == PNG  # it declared `-> list`
    assert not result.is_error


async def test_a_failed_call_with_an_output_schema_is_an_error_result(client: Client) -> None:
    result = await client.call_tool("square", {"x": "seven"})
    assert result.is_error and "invalid arguments for tool 'square'" in result.content[0].text


# -- details, in-process ---------------------------------------------------------------------


async def test_openai_style_image_parts_become_image_blocks() -> None:
    from jianmu_bt import tool

    @tool(blocking=False)
    def shot() -> dict:
        """A screenshot."""
        return {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}}

    async with Client(build_mcp_server(ToolSet([shot]))) as connected:
        result = await connected.call_tool("shot", {})
    assert [(b.type, b.mime_type, b.data) for b in result.content] == [("image", "image/png", PNG)]


async def test_an_output_that_does_not_fit_its_schema_is_an_error_not_a_crash() -> None:
    from jianmu_bt import tool

    @tool(blocking=False, output_schema={"type": "object", "properties": {"n": {}}})
    def liar() -> object:
        """Claims an object, returns a number."""
        return 3

    async with Client(build_mcp_server(ToolSet([liar, square]))) as connected:
        result = await connected.call_tool("liar", {})
        after = await connected.call_tool("square", {"x": 2})
    assert result.is_error and "does not fit its outputSchema" in result.content[0].text
    assert after.structured_content == {"result": 4}


def test_the_sample_tools_cover_the_cases() -> None:
    assert untyped.output_schema.get("description") == "Output of the tool"  # the default
    assert picture.output_schema["type"] == "array"


async def test_a_proxied_mcp_image_and_audio_are_served_as_media_blocks() -> None:
    # A tool of another MCP server (a real process) served again: its MediaText output goes
    # out as the blocks it came in as, not as their one-line text stand-ins.
    from mcp_client_features_server import PNG, WAV

    async with MCPToolProvider(command=PYTHON, args=[FEATURES], server_name="features") as provider:
        served = build_mcp_server(ToolSet.from_tools(provider.get_tools()))
        async with Client(served, read_timeout_seconds=20) as client:  # type: ignore[arg-type]
            result = await client.call_tool("picture", {})
    kinds = [(block.type, getattr(block, "mime_type", None)) for block in result.content]
    assert kinds == [("text", None), ("image", "image/png"), ("audio", "audio/wav")]
    assert result.content[1].data == PNG
    assert result.content[2].data == WAV


def test_audio_parts_name_their_format_and_come_back_with_their_mime_type() -> None:
    import mcp_types as types

    for mime, audio_format in [("audio/mpeg", "mp3"), ("audio/wav", "wav"), ("audio/ogg", "ogg")]:
        block = types.AudioContent(type="audio", data="AAAA", mime_type=mime)
        part = content_part(block)
        assert part["input_audio"]["format"] == audio_format
        back = media_block(part)
        assert back is not None
        assert back.mime_type == mime
