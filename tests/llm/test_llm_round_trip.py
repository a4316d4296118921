"""What reasoning models need back on the next turn goes back, to the server that gave it only.

The fake server enforces the rules the real APIs answer 400 for: Anthropic's extended thinking
with tools (the assistant turn must start with its signed thinking block), DeepSeek's thinking
mode (`reasoning_content` on the tool-call turn), Gemini 3 through its OpenAI-compatible endpoint
(`extra_content.google.thought_signature` on each tool call). Replies below follow the vendors'
documented shapes; `test_llm_recorded_*` replays real recorded traffic.
"""

from __future__ import annotations

import json

import anyio
import pytest
from llm_fake_server import FAST_RETRY, Reply

from jianmu_bt.llm import (
    AnthropicProvider,
    LLMOptions,
    OpenAICompatibleProvider,
    tool_message,
    user_message,
)
from jianmu_bt.llm.base import ReasoningDelta, StreamCompleted

TOOLS = [
    {
        "name": "GetWeather",
        "description": "Weather of a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    }
]
SIGNATURE = "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"


def anthropic_thinking_reply(call_id: str = "toolu_01") -> dict:
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [
            {"type": "thinking", "thinking": "The user wants weather.", "signature": SIGNATURE},
            {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix"},
            {"type": "text", "text": "Let me check."},
            {"type": "tool_use", "id": call_id, "name": "GetWeather", "input": {"city": "Paris"}},
        ],
        "stop_reason": "tool_use",
        "usage": {"input_tokens": 40, "output_tokens": 30},
    }


def anthropic_stream(message: dict) -> list[tuple[str, str]]:
    """The Messages stream of `message`, with thinking and signature deltas, as the API sends."""
    start = {**message, "content": [], "stop_reason": None}
    events = [("message_start", {"type": "message_start", "message": start})]
    for index, block in enumerate(message["content"]):
        kind = block["type"]
        empty = {
            "thinking": {"type": "thinking", "thinking": "", "signature": ""},
            "text": {"type": "text", "text": ""},
            "tool_use": {**block, "input": {}},
            "server_tool_use": {**block, "input": {}},
        }.get(kind, block)
        events.append(("content_block_start", {"index": index, "content_block": empty}))
        deltas = []
        if kind == "thinking":
            deltas = [{"type": "thinking_delta", "thinking": block["thinking"][:8]},
                      {"type": "thinking_delta", "thinking": block["thinking"][8:]},
                      {"type": "signature_delta", "signature": block["signature"]}]  # fmt: skip
        elif kind == "text":
            deltas = [{"type": "text_delta", "text": block["text"]}]
        elif kind in ("tool_use", "server_tool_use"):
            text = json.dumps(block["input"])
            deltas = [{"type": "input_json_delta", "partial_json": text[:5]},
                      {"type": "input_json_delta", "partial_json": text[5:]}]  # fmt: skip
        for delta in deltas:
            events.append(("content_block_delta", {"index": index, "delta": delta}))
        events.append(("content_block_stop", {"index": index}))
    stop = {"stop_reason": message["stop_reason"]}
    events.append(("message_delta", {"delta": stop, "usage": {"output_tokens": 30}}))
    events.append(("message_stop", {}))
    return [(name, json.dumps({"type": name, **data})) for name, data in events]


def claude(server) -> AnthropicProvider:
    return AnthropicProvider(
        "claude-sonnet-4-5",
        base_url=server.url,
        api_key="k",
        retry=FAST_RETRY,
        options=LLMOptions(extra={"thinking": {"type": "enabled", "budget_tokens": 1024}}),
    )


@pytest.mark.parametrize("stream", [False, True], ids=["complete", "stream"])
def test_anthropic_thinking_blocks_go_back_exactly_with_their_signatures(llm_server, stream):
    reply = anthropic_thinking_reply()
    first = Reply(sse=anthropic_stream(reply)) if stream else Reply(json=reply)
    llm_server.script(first, Reply(json={**anthropic_thinking_reply("toolu_02"), "content": [
        {"type": "text", "text": "Sunny."}], "stop_reason": "end_turn"}))  # fmt: skip
    llm = claude(llm_server)

    async def main():
        conversation = [user_message("Weather in Paris?")]
        if stream:
            events = [event async for event in llm.stream(conversation, TOOLS)]
            assert [e.text for e in events if isinstance(e, ReasoningDelta)] == [
                "The user",
                " wants weather.",
            ]
            response = events[-1].response
        else:
            response = await llm.complete(conversation, TOOLS)
        assert response.reasoning == "The user wants weather."
        assert response.text == "Let me check."  # the thinking is not part of the answer
        assert [c.name for c in response.tool_calls] == ["GetWeather"]  # as declared
        conversation += [response.message, tool_message("toolu_01", "18C, sunny")]
        final = await llm.complete(conversation, TOOLS)
        return final

    assert anyio.run(main).text == "Sunny."
    sent = llm_server.requests[1].body["messages"][1]
    assert sent == {"role": "assistant", "content": reply["content"]}  # exactly as received


def test_anthropic_rebuilt_turns_are_refused_by_the_api_rules(llm_server):
    """The check the round trip passes: a turn rebuilt from text and tool calls is a 400."""
    llm_server.script(Reply(json=anthropic_thinking_reply()))
    llm = claude(llm_server)

    async def main():
        conversation = [user_message("Weather?")]
        response = await llm.complete(conversation, TOOLS)
        message = {k: v for k, v in response.message.items() if k != "provider_data"}
        return await llm.complete([*conversation, message, tool_message("toolu_01", "x")], TOOLS)

    with pytest.raises(Exception, match="Expected `thinking` or `redacted_thinking`"):
        anyio.run(main)


def test_another_provider_gets_the_turn_without_the_first_ones_parts(llm_server):
    llm_server.script(
        Reply(json=anthropic_thinking_reply()),
        Reply(
            json={
                "id": "c",
                "model": "gpt",
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": "stop",
                        "message": {"role": "assistant", "content": "Sunny."},
                    }
                ],
            }
        ),
    )
    first = claude(llm_server)
    other = OpenAICompatibleProvider("gpt", base_url=f"{llm_server.url}/v1", retry=FAST_RETRY)

    async def main():
        conversation = [user_message("Weather?")]
        response = await first.complete(conversation, TOOLS)
        conversation += [response.message, tool_message("toolu_01", "18C")]
        return await other.complete(conversation, TOOLS)

    assert anyio.run(main).text == "Sunny."
    assistant = llm_server.requests[1].body["messages"][1]
    assert assistant["content"] == "Let me check."
    assert set(assistant) == {"role", "content", "tool_calls"}


