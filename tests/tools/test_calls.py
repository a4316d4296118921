"""ToolCall parsing and ToolResult normalisation."""

import pytest

from jianmu_bt.tools import ToolCall, ToolResult


def test_from_dict_decodes_json_string_arguments_and_keeps_the_declared_name():
    call = ToolCall.from_dict({"name": "Add", "arguments": '{"a": 1, "b": 2}', "id": "c1"})
    assert call == ToolCall(name="Add", arguments={"a": 1, "b": 2}, id="c1")


def test_from_dict_keeps_undecodable_arguments_as_string():
    call = ToolCall.from_dict({"name": "add", "arguments": "{a: 1"})
    assert call.arguments == "{a: 1"


def test_from_dict_reads_openai_shape():
    raw = {"id": "call_9", "type": "function", "function": {"name": "Calc", "arguments": "{}"}}
    assert ToolCall.from_dict(raw) == ToolCall(name="Calc", arguments={}, id="call_9")


def test_from_dict_empty_arguments_become_empty_dict():
    assert ToolCall.from_dict({"name": "x", "arguments": ""}).arguments == {}
    assert ToolCall.from_dict({"name": "x"}).arguments == {}


def test_from_dict_rejects_non_mapping():
    with pytest.raises(TypeError, match="mapping"):
        ToolCall.from_dict(["not", "a", "dict"])  # type: ignore[arg-type]


def test_from_list_is_idempotent_and_keeps_instances():
    first = ToolCall.from_list([{"name": "A", "arguments": "{}"}, ToolCall("b", {}, "x")])
    second = ToolCall.from_list(first)
    assert second == first
    assert second[1] is first[1]
    assert ToolCall.from_list(None) == []


def test_with_id_generates_once():
    call = ToolCall("a", {})
    with_id = call.with_id()
    assert with_id.id and with_id.id.startswith("call_")
    assert with_id.with_id() is with_id


def test_to_openai_round_trips_through_from_dict():
    call = ToolCall("add", {"a": 1}, "c1")
    assert ToolCall.from_dict(call.to_openai()) == call


def test_toolcall_is_frozen():
    call = ToolCall("a", {})
    with pytest.raises(AttributeError):
        call.name = "b"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("raw", "error", "ok", "output", "err"),
    [
        (42, None, True, 42, None),
        ({"x": 1}, None, True, {"x": 1}, None),
        ("plain text", None, True, "plain text", None),
        ("Error: boom", None, False, None, "Error: boom"),
        ({"ok": True, "output": 5}, None, True, 5, None),
        ({"ok": True, "result": 6}, None, True, 6, None),
        ({"ok": False, "error": "bad"}, None, False, None, "bad"),
        ("partial", "it broke", False, "partial", "it broke"),
    ],
)
def test_from_raw_shapes(raw, error, ok, output, err):
    result = ToolResult.from_raw("t", raw, error=error)
    assert (result.tool, result.ok, result.output, result.error) == ("t", ok, output, err)


def test_from_raw_passes_tool_results_through():
    existing = ToolResult("other", True, 1)
    assert ToolResult.from_raw("t", existing) is existing
    assert ToolResult.from_raw("t", ToolResult("", False, None, "e")).tool == "t"


def test_failed_dict_without_reason_still_explains():
    result = ToolResult.from_raw("t", {"ok": False})
    assert not result.ok and "without a reason" in result.error


def test_content_is_llm_readable():
    assert ToolResult("t", True, {"a": 1}).content == '{"a": 1}'
    assert ToolResult("t", False, None, "bad").content == "Error: bad"
    assert ToolResult("t", False, None, "Error: bad").content == "Error: bad"


def test_with_unique_ids_replaces_missing_and_repeated_ids_only():
    calls = [
        ToolCall("a", {}, "call_1"),
        ToolCall("b", {}, None),
        ToolCall("c", {}, "call_1"),  # a server that repeats ids
        ToolCall("d", {}, "call_2"),
    ]
    unique = ToolCall.with_unique_ids(calls)
    assert [c.name for c in unique] == ["a", "b", "c", "d"]
    assert unique[0].id == "call_1" and unique[3].id == "call_2"
    assert len({c.id for c in unique}) == 4 and all(c.id for c in unique)
    assert ToolCall.with_unique_ids(unique) == unique  # already unique: unchanged
