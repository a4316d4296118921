"""ScriptedProvider: scripted choices, real checks, the same stream assembly."""

from __future__ import annotations

import pytest

from jianmu_bt.llm import (
    InvalidRequestError,
    LLMProvider,
    LLMRateLimitError,
    LLMResponse,
    ScriptedProvider,
    ScriptExhaustedError,
    StreamCompleted,
    ToolCallDelta,
    tool_message,
    user_message,
)
from jianmu_bt.tools import ToolCall, ToolSet, tool


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


TOOLS = ToolSet.from_tools([add])
TWO_CALLS = {
    "content": "Adding.",
    "tool_calls": [
        {"name": "add", "arguments": {"a": 1, "b": 2}},
        {"name": "add", "arguments": {"a": 30, "b": 12}},
    ],
}


@pytest.mark.anyio
async def test_replies_in_order_with_deterministic_ids():
    llm = ScriptedProvider([TWO_CALLS, "The sums are 3 and 42."])
    assert isinstance(llm, LLMProvider)
    first = await llm.complete([user_message("sum")], TOOLS)
    assert first.text == "Adding." and first.finish_reason == "tool_calls"
    assert [c.id for c in first.tool_calls] == ["call_1_0", "call_1_1"]
    conversation = [user_message("sum"), first.message]
    for call in first.tool_calls:
        conversation.append(tool_message(call.id, await TOOLS.call(call)))
    final = await llm.complete(conversation, TOOLS)
    assert final.text == "The sums are 3 and 42." and final.tool_calls == []
    last_seen = llm.calls[1].messages[-1]
    assert last_seen == {"role": "tool", "tool_call_id": "call_1_1", "content": "42", "name": "add"}
    assert llm.calls[0].tools == TOOLS.schemas() and llm.remaining == 0


@pytest.mark.anyio
async def test_running_out_is_a_clear_error():
    llm = ScriptedProvider(["only one"])
    await llm.complete([user_message("a")])
    with pytest.raises(ScriptExhaustedError, match=r"1 scripted, this is call 2.*user: 'b'"):
        await llm.complete([user_message("b")])


@pytest.mark.anyio
async def test_function_replies_sync_and_async():
    def echo(messages, tools):
        return f"{messages[-1]['content']} ({len(tools)} tools)"

    async def call_tool(messages, tools):
        return {"tool_calls": [ToolCall("add", {"a": 1, "b": 1}, "fixed")]}

    assert (await ScriptedProvider(echo).complete([user_message("hi")], TOOLS)).text == (
        "hi (1 tools)"
    )
    reply = await ScriptedProvider(call_tool).complete([user_message("x")])
    assert reply.tool_calls == [ToolCall("add", {"a": 1, "b": 1}, "fixed")]


@pytest.mark.anyio
async def test_exceptions_and_responses_pass_through():
    ready = LLMResponse.build("prebuilt", model="other")
    llm = ScriptedProvider([LLMRateLimitError("scripted 429"), ready])
    with pytest.raises(LLMRateLimitError, match="scripted 429"):
        await llm.complete([user_message("x")])
    assert await llm.complete([user_message("x")]) is ready


@pytest.mark.anyio
async def test_stream_fragments_and_assembles_the_same_reply():
    whole = await ScriptedProvider([TWO_CALLS]).complete([user_message("x")])
    events = [e async for e in ScriptedProvider([TWO_CALLS]).stream([user_message("x")])]
    fragments = [e for e in events if isinstance(e, ToolCallDelta)]
    assert len([f for f in fragments if f.index == 0]) > 2
    assert isinstance(events[-1], StreamCompleted)
    assert events[-1].response.message == whole.message
    assert events[-1].response.tool_calls == whole.tool_calls


@pytest.mark.anyio
async def test_conversation_is_checked_like_a_real_api():
    llm = ScriptedProvider(["x"])
    with pytest.raises(InvalidRequestError, match="answers no tool call"):
        await llm.complete([user_message("a"), tool_message("call_9", "5")])
    assert llm.calls == []


@pytest.mark.parametrize(
    ("replies", "expected"),
    [
        ([42], r"replies\[0\]: a scripted reply is a string"),
        ([{"tool_call": []}], r"replies\[0\]: unknown key\(s\) 'tool_call'"),
        ([{"tool_calls": [{"arguments": {}}]}], r"replies\[0\]\.tool_calls\[0\] needs a 'name'"),
        ([{}], "needs 'content' or 'tool_calls'"),
        ("just text", "must be a list"),
    ],
)
def test_bad_scripts_are_rejected_when_built(replies, expected):
    with pytest.raises(InvalidRequestError, match=expected):
        ScriptedProvider(replies)