def test_server_tool_blocks_never_become_client_calls_streamed_or_not(llm_server):
    message = {
        **anthropic_thinking_reply(),
        "content": [
            {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search",
             "input": {"query": "paris weather"}},
            {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1",
             "content": [{"type": "web_search_result", "url": "https://x", "title": "t",
                          "encrypted_content": "abc"}]},
            {"type": "text", "text": "Found it."},
            {"type": "tool_use", "id": "toolu_9", "name": "GetWeather", "input": {"city": "P"}},
        ],
    }  # fmt: skip
    llm_server.script(Reply(json=message), Reply(sse=anthropic_stream(message)))
    llm = AnthropicProvider("claude", base_url=llm_server.url, api_key="k", retry=FAST_RETRY)

    async def main():
        whole = await llm.complete([user_message("Weather?")], TOOLS)
        events = [e async for e in llm.stream([user_message("Weather?")], TOOLS)]
        return whole, events[-1].response

    whole, streamed = anyio.run(main)
    for response in (whole, streamed):
        assert [(c.name, c.arguments) for c in response.tool_calls] == [
            ("GetWeather", {"city": "P"})
        ]
        assert response.message["provider_data"]["content"] == message["content"]


def deepseek_reply(content: dict) -> dict:
    return {
        "id": "x",
        "model": "deepseek-reasoner",
        "choices": [{"index": 0, "message": content, "finish_reason": "tool_calls"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 20, "total_tokens": 30},
    }


@pytest.mark.parametrize("stream", [False, True], ids=["complete", "stream"])
def test_deepseek_reasoning_content_goes_back_with_the_tool_call_turn(llm_server, stream):
    call = {"id": "call_0", "type": "function",
            "function": {"name": "GetWeather", "arguments": '{"city": "Paris"}'}}  # fmt: skip
    message = {"role": "assistant", "content": "", "reasoning_content": "Need the weather.",
               "tool_calls": [call]}  # fmt: skip
    if stream:
        chunks = [
            {"choices": [{"index": 0, "delta": {"reasoning_content": "Need "}}]},
            {"choices": [{"index": 0, "delta": {"reasoning_content": "the weather."}}]},
            {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, **call}]}}]},
            {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
        ]  # fmt: skip
        first = Reply(sse=[(None, json.dumps(c)) for c in chunks] + [(None, "[DONE]")])
    else:
        first = Reply(json=deepseek_reply(message))
    final = {"role": "assistant", "content": "Sunny.", "reasoning_content": "Done."}
    llm_server.script(first, Reply(json={**deepseek_reply(final), "choices": [
        {"index": 0, "message": final, "finish_reason": "stop"}]}))  # fmt: skip
    llm = OpenAICompatibleProvider(
        "deepseek-reasoner", base_url=f"{llm_server.url}/v1", retry=FAST_RETRY
    )

    async def main():
        conversation = [user_message("Weather?")]
        if stream:
            response = [e async for e in llm.stream(conversation, TOOLS)][-1].response
        else:
            response = await llm.complete(conversation, TOOLS)
        assert response.reasoning == "Need the weather." and response.text == ""
        conversation += [response.message, tool_message("call_0", "18C")]
        return await llm.complete(conversation, TOOLS)

    answer = anyio.run(main)
    assert (answer.text, answer.reasoning) == ("Sunny.", "Done.")
    sent = llm_server.requests[1].body["messages"][1]
    assert sent["reasoning_content"] == "Need the weather."
    assert "provider_data" not in sent and "reasoning" not in sent


