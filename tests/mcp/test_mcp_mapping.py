"""Translating between MCP and jianmu_bt: annotations, results, names, configs, clash checks."""

from __future__ import annotations

import base64
from typing import Any

import mcp_types as types
import pytest
from pydantic import ValidationError

from jianmu_bt import BaseToolProvider, Tool, ToolResult, tool
from jianmu_bt.mcp import (
    MCPServerConfig,
    MCPToolProvider,
    ToolNameClashError,
    annotation_hints,
    call_result_to_tool_result,
    effect_tags_from_annotations,
    idempotent_from_annotations,
    local_tool_name,
    merge_providers_tools,
    parallel_safe_from_annotations,
    read_only_from_annotations,
)
from jianmu_bt.mcp.results import tool_result_to_call_result

# -- annotations -> metadata ---------------------------------------------------------------


def test_read_only_hint_makes_a_tool_read_only_and_parallel_safe() -> None:
    hints = types.ToolAnnotations(read_only_hint=True)
    assert read_only_from_annotations(hints) is True
    assert parallel_safe_from_annotations(hints) is True


@pytest.mark.parametrize(
    "annotations", [None, types.ToolAnnotations(), types.ToolAnnotations(read_only_hint=False)]
)
def test_without_read_only_hint_a_tool_is_not_read_only_and_runs_serially(annotations: Any) -> None:
    assert read_only_from_annotations(annotations) is False
    assert parallel_safe_from_annotations(annotations) is False


@pytest.mark.parametrize("annotations", [None, types.ToolAnnotations(), {}])
def test_absent_hints_mean_destructive_and_open_world_as_the_spec_says(annotations: Any) -> None:
    assert effect_tags_from_annotations(annotations) == ("destructive", "open_world")
    assert idempotent_from_annotations(annotations) is False


def test_only_hints_stated_false_take_the_effect_tags_away() -> None:
    both = types.ToolAnnotations(destructive_hint=True, open_world_hint=True)
    assert effect_tags_from_annotations(both) == ("destructive", "open_world")
    additive = types.ToolAnnotations(destructive_hint=False)
    assert effect_tags_from_annotations(additive) == ("open_world",)
    closed = types.ToolAnnotations(destructive_hint=False, open_world_hint=False)
    assert effect_tags_from_annotations(closed) == ()


def test_a_read_only_tool_is_never_destructive_nor_idempotent_from_its_hints() -> None:
    # destructiveHint and idempotentHint mean something only when readOnlyHint is false.
    read_only = types.ToolAnnotations(read_only_hint=True, destructive_hint=True)
    assert effect_tags_from_annotations(read_only) == ("open_world",)
    local = types.ToolAnnotations(read_only_hint=True, open_world_hint=False)
    assert effect_tags_from_annotations(local) == ()
    said = types.ToolAnnotations(read_only_hint=True, idempotent_hint=True)
    assert idempotent_from_annotations(said) is False


def test_idempotent_hint_makes_a_tool_idempotent() -> None:
    assert idempotent_from_annotations(types.ToolAnnotations(idempotent_hint=True)) is True
    assert idempotent_from_annotations(types.ToolAnnotations(idempotent_hint=False)) is False


def test_hints_are_read_from_plain_camel_case_mappings_too() -> None:
    assert parallel_safe_from_annotations({"readOnlyHint": True})
    assert read_only_from_annotations({"readOnlyHint": True})
    assert idempotent_from_annotations({"idempotentHint": True})
    stated = {"destructiveHint": False, "openWorldHint": True}
    assert effect_tags_from_annotations(stated) == ("open_world",)


# -- metadata -> annotations ---------------------------------------------------------------

ALL_HINTS = {"read_only_hint", "destructive_hint", "idempotent_hint", "open_world_hint"}


def test_a_read_only_tool_is_read_only_not_destructive_and_idempotent() -> None:
    assert annotation_hints((), read_only=True) == {
        "read_only_hint": True,
        "destructive_hint": False,
        "idempotent_hint": True,
        "open_world_hint": False,
    }


