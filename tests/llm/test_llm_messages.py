"""Messages, tool schemas and options: the checks every provider runs before sending."""

from __future__ import annotations

import pytest

from jianmu_bt.llm import (
    InvalidRequestError,
    LLMOptions,
    LLMResponse,
    Usage,
    assistant_message,
    normalize_messages,
    system_message,
    tool_message,
    tool_result_message,
    tool_schemas,
    user_message,
)
from jianmu_bt.tools import ToolCall, ToolResult, ToolSet, tool


@tool
def lookup(term: str) -> str:
    """Look a term up."""
    return term


def test_builders_make_openai_shaped_dicts():
    call = ToolCall("lookup", {"term": "bt"}, "call_1")
    assert system_message("s") == {"role": "system", "content": "s"}
    assert user_message("u") == {"role": "user", "content": "u"}
    assert assistant_message(None, [call]) == {
        "role": "assistant",
        "content": None,
        "tool_calls": [call.to_openai()],
    }
    assert tool_result_message(call, ToolResult.from_raw("lookup", {"x": 1})) == {
        "role": "tool",
        "tool_call_id": "call_1",
        "content": '{"x": 1}',
        "name": "lookup",
    }
    assert tool_message("call_1", ToolResult.failure("lookup", "gone"))["content"] == (
        "Error: gone"
    )


def test_assistant_message_gives_ids_to_calls_without_one():
    message = assistant_message("", [{"name": "lookup", "arguments": {}}])
    assert message["tool_calls"][0]["id"].startswith("call_")


def test_a_valid_conversation_round_trips():
    call = ToolCall("lookup", {"term": "bt"}, "call_1")
    conversation = [
        system_message("s"),
        user_message("u"),
        assistant_message(None, [call]),
        tool_result_message(call, ToolResult.from_raw("lookup", "found")),
        assistant_message("done"),
    ]
    assert normalize_messages(conversation) == conversation


@pytest.mark.parametrize(
    ("messages", "expected"),
    [
        ([], "messages is empty"),
        ("hello", "must be a list"),
        ([{"role": "robot", "content": "x"}], r"messages\[0\]: unknown role 'robot'"),
        ([{"role": "user"}], r"messages\[0\] \(user\): 'content' is missing"),
        ([{"role": "user", "content": "x", "tool_call": []}], "unknown key"),
        ([{"role": "user", "content": 42}], "must be a string or a list of content parts"),
        (
            [{"role": "assistant", "content": None, "tool_calls": [{"function": {"name": "f"}}]}],
            r"tool_calls\[0\] \(f\) has no id",
        ),
        (
            [{"role": "tool", "content": "x", "tool_call_id": "c9"}],
            "tool_call_id 'c9' answers no tool call",
        ),
        (
            [
                assistant_message(None, [ToolCall("f", {}, "c1")]),
                tool_message("c1", "a"),
                tool_message("c1", "b"),
            ],
            "'c1' was already answered",
        ),
        (
            [assistant_message(None, [ToolCall("f", {}, "c1")])],
            "the conversation ends",
        ),
    ],
)
def test_bad_conversations_name_the_message(messages, expected):
    with pytest.raises(InvalidRequestError, match=expected):
        normalize_messages(messages)


def test_tool_schemas_from_toolset_tools_and_dicts():
    from_set = tool_schemas(ToolSet.from_tools([lookup]))
    assert from_set == [lookup.to_schema()]
    assert tool_schemas([lookup]) == from_set
    openai_shaped = {"type": "function", "function": {"name": "f", "parameters": None}}
    assert tool_schemas([openai_shaped]) == [
        {"name": "f", "description": "", "parameters": {"type": "object", "properties": {}}}
    ]
    with pytest.raises(InvalidRequestError, match=r"tools\[1\]: two tools are named 'lookup'"):
        tool_schemas([lookup, lookup])
    with pytest.raises(InvalidRequestError, match=r"tools\[0\]: a tool schema needs a 'name'"):
        tool_schemas([{"description": "x"}])
    with pytest.raises(InvalidRequestError, match=r"single FunctionTool \(wrap it"):
        tool_schemas(lookup)  # type: ignore[arg-type]


def test_options_merge_field_by_field():
    base = LLMOptions(model="a", temperature=0.1, extra={"top_p": 1, "seed": 1})
    merged = base.merged(LLMOptions(temperature=0.7, extra={"seed": 2}))
    assert merged.model == "a" and merged.temperature == 0.7
    assert merged.extra == {"top_p": 1, "seed": 2}
    with pytest.raises(ValueError, match="max_tokens"):
        LLMOptions(max_tokens=0)
    with pytest.raises(ValueError, match="Extra inputs"):
        LLMOptions(temprature=1)  # type: ignore[call-arg]


def test_usage_adds_up_and_fills_total():
    total = Usage(input_tokens=3, output_tokens=2) + Usage(input_tokens=1, output_tokens=1)
    assert (total.input_tokens, total.output_tokens, total.total_tokens) == (4, 3, 7)


def test_response_build_keeps_message_and_calls_in_step():
    response = LLMResponse.build("", [ToolCall("lookup", {"term": "x"})], finish_reason="stop")
    assert response.finish_reason == "tool_calls"  # a turn ending in calls is a tool-call turn
    assert response.tool_calls[0].id == response.message["tool_calls"][0]["id"]
    assert response.to_dict()["tool_calls"][0]["arguments"] == {"term": "x"}


def test_response_build_gives_repeated_call_ids_ids_of_their_own():
    calls = [ToolCall("lookup", {"term": t}, "call_0") for t in "xy"]
    response = LLMResponse.build("", calls)
    ids = [c.id for c in response.tool_calls]
    assert ids[0] == "call_0" and len(set(ids)) == 2
    assert [c["id"] for c in response.message["tool_calls"]] == ids