@pytest.mark.parametrize("stream", [False, True], ids=["complete", "stream"])
def test_gemini_thought_signatures_go_back_on_each_tool_call(llm_server, stream):
    calls = [
        {"id": f"function-call-{i}", "type": "function",
         "function": {"name": "GetWeather", "arguments": json.dumps({"city": city})},
         "extra_content": {"google": {"thought_signature": f"sig{i}=="}}}
        for i, city in enumerate(["Paris", "Rome"])
    ]  # fmt: skip
    message = {"role": "assistant", "tool_calls": calls}
    if stream:
        delta = {
            "role": "assistant",
            "tool_calls": [{"index": i, **c} for i, c in enumerate(calls)],
        }
        chunks = [{"choices": [{"index": 0, "delta": delta, "finish_reason": "tool_calls"}]}]
        first = Reply(sse=[(None, json.dumps(c)) for c in chunks] + [(None, "[DONE]")])
    else:
        first = Reply(json={"model": "gemini-3-pro-preview", "choices": [
            {"index": 0, "message": message, "finish_reason": "tool_calls"}]})  # fmt: skip
    llm_server.script(first, Reply(json={"model": "gemini-3-pro-preview", "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "Both sunny."},
         "finish_reason": "stop"}]}))  # fmt: skip
    llm = OpenAICompatibleProvider(
        "gemini-3-pro-preview", base_url=f"{llm_server.url}/v1", retry=FAST_RETRY
    )

    async def main():
        conversation = [user_message("Weather in Paris and Rome?")]
        if stream:
            response = [e async for e in llm.stream(conversation, TOOLS)][-1].response
        else:
            response = await llm.complete(conversation, TOOLS)
        conversation.append(response.message)
        conversation += [tool_message(c.id, "sunny") for c in response.tool_calls]
        return await llm.complete(conversation, TOOLS)

    assert anyio.run(main).text == "Both sunny."
    sent = llm_server.requests[1].body["messages"][1]["tool_calls"]
    assert [c["extra_content"] for c in sent] == [c["extra_content"] for c in calls]


def openai_reply(message: dict, finish: str | None) -> dict:
    return {"model": "gpt-4o", "choices": [{"index": 0, "message": message,
            "finish_reason": finish}]}  # fmt: skip