@pytest.mark.parametrize("tag", ["file_write", "exec", "destructive", "state_write", "web_write"])
def test_write_and_exec_effects_are_destructive(tag: str) -> None:
    hints = annotation_hints([tag])
    assert hints["read_only_hint"] is False
    assert hints["destructive_hint"] is True


def test_a_tool_with_no_effect_tags_that_is_not_read_only_has_unknown_effects() -> None:
    # Unknown effects are effects: the specification's own defaults, sent explicitly.
    assert annotation_hints(()) == {
        "read_only_hint": False,
        "destructive_hint": True,
        "idempotent_hint": False,
        "open_world_hint": True,
    }


@pytest.mark.parametrize("tag", ["http", "web_search"])
def test_network_effects_are_open_world(tag: str) -> None:
    assert annotation_hints([tag])["open_world_hint"] is True
    assert annotation_hints([tag], read_only=True)["open_world_hint"] is True


@pytest.mark.parametrize(
    ("tags", "read_only", "idempotent"),
    [
        ((), False, False),
        (("http",), False, True),
        (("file_read",), True, False),
        (("email_send",), False, True),
    ],
)
def test_every_hint_is_always_sent(
    tags: tuple[str, ...], read_only: bool, idempotent: bool
) -> None:
    hints = annotation_hints(tags, read_only=read_only, idempotent=idempotent)
    assert set(hints) == ALL_HINTS
    assert all(isinstance(value, bool) for value in hints.values())


# -- results -----------------------------------------------------------------------------


def test_structured_content_is_preferred_as_output() -> None:
    result = types.CallToolResult(
        content=[types.TextContent(type="text", text='{"x": 1}')], structured_content={"x": 1}
    )
    assert call_result_to_tool_result("t", result) == ToolResult("t", True, {"x": 1})


def test_text_blocks_are_joined_when_there_is_no_structured_content() -> None:
    result = types.CallToolResult(
        content=[types.TextContent(type="text", text="a"), types.TextContent(type="text", text="b")]
    )
    assert call_result_to_tool_result("t", result).output == "a\nb"


def test_is_error_becomes_a_failed_result_with_the_server_text() -> None:
    result = types.CallToolResult(
        content=[types.TextContent(type="text", text="bad zone")], is_error=True
    )
    converted = call_result_to_tool_result("t", result)
    assert not converted.ok
    assert converted.error == "Error: bad zone"


def test_an_error_without_text_still_says_what_happened() -> None:
    converted = call_result_to_tool_result("t", types.CallToolResult(content=[], is_error=True))
    assert converted.error == "Error: the MCP tool reported an error without a message"


def test_images_audio_and_resources_are_summarised_not_inlined() -> None:
    png = base64.b64encode(b"\x89PNG" + b"0" * 96).decode()
    result = types.CallToolResult(
        content=[
            types.ImageContent(type="image", data=png, mime_type="image/png"),
            types.AudioContent(type="audio", data=png, mime_type="audio/wav"),
            types.ResourceLink(type="resource_link", uri="file:///a.txt", name="a"),
            types.EmbeddedResource(
                type="resource",
                resource=types.TextResourceContents(uri="file:///b.txt", text="inline text"),
            ),
            types.EmbeddedResource(
                type="resource",
                resource=types.BlobResourceContents(
                    uri="file:///c.bin", blob=png, mime_type="application/octet-stream"
                ),
            ),
        ]
    )
    assert call_result_to_tool_result("t", result).output.splitlines() == [
        "[image: image/png, 100 bytes]",
        "[audio: audio/wav, 100 bytes]",
        "[resource link: file:///a.txt (a)]",
        "inline text",
        "[resource: file:///c.bin, application/octet-stream, 100 bytes]",
    ]


def test_a_dict_output_is_served_as_text_and_structured_content() -> None:
    served = tool_result_to_call_result(ToolResult("t", True, {"x": 1}))
    assert served.structured_content == {"x": 1}
    assert served.content[0].text == '{"x": 1}'
    assert served.is_error is False


