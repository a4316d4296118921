"""build_mcp_server: a ToolSet as an MCP server, checked with the official SDK client in-process."""

from __future__ import annotations

import anyio
import pytest
from mcp import Client, MCPError
from mcp_sample_tools import ALL, add, describe_point, fail, fetch, save_note, slow

from jianmu_bt import Tool, ToolCall, ToolSet, tool
from jianmu_bt.mcp import build_mcp_server

pytestmark = pytest.mark.anyio

TOOLS = ToolSet.from_tools(ALL)


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_tools_are_listed_with_schema_description_and_annotations(mode: str) -> None:
    async with Client(build_mcp_server(TOOLS), mode=mode) as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}
    assert list(listed) == TOOLS.names()
    assert listed["add"].input_schema == add.to_schema()["parameters"]
    assert listed["add"].description == "Add two integers."
    assert listed["add"].annotations.read_only_hint is True
    assert listed["save_note"].annotations.read_only_hint is False
    assert listed["save_note"].annotations.destructive_hint is True
    assert listed["fetch"].annotations.open_world_hint is True
    assert listed["add"].annotations.open_world_hint is False


async def test_a_call_goes_through_the_toolset_and_returns_text() -> None:
    async with Client(build_mcp_server(TOOLS)) as client:
        result = await client.call_tool("add", {"a": 2, "b": 3})
    assert result.is_error is False
    assert result.content[0].text == "5"


async def test_a_dict_result_also_comes_as_structured_content() -> None:
    async with Client(build_mcp_server(TOOLS)) as client:
        result = await client.call_tool("describe_point", {"x": 3, "y": 4})
    assert result.structured_content == {"x": 3.0, "y": 4.0, "norm": 5.0}


async def test_a_failing_tool_is_an_error_result_not_a_crash() -> None:
    async with Client(build_mcp_server(TOOLS)) as client:
        failed = await client.call_tool("fail", {"reason": "no luck"})
        bad_args = await client.call_tool("add", {"a": "two"})
        still_fine = await client.call_tool("add", {"a": 1, "b": 1})
    assert failed.is_error and failed.content[0].text == "Error: ValueError: no luck"
    assert bad_args.is_error and "invalid arguments for tool 'add'" in bad_args.content[0].text
    assert still_fine.content[0].text == "2"


async def test_an_unknown_tool_is_a_protocol_error_naming_it() -> None:
    async with Client(build_mcp_server(TOOLS)) as client:
        with pytest.raises(MCPError, match="Unknown tool: nope; available: add"):
            await client.call_tool("nope", {})


async def test_the_server_timeout_bounds_each_call() -> None:
    async with Client(build_mcp_server(ToolSet([slow]), timeout=0.2)) as client:
        with anyio.fail_after(5):
            result = await client.call_tool("slow", {"seconds": 10})
    assert result.is_error
    assert "timed out after 0.2s" in result.content[0].text


# -- the guard -----------------------------------------------------------------------------

seen: list[tuple[ToolCall, Tool]] = []


def deny_writes(call: ToolCall, tool: Tool) -> str | None:
    seen.append((call, tool))
    return "writing is not allowed here" if "file_write" in tool.effect_tags else None


async def test_a_guard_refusal_is_an_error_result_saying_it_was_refused() -> None:
    seen.clear()
    server = build_mcp_server(ToolSet([add, save_note]), guard=deny_writes)
    async with Client(server) as client:
        refused = await client.call_tool("save_note", {"text": "hi"})
        allowed = await client.call_tool("add", {"a": 1, "b": 2})
    assert refused.is_error
    assert refused.content[0].text == (
        "Error: the call to 'save_note' was refused: writing is not allowed here"
    )
    assert allowed.content[0].text == "3"
    call, guarded_tool = seen[0]
    assert call.name == "save_note" and call.arguments == {"text": "hi"} and call.id
    assert guarded_tool is save_note


async def test_an_async_guard_is_awaited() -> None:
    async def budget(call: ToolCall, tool: Tool) -> str | None:
        await anyio.sleep(0)
        return "budget spent" if tool.name == "fetch" else None

    async with Client(build_mcp_server(ToolSet([fetch, add]), guard=budget)) as client:
        refused = await client.call_tool("fetch", {"url": "http://example.org"})
        allowed = await client.call_tool("add", {"a": 1, "b": 2})
    assert refused.is_error and refused.content[0].text.endswith("refused: budget spent")
    assert not allowed.is_error


async def test_a_guard_that_raises_refuses_the_call() -> None:
    def broken(call: ToolCall, tool: Tool) -> str | None:
        raise RuntimeError("policy file missing")

    ran = []

    @tool
    def record() -> str:
        """Record that it ran."""
        ran.append(True)
        return "ran"

    async with Client(build_mcp_server(ToolSet([record]), guard=broken)) as client:
        result = await client.call_tool("record", {})
    assert result.is_error
    assert "the guard failed (RuntimeError: policy file missing)" in result.content[0].text
    assert ran == []


def test_build_mcp_server_needs_a_toolset() -> None:
    with pytest.raises(TypeError, match="needs a ToolSet"):
        build_mcp_server([add, describe_point, fail])  # type: ignore[arg-type]