def test_an_openai_refusal_is_its_own_outcome(llm_server):
    refusal = "I'm sorry, I can't help with that."
    llm_server.script(
        Reply(json=openai_reply({"role": "assistant", "content": None, "refusal": refusal},
                                "stop")),
        Reply(sse=[(None, json.dumps({"choices": [{"index": 0, "delta": {"refusal": refusal}}]})),
                   (None, json.dumps({"choices": [{"index": 0, "delta": {},
                                                   "finish_reason": "stop"}]})),
                   (None, "[DONE]")]),
    )  # fmt: skip
    llm = OpenAICompatibleProvider("gpt-4o", base_url=f"{llm_server.url}/v1", retry=FAST_RETRY)

    async def main():
        whole = await llm.complete([user_message("x")])
        streamed = [e async for e in llm.stream([user_message("x")])][-1]
        assert isinstance(streamed, StreamCompleted)
        return whole, streamed.response

    for response in anyio.run(main):
        assert response.refused and response.finish_reason == "refusal"
        assert response.refusal == refusal and response.text == ""


@pytest.mark.parametrize(
    ("given", "word", "vendor"),
    [("length", "length", None), ("", "stop", None), (None, "stop", None),
     ("content_filter", "content_filter", None), ("weird_reason", "other", "weird_reason")],
)  # fmt: skip
def test_finish_reasons_map_to_the_documented_words(llm_server, given, word, vendor):
    llm_server.script(Reply(json=openai_reply({"role": "assistant", "content": "hi"}, given)))
    llm = OpenAICompatibleProvider("gpt-4o", base_url=f"{llm_server.url}/v1", retry=FAST_RETRY)
    response = anyio.run(llm.complete, [user_message("x")])
    assert (response.finish_reason, response.vendor_finish_reason) == (word, vendor)


def test_tool_names_go_back_as_declared(llm_server):
    call = {"id": "c1", "type": "function",
            "function": {"name": "GetWeather", "arguments": "{}"}}  # fmt: skip
    llm_server.script(
        Reply(json=openai_reply({"role": "assistant", "content": None, "tool_calls": [call]},
                                "tool_calls")),
        Reply(json=openai_reply({"role": "assistant", "content": "ok"}, "stop")),
    )  # fmt: skip
    llm = OpenAICompatibleProvider("gpt-4o", base_url=f"{llm_server.url}/v1", retry=FAST_RETRY)

    async def main():
        conversation = [user_message("x")]
        response = await llm.complete(conversation, TOOLS)
        conversation += [response.message, tool_message("c1", "sunny")]
        await llm.complete(conversation, TOOLS)

    anyio.run(main)
    sent = llm_server.requests[1].body["messages"][1]["tool_calls"][0]["function"]["name"]
    assert sent == "GetWeather"


def test_an_anthropic_typed_answer_comes_through_a_forced_tool(llm_server):
    from jianmu_bt.llm.output import OutputSpec
    from jianmu_bt.nodes import react_agent
    from jianmu_bt.nodes.turn_outcome import TurnPolicy
    from jianmu_bt.runtime import AgentState, StateManager, TreeRunner

    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    reply = {
        "id": "m", "type": "message", "role": "assistant", "model": "claude",
        "content": [{"type": "tool_use", "id": "toolu_1", "name": "final_result",
                     "input": {"city": "Paris"}}],
        "stop_reason": "tool_use", "usage": {"input_tokens": 5, "output_tokens": 5},
    }  # fmt: skip
    llm_server.script(Reply(json=reply))

    class Task(AgentState):
        place: dict | None = None

    llm = AnthropicProvider("claude", base_url=llm_server.url, api_key="k", retry=FAST_RETRY)
    agent = react_agent("A", provider=llm, goal="Capital of France?", output_key="place",
                        policy=TurnPolicy(output=OutputSpec(schema)))  # fmt: skip
    result = TreeRunner(agent, StateManager(Task)).run(timeout=10)
    assert result.ok, result.reason
    assert result.state["place"] == {"city": "Paris"}
    sent = llm_server.requests[0].body
    assert sent["tool_choice"] == {"type": "tool", "name": "final_result"}
    assert sent["tools"][0]["input_schema"] == schema
    assert result.state["messages"][-1] == {"role": "assistant", "content": '{"city": "Paris"}'}


def test_with_extended_thinking_the_schema_is_asked_for_in_the_prompt_not_a_forced_tool():
    from jianmu_bt.llm.anthropic_wire import output_tool

    schema = {"type": "object", "properties": {}}
    thinking = LLMOptions(output_schema=schema, extra={"thinking": {"type": "enabled"}})
    assert output_tool(thinking) is None
    assert output_tool(LLMOptions(output_schema=schema))["name"] == "final_result"
