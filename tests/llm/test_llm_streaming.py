"""StreamAssembler: tool-call fragments in the orders real servers send them."""

from __future__ import annotations

import json

from jianmu_bt.llm import StreamAssembler
from jianmu_bt.tools import ToolCall


def test_index_keyed_fragments_of_parallel_calls_interleaved():
    assembler = StreamAssembler()
    assembler.add_tool_fragment(0, id="c1", name="add", arguments="")
    assembler.add_tool_fragment(1, id="c2", name="mul", arguments='{"a"')
    assembler.add_tool_fragment(0, arguments='{"a": 1,')
    assembler.add_tool_fragment(1, arguments=": 3}")
    assembler.add_tool_fragment(0, arguments=' "b": 2}')
    assert assembler.tool_calls() == [
        ToolCall("add", {"a": 1, "b": 2}, "c1"),
        ToolCall("mul", {"a": 3}, "c2"),
    ]


def test_servers_that_number_every_call_zero():
    assembler = StreamAssembler()
    first = assembler.add_tool_fragment(0, id="c1", name="a", arguments='{"x": 1}')
    second = assembler.add_tool_fragment(0, id="c2", name="b", arguments='{"y"')
    assembler.add_tool_fragment(0, arguments=": 2}")
    assert (first.index, second.index) == (0, 1)
    assert assembler.tool_calls() == [ToolCall("a", {"x": 1}, "c1"), ToolCall("b", {"y": 2}, "c2")]


def test_fragments_without_index_follow_ids_then_the_last_call():
    assembler = StreamAssembler()
    assembler.add_tool_fragment(id="c1", name="a", arguments="{")
    assembler.add_tool_fragment(arguments="}")
    assembler.add_tool_fragment(id="c2", name="b", arguments="[1")
    assembler.add_tool_fragment(id="c1", arguments="")
    assembler.add_tool_fragment(arguments="]")  # continues the most recent call
    calls = assembler.tool_calls()
    assert calls[0] == ToolCall("a", {}, "c1") and calls[1] == ToolCall("b", [1], "c2")


def test_whole_arguments_as_an_object_and_undecodable_text():
    assembler = StreamAssembler()
    assembler.add_tool_fragment(0, id="c1", name="a", arguments={"k": "v"})
    assembler.add_tool_fragment(1, id="c2", name="b", arguments='{"broken"')
    calls = assembler.tool_calls()
    assert calls[0].arguments == {"k": "v"}
    assert calls[1].arguments == '{"broken"'  # kept, so the executor can tell the model


def test_build_joins_text_and_fills_missing_ids():
    assembler = StreamAssembler()
    for piece in ("Hel", "lo"):
        assembler.add_text(piece)
    assert assembler.add_text("") is None
    assembler.add_tool_fragment(0, name="a", arguments=json.dumps({"q": 1}))
    assembler.set_finish_reason("stop")
    response = assembler.build("m")
    assert response.text == "Hello" and response.model == "m"
    assert response.tool_calls[0].id and response.finish_reason == "tool_calls"
    assert response.message["tool_calls"][0]["id"] == response.tool_calls[0].id
