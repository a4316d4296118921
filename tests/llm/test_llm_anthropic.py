"""AnthropicProvider over real HTTP against the local fake Messages API server."""

from __future__ import annotations

import json

import pytest
from llm_fake_server import ANTHROPIC_PATH, FAST_RETRY, Reply
from llm_replies import anthropic_message, anthropic_stream

from jianmu_bt.llm import (
    AnthropicProvider,
    InvalidRequestError,
    LLMAuthenticationError,
    LLMConfigurationError,
    LLMOptions,
    LLMResponseError,
    LLMServerError,
    LLMTimeoutError,
    StreamCompleted,
    TextDelta,
    ToolCallDelta,
    assistant_message,
    system_message,
    tool_message,
    user_message,
)
from jianmu_bt.tools import ToolCall, ToolResult, ToolSet, tool


@tool
def weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


@tool
def clock(zone: str = "UTC") -> str:
    """The time in a zone."""
    return "12:00"


TOOLS = ToolSet.from_tools([weather, clock])
PARALLEL = [("weather", {"city": "Paris"}, "toolu_1"), ("clock", {"zone": "CET"}, "toolu_2")]


def provider(server, **kwargs) -> AnthropicProvider:
    kwargs.setdefault("retry", FAST_RETRY)
    kwargs.setdefault("api_key", "sk-ant-test-key-42")
    return AnthropicProvider(model="claude-fake", base_url=server.url, **kwargs)


@pytest.mark.anyio
async def test_text_reply_headers_and_system_prompt(llm_server):
    llm_server.api_key = "sk-ant-test-key-42"
    llm_server.script(Reply(json=anthropic_message("Bonjour", usage=(20, 4))))
    conversation = [
        system_message("Be brief."),
        system_message("Speak French."),
        user_message("Hi"),
    ]
    async with provider(llm_server) as llm:
        response = await llm.complete(conversation)
    assert response.text == "Bonjour" and response.finish_reason == "stop"
    assert response.usage.total_tokens == 24 and response.model == "claude-fake"
    sent = llm_server.requests[0]
    assert sent.path == ANTHROPIC_PATH
    assert sent.headers["x-api-key"] == "sk-ant-test-key-42"
    assert sent.headers["anthropic-version"] == "2023-06-01"
    assert sent.body["system"] == "Be brief.\n\nSpeak French."
    assert sent.body["messages"] == [{"role": "user", "content": [{"type": "text", "text": "Hi"}]}]
    assert sent.body["max_tokens"] == 4096


@pytest.mark.anyio
async def test_parallel_tool_use_blocks_become_tool_calls(llm_server):
    llm_server.script(Reply(json=anthropic_message("Checking.", PARALLEL)))
    options = LLMOptions(tool_choice="required", parallel_tool_calls=False, max_tokens=300)
    async with provider(llm_server) as llm:
        response = await llm.complete([user_message("Paris?")], TOOLS, options)
    assert response.text == "Checking." and response.finish_reason == "tool_calls"
    assert response.tool_calls == [ToolCall(n, a, i) for n, a, i in PARALLEL]
    assert [c["id"] for c in response.message["tool_calls"]] == ["toolu_1", "toolu_2"]
    body = llm_server.requests[0].body
    assert [t["name"] for t in body["tools"]] == ["weather", "clock"]
    assert body["tools"][0]["input_schema"]["required"] == ["city"]
    assert body["tool_choice"] == {"type": "any", "disable_parallel_tool_use": True}
    assert body["max_tokens"] == 300


@pytest.mark.anyio
async def test_tool_results_are_grouped_into_one_user_turn(llm_server):
    llm_server.script(
        Reply(json=anthropic_message("Checking.", PARALLEL)),
        Reply(json=anthropic_message("Sunny, noon.")),
    )
    async with provider(llm_server) as llm:
        first = await llm.complete([user_message("Paris?")], TOOLS)
        conversation = [user_message("Paris?"), first.message]
        conversation.append(tool_message("toolu_1", ToolResult.from_raw("weather", "sunny")))
        conversation.append(tool_message("toolu_2", ToolResult.failure("clock", "no clock")))
        conversation.append(user_message("Be short."))
        final = await llm.complete(conversation, TOOLS)
    assert final.text == "Sunny, noon."
    turns = llm_server.requests[1].body["messages"]
    assert [t["role"] for t in turns] == ["user", "assistant", "user"]
    assert turns[1]["content"] == [
        {"type": "text", "text": "Checking."},
        {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {"city": "Paris"}},
        {"type": "tool_use", "id": "toolu_2", "name": "clock", "input": {"zone": "CET"}},
    ]
    assert turns[2]["content"] == [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "sunny"},
        {
            "type": "tool_result",
            "tool_use_id": "toolu_2",
            "content": "Error: no clock",
            "is_error": True,
        },
        {"type": "text", "text": "Be short."},
    ]