def test_a_failed_tool_result_is_served_as_an_error_result() -> None:
    served = tool_result_to_call_result(ToolResult.failure("t", "Error: broke"))
    assert served.is_error is True
    assert served.content[0].text == "Error: broke"
    assert served.structured_content is None


# -- names and configs -------------------------------------------------------------------


def test_a_prefix_is_joined_with_an_underscore() -> None:
    assert local_tool_name("get_current_time", "time") == "time_get_current_time"
    assert local_tool_name("get_current_time") == "get_current_time"


def test_characters_function_calling_rejects_are_replaced() -> None:
    assert local_tool_name("files.read/all", "fs") == "fs_files_read_all"


def test_a_config_needs_exactly_one_of_command_and_url() -> None:
    with pytest.raises(ValidationError, match="exactly one of `command`"):
        MCPServerConfig()
    with pytest.raises(ValidationError, match="exactly one of `command`"):
        MCPServerConfig(command="x", url="http://127.0.0.1:1/mcp")


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"url": "ftp://host/x"}, "http"),
        ({"url": "http://127.0.0.1/mcp", "args": ["-v"]}, "apply to `command`"),
        ({"command": "srv", "headers": {"A": "b"}}, "apply to an HTTP server"),
        ({"command": "srv", "timeout": 0}, "greater than 0"),
        ({"command": "srv", "prefix": "bad prefix"}, "pattern"),
        ({"command": "srv", "comand": "typo"}, "Extra inputs are not permitted"),
    ],
)
def test_a_bad_config_says_what_is_wrong(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        MCPServerConfig(**fields)


def test_a_config_labels_itself_by_name_command_or_host() -> None:
    assert MCPServerConfig(command="/usr/bin/mcp-server-time").label == "mcp-server-time"
    assert MCPServerConfig(url="http://127.0.0.1:9/mcp").label == "127.0.0.1:9"
    assert MCPServerConfig(command="x", name="clock").label == "clock"


def test_a_provider_refuses_a_prefix_that_is_not_a_name() -> None:
    with pytest.raises(ValueError, match="prefix must be"):
        MCPToolProvider(command="srv", prefix="a b")


def test_a_provider_must_be_initialised_before_it_has_tools() -> None:
    provider = MCPToolProvider.from_config({"command": "srv", "name": "clock"})
    with pytest.raises(RuntimeError, match="MCP server 'clock' is not initialized"):
        provider.get_tools()


# -- merging providers -------------------------------------------------------------------


@tool
def get_current_time(timezone: str) -> str:
    """A local tool that happens to share a name with a server's tool."""
    return timezone


class NamedProvider(BaseToolProvider):
    """A provider of fixed tools with a server name, like an initialised MCPToolProvider."""

    def __init__(self, server_name: str, tools: list[Tool]) -> None:
        self.server_name = server_name
        self.tools = tools

    def get_tools(self, **kwargs: Any) -> list[Tool]:
        return list(self.tools)


def test_merging_providers_keeps_every_tool_in_order() -> None:
    merged = merge_providers_tools([NamedProvider("a", [get_current_time])], extra=[])
    assert [t.name for t in merged] == ["get_current_time"]


def test_a_clash_names_both_servers_and_the_tool() -> None:
    providers = [
        NamedProvider("clock", [get_current_time]),
        NamedProvider("time", [get_current_time]),
    ]
    with pytest.raises(ToolNameClashError) as caught:
        merge_providers_tools(providers)
    message = str(caught.value)
    assert "'get_current_time'" in message
    assert "MCP server 'clock'" in message and "MCP server 'time'" in message
    assert "prefix" in message


def test_a_clash_with_a_tool_given_directly_is_an_error_too() -> None:
    with pytest.raises(ToolNameClashError, match="a tool given directly"):
        merge_providers_tools([NamedProvider("time", [get_current_time])], extra=[get_current_time])