@pytest.mark.anyio
async def test_stream_assembles_input_json_deltas_of_parallel_tools(llm_server):
    llm_server.script(Reply(sse=anthropic_stream(["Let me ", "look."], PARALLEL, fragment=3)))
    async with provider(llm_server) as llm:
        events = [e async for e in llm.stream([user_message("Paris?")], TOOLS)]
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["Let me ", "look."]
    fragments = [e for e in events if isinstance(e, ToolCallDelta)]
    assert fragments[0].id == "toolu_1" and fragments[0].name == "weather"
    assert len(fragments) > 8 and {f.index for f in fragments} == {0, 1}
    for index, expected in enumerate(PARALLEL):
        joined = "".join(f.arguments for f in fragments if f.index == index)
        assert json.loads(joined) == expected[1]
    final = events[-1]
    assert isinstance(final, StreamCompleted)
    assert final.response.text == "Let me look."
    assert final.response.tool_calls == [ToolCall(n, a, i) for n, a, i in PARALLEL]
    assert final.response.finish_reason == "tool_calls"
    assert (final.response.usage.input_tokens, final.response.usage.output_tokens) == (13, 9)
    assert llm_server.requests[0].body["stream"] is True


@pytest.mark.anyio
async def test_error_event_inside_a_stream(llm_server):
    error = json.dumps({"type": "error", "error": {"type": "overloaded_error", "message": "busy"}})
    llm_server.script(Reply(sse=[*anthropic_stream(["a"])[:3], ("error", error)]))
    async with provider(llm_server) as llm:
        with pytest.raises(LLMServerError, match=r"overloaded_error.*busy"):
            async for _ in llm.stream([user_message("go")]):
                pass


@pytest.mark.anyio
async def test_stream_without_message_stop_is_malformed(llm_server):
    llm_server.script(Reply(sse=anthropic_stream(["a"], stop=False)))
    async with provider(llm_server) as llm:
        with pytest.raises(LLMResponseError, match="before 'message_stop'"):
            async for _ in llm.stream([user_message("go")]):
                pass


@pytest.mark.anyio
async def test_529_overloaded_then_success(llm_server):
    overloaded = {"type": "error", "error": {"type": "overloaded_error", "message": "busy"}}
    llm_server.script(Reply(529, json=overloaded), Reply(json=anthropic_message("fine")))
    async with provider(llm_server) as llm:
        assert (await llm.complete([user_message("go")])).text == "fine"
    assert len(llm_server.requests) == 2


@pytest.mark.anyio
async def test_wrong_key_is_an_authentication_error_without_the_key(llm_server):
    llm_server.api_key = "sk-ant-right"
    async with provider(llm_server, api_key="sk-ant-WRONG-secret-9") as llm:
        with pytest.raises(LLMAuthenticationError) as caught:
            await llm.complete([user_message("go")])
    assert "invalid x-api-key" in str(caught.value)
    assert "sk-ant-WRONG-secret-9" not in str(caught.value) + (caught.value.body or "")


@pytest.mark.anyio
async def test_tool_use_without_id_is_malformed(llm_server):
    broken = anthropic_message(None, [("weather", {}, "")])
    llm_server.script(Reply(json=broken), Reply(json={"type": "message"}))
    async with provider(llm_server) as llm:
        with pytest.raises(LLMResponseError, match=r"'content\[0\]' \(tool_use\) needs 'id'"):
            await llm.complete([user_message("go")])
        with pytest.raises(LLMResponseError, match="missing 'content'"):
            await llm.complete([user_message("go")])


@pytest.mark.anyio
async def test_slow_reply_hits_the_timeout(llm_server):
    llm_server.script(Reply(json=anthropic_message("late"), delay=5))
    async with provider(llm_server, timeout=0.3) as llm:
        with pytest.raises(LLMTimeoutError):
            await llm.complete([user_message("go")])
    await llm_server.wait_for_event("disconnected")  # the client hung up before the late reply


@pytest.mark.anyio
async def test_unsupported_content_part_is_reported(llm_server):
    odd = {"role": "user", "content": [{"type": "input_audio", "data": "..."}]}
    async with provider(llm_server) as llm:
        with pytest.raises(InvalidRequestError, match=r"messages\[0\] \(user\)\.content\[0\]"):
            await llm.complete([odd])
    assert llm_server.requests == []


@pytest.mark.anyio
async def test_image_parts_become_image_blocks(llm_server):
    llm_server.script(Reply(json=anthropic_message("a cat")))
    parts = [
        {"type": "text", "text": "What is this?"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
    ]
    async with provider(llm_server) as llm:
        await llm.complete([{"role": "user", "content": parts}])
    blocks = llm_server.requests[0].body["messages"][0]["content"]
    assert blocks[1] == {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="},
    }


@pytest.mark.anyio
async def test_assistant_text_only_history_and_empty_turns(llm_server):
    llm_server.script(Reply(json=anthropic_message("ok")))
    history = [
        user_message("one"),
        assistant_message("two"),
        assistant_message(""),  # an empty turn the API would reject is left out
        user_message("three"),
    ]
    async with provider(llm_server) as llm:
        await llm.complete(history)
    turns = llm_server.requests[0].body["messages"]
    assert [t["role"] for t in turns] == ["user", "assistant", "user"]


def test_key_from_the_environment_goes_only_to_anthropic(monkeypatch, llm_server):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-env-7")
    assert "api_key=set" in repr(AnthropicProvider(model="m"))
    assert "api_key=none" in repr(AnthropicProvider(model="m", base_url=llm_server.url))
    monkeypatch.setenv("ANTHROPIC_BASE_URL", llm_server.url)  # the vendor's own variable
    assert "api_key=set" in repr(AnthropicProvider(model="m"))


@pytest.mark.anyio
async def test_default_host_without_key_fails_before_sending():
    with pytest.raises(LLMConfigurationError, match="ANTHROPIC_API_KEY"):
        await AnthropicProvider(model="claude").complete([user_message("go")])
