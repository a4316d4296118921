"""OpenAIResponsesProvider against real recorded Responses API traffic, replayed from 127.0.0.1.

The recordings come from published test cassettes (`corpus.load_recording`, see
tests/llm/corpus/sources.py); the replay server (`responses_replay_server`) answers with their
bodies, whole or cut into small chunks, after checking each request the way the API does.
"""

from __future__ import annotations

import functools
import json
from typing import Any

import pytest
from corpus.corpus import CorpusUnavailable, Recording, load_recording
from llm_fake_server import FAST_RETRY
from py_trees.common import Status
from responses_replay_server import (
    RESPONSES_PATH,
    Replay,
    ResponsesReplayServer,
    api_error,
    final_response,
    sse_events,
)

from jianmu_bt.llm import (
    InvalidRequestError,
    LLMAuthenticationError,
    LLMBadRequestError,
    LLMConfigurationError,
    LLMNotFoundError,
    LLMOptions,
    LLMRateLimitError,
    LLMResponseError,
    LLMServerError,
    Usage,
    system_message,
    tool_message,
    user_message,
)
from jianmu_bt.llm.base import ReasoningDelta, StreamCompleted, TextDelta, ToolCallDelta
from jianmu_bt.llm.openai_responses import OpenAIResponsesProvider
from jianmu_bt.loader import load_tree
from jianmu_bt.tools import ToolCall, tool

R = "openai_responses/"
WEATHER = [
    {
        "name": "get_weather",
        "description": "Get the weather for a location.",
        "parameters": {"type": "object", "properties": {"location": {"type": "string"}}},
    }
]


@tool
def get_weather(location: str) -> str:
    """Get the weather for a location."""
    return "It's sunny."


@pytest.fixture(scope="module")
def _replay_server():
    server = ResponsesReplayServer()
    server.start()
    yield server
    server.stop()


@pytest.fixture
def server(_replay_server: ResponsesReplayServer):
    _replay_server.reset()
    yield _replay_server
    _replay_server.reset()


@functools.cache
def _load(recording_id: str) -> Recording | str:
    try:
        return load_recording(recording_id)
    except CorpusUnavailable as exc:
        return str(exc)


def recorded(recording_id: str) -> Recording:
    """A recording of the corpus (the test is skipped when the corpus cannot be fetched)."""
    found = _load(R + recording_id)
    if isinstance(found, str):
        pytest.skip(f"the recorded corpus is unavailable: {found}")
    return found


def provider(server: ResponsesReplayServer, host: str = "127.0.0.1", **kwargs: Any):
    kwargs.setdefault("retry", FAST_RETRY)
    port = server.url.rsplit(":", 1)[1]
    return OpenAIResponsesProvider(model="gpt-test", base_url=f"http://{host}:{port}/v1", **kwargs)


async def streamed(llm, messages, tools=None, options=None):
    events = [event async for event in llm.stream(messages, tools, options)]
    assert isinstance(events[-1], StreamCompleted)
    return events[:-1], events[-1].response


def sent(server: ResponsesReplayServer, index: int = -1) -> dict[str, Any]:
    return server.requests[index].body


def stateless(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Output items as a `store: false` request sends them back: without their ids."""
    return [{k: v for k, v in item.items() if k != "id"} for item in items]


@pytest.mark.anyio
async def test_text_reply_request_shape_and_usage(server):
    answer = recorded("reasoning").interactions[0].response
    server.queue(Replay.recorded(answer))
    llm = provider(server, api_key="sk-test-key")
    reply = await llm.complete([system_message("Be brief."), user_message("Hello")])
    assert reply.text == "Hello! How can I assist you today?" and reply.finish_reason == "stop"
    assert reply.model == "o4-mini-2025-04-16" and reply.reasoning == "" and not reply.tool_calls
    assert reply.usage == Usage(input_tokens=7, output_tokens=15, total_tokens=22)
    kept = reply.message["provider_data"]
    assert kept == {"origin": llm.origin, "output": answer.json["output"]}
    assert llm.origin.startswith("openai_responses@127.0.0.1:")
    request = server.requests[0]
    assert request.path == RESPONSES_PATH
    assert request.headers["authorization"] == "Bearer sk-test-key"
    body = request.body
    assert body["store"] is False and body["include"] == ["reasoning.encrypted_content"]
    assert body["input"] == [
        {"type": "message", "role": "system", "content": "Be brief."},
        {"type": "message", "role": "user", "content": "Hello"},
    ]
    assert "stream" not in body and "tools" not in body and body["model"] == "gpt-test"
    assert llm.native_output and llm.price_name == "openai" and llm.price_provider is None


@pytest.mark.anyio
async def test_reasoning_summaries_stream_as_reasoning_deltas(server):
    first, second = recorded("reasoning_summary_stream")
    server.queue(Replay.recorded(first.response, chunk=7), Replay.recorded(second.response))
    llm = provider(server)
    events, reply = await streamed(llm, [user_message("Third tallest building in 2000?")])
    summaries = [part["text"] for part in final_response(first.response)["output"][0]["summary"]]
    assert len(summaries) == 3 and reply.reasoning == "\n\n".join(summaries)
    thoughts = [e.text for e in events if isinstance(e, ReasoningDelta)]
    assert len(thoughts) >= 312 and "".join(thoughts) == reply.reasoning
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == reply.text
    assert "Jin Mao Tower" in reply.text and reply.message["reasoning"] == reply.reasoning
    assert (reply.usage.output_tokens, reply.usage.total_tokens) == (950, 970)  # 832 reasoning
    again = await llm.complete([user_message("Q"), reply.message, user_message("Thank you.")])
    assert again.reasoning.startswith("**Crafting a polite response**")
    assert again.text.startswith("You’re welcome!")


@pytest.mark.anyio
async def test_function_call_tool_choice_and_server_tool_items(server):
    calling = recorded("function_calling")
    server.queue(Replay.recorded(calling.interactions[0].response))
    declared = calling.interactions[0].request.json["tools"][0]  # as the recorded client sent it
    tools = [{key: declared[key] for key in ("name", "description", "parameters")}]
    options = LLMOptions(
        tool_choice="multiply", parallel_tool_calls=False, max_tokens=50, temperature=0.2
    )
    llm = provider(server)
    reply = await llm.complete([user_message("whats 5 * 4")], tools, options)
    assert reply.tool_calls == [
        ToolCall("multiply", {"x": 5, "y": 4}, "call_VsuLxY3euUW6J6p96ybWrVxw")
    ]
    assert reply.finish_reason == "tool_calls" and reply.text == ""
    assert reply.message["content"] is None
    body = sent(server)
    assert body["tools"] == [{**declared, "strict": False}]
    assert body["tool_choice"] == {"type": "function", "name": "multiply"}
    assert body["parallel_tool_calls"] is False and body["max_output_tokens"] == 50
    assert body["temperature"] == 0.2
    # A web search the server ran itself: no call for us, its item kept for the next turn.
    server.queue(Replay.recorded(calling.interactions[2].response))
    searched = await llm.complete([user_message("What was a positive news story from today?")])
    assert not searched.tool_calls and searched.finish_reason == "stop" and searched.text
    kept = searched.message["provider_data"]["output"]
    assert [item["type"] for item in kept] == ["web_search_call", "message"]


@pytest.mark.anyio
async def test_parallel_calls_then_their_outputs_go_back(server):
    turns = recorded("tool_calls_stream").interactions
    server.queue(Replay.recorded(turns[6].response, chunk=5), Replay.recorded(turns[7].response))
    tools = [{"name": "favorite_color", "description": "A person's favourite colour"}]
    llm = provider(server)
    conversation = [system_message("Be very terse."), user_message("Joe and Hadley's colours?")]
    events, reply = await streamed(llm, conversation, tools)
    assert [(c.name, c.arguments) for c in reply.tool_calls] == [
        ("favorite_color", {"_person": "Joe"}),
        ("favorite_color", {"_person": "Hadley"}),
    ]
    fragments = [e for e in events if isinstance(e, ToolCallDelta)]
    assert {f.index for f in fragments} == {0, 1}
    for index, call in enumerate(reply.tool_calls):
        mine = [f for f in fragments if f.index == index]
        assert (mine[0].id, mine[0].name) == (call.id, call.name)
        assert json.loads("".join(f.arguments for f in mine)) == call.arguments
    answers = [
        tool_message(c.id, colour)
        for c, colour in zip(reply.tool_calls, ("sage green", "red"), strict=True)
    ]
    _, final = await streamed(llm, [*conversation, reply.message, *answers], tools)
    assert final.text == "Joe: sage green, Hadley: red"
    calls = stateless(final_response(turns[6].response)["output"])
    outputs = [
        {"type": "function_call_output", "call_id": c.id, "output": colour}
        for c, colour in zip(reply.tool_calls, ("sage green", "red"), strict=True)
    ]
    assert sent(server)["input"][2:] == [*calls, *outputs]


@pytest.mark.anyio
async def test_encrypted_reasoning_goes_back_to_the_same_origin(server):
    first, second = recorded("encrypted_reasoning_stream")
    server.queue(Replay.recorded(first.response, chunk=64), Replay.recorded(second.response))
    llm = provider(server)
    question = user_message("What was the third tallest buliding in the year 2000?")
    _, reply = await streamed(llm, [question])
    output = final_response(first.response)["output"]
    assert output[0]["type"] == "reasoning" and output[0]["encrypted_content"].startswith("gAAAA")
    assert reply.message["provider_data"]["output"] == output  # exactly as received
    thanks = await llm.complete([question, reply.message, user_message("Thank you.")])
    assert thanks.text == "You’re welcome!"
    body = sent(server)
    assert body["input"] == [
        {"type": "message", "role": "user", "content": question["content"]},
        *stateless(output),
        {"type": "message", "role": "user", "content": "Thank you."},
    ]
    assert body["input"][1]["encrypted_content"] == output[0]["encrypted_content"]
    recorded_kinds = [item.get("type") for item in second.request.json["input"]]
    assert [item["type"] for item in body["input"]] == recorded_kinds


@pytest.mark.anyio
@pytest.mark.parametrize("store", [True, False])
async def test_reasoning_and_function_call_items_in_the_next_request(server, store):
    first, second = recorded("agent_loop_stream")
    server.queue(Replay.recorded(first.response, chunk=11), Replay.recorded(second.response))
    llm = provider(server, store=store)
    question = user_message("What is the weather in San Francisco, CA?")
    _, reply = await streamed(llm, [question], WEATHER)
    call = reply.tool_calls[0]
    assert (call.name, call.arguments) == ("get_weather", {"location": "San Francisco, CA"})
    answer = tool_message(call.id, "It's sunny.")
    _, final = await streamed(llm, [question, reply.message, answer], WEATHER)
    assert final.text == "It’s currently **sunny** in **San Francisco, CA**."
    output = final_response(first.response)["output"]
    assert [item["type"] for item in output] == ["reasoning", "function_call"]
    body = sent(server)
    returned = {"type": "function_call_output", "call_id": call.id, "output": "It's sunny."}
    if store:  # the server kept the items: they go back exactly, ids and all
        assert body["store"] is True and "include" not in body
        assert body["input"][1:] == [*output, returned]
        assert output[0]["id"] == second.request.json["input"][1]["id"]
    else:  # nothing kept: a reasoning item without encrypted_content cannot go back
        assert body["input"][1:] == [*stateless(output[1:]), returned]


@pytest.mark.anyio
async def test_another_origin_or_changed_calls_rebuild_from_text_and_calls(server):
    first, second = recorded("phase")
    server.queue(Replay.recorded(first.response))
    question = user_message("What's the weather in the oldest major city in the US?")
    reply = await provider(server, store=True).complete([question], WEATHER)
    kinds = [item["type"] for item in reply.message["provider_data"]["output"]]
    assert kinds == ["reasoning", "message", "function_call"]
    assert reply.text.startswith("Assuming you mean **St. Augustine, Florida**")
    call = reply.tool_calls[0]
    rebuilt = [
        {"type": "message", "role": "assistant", "content": reply.text},
        {"type": "function_call", "call_id": call.id, "name": "get_weather",
         "arguments": json.dumps(call.arguments)},
    ]  # fmt: skip
    # The same server under another host name is another origin: its parts are not sent.
    server.queue(Replay.recorded(second.response))
    other = provider(server, host="localhost")
    answer = tool_message(call.id, "It's sunny.")
    final = await other.complete([question, reply.message, answer], WEATHER)
    assert final.text.endswith("the weather there is **sunny**.")
    output = {"type": "function_call_output", "call_id": call.id, "output": "It's sunny."}
    assert sent(server)["input"][1:] == [*rebuilt, output]
    # Same origin, but the message's call was renumbered since: rebuilt too.
    changed = {**reply.message, "tool_calls": [{**reply.message["tool_calls"][0], "id": "c2"}]}
    server.queue(Replay.recorded(second.response))
    await provider(server).complete([question, changed, tool_message("c2", "It's sunny.")])
    assert [item["type"] for item in sent(server)["input"][1:]] == [
        "message", "function_call", "function_call_output",
    ]  # fmt: skip
    assert sent(server)["input"][2]["call_id"] == "c2"


@pytest.mark.anyio
async def test_refusal_and_typed_output(server):
    plain, stream = recorded("refusal"), recorded("refusal_stream")
    server.queue(Replay.recorded(plain.interactions[0].response))
    server.queue(Replay.recorded(stream.interactions[0].response, chunk=3))
    asked = plain.interactions[0].request.json["text"]["format"]
    options = LLMOptions(
        output_schema=asked["schema"], output_name=asked["name"], output_strict=True
    )
    llm = provider(server)
    reply = await llm.complete([user_message("Provide instructions.")], options=options)
    assert sent(server)["text"] == {"format": asked}  # as the recorded client asked
    assert reply.refusal == "I'm very sorry, but I can't assist with that."
    assert reply.finish_reason == "refusal" and reply.refused and reply.text == ""
    assert reply.message["refusal"] == reply.refusal
    events, again = await streamed(llm, [user_message("Provide instructions.")], options=options)
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == again.refusal
    assert again.refusal == "I'm sorry, I can't assist with that." and again.refused


@pytest.mark.anyio
async def test_incomplete_reply_is_cut_off_at_the_length_limit(server):
    plain, stream = recorded("incomplete")
    server.queue(Replay.recorded(plain.response), Replay.recorded(stream.response, chunk=9))
    llm = provider(server, options=LLMOptions(max_tokens=16))
    reply = await llm.complete([user_message("Tell me a 100 word story about a bear.")])
    assert reply.finish_reason == "length" and reply.text.startswith("In the heart of")
    assert sent(server)["max_output_tokens"] == 16
    _, again = await streamed(llm, [user_message("Tell me a 100 word story about a bear.")])
    assert again.finish_reason == "length" and again.text.endswith("Every morning")
    data = {**plain.response.json, "incomplete_details": {"reason": "content_filter"}}
    server.queue(Replay.json(data))
    assert (await llm.complete([user_message("x")])).finish_reason == "content_filter"


STREAMS = [
    ("reasoning", 1), ("encrypted_reasoning_stream", 0), ("reasoning_summary_stream", 0),
    ("agent_loop_stream", 0), ("agent_loop_stream", 1), ("function_calling", 1),
    *(("tool_calls_stream", i) for i in range(11)), ("incomplete", 1),
    ("refusal_stream", 0), ("json_schema", 1),
]  # fmt: skip


@pytest.mark.anyio
@pytest.mark.parametrize("chunk", [None, 5])
@pytest.mark.parametrize(("name", "index"), STREAMS)
async def test_streaming_equals_the_whole_reply(server, name, index, chunk):
    answer = recorded(name).interactions[index].response
    server.queue(Replay.recorded(answer, chunk=chunk), Replay.json(final_response(answer)))
    llm = provider(server)
    events, streamed_reply = await streamed(llm, [user_message("again")])
    whole = await llm.complete([user_message("again")])
    assert streamed_reply == whole
    text = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert text == whole.text + (whole.refusal or "")
    assert "".join(e.text for e in events if isinstance(e, ReasoningDelta)) == whole.reasoning
    fragments = [e for e in events if isinstance(e, ToolCallDelta)]
    assert sorted({f.index for f in fragments}) == list(range(len(whole.tool_calls)))
    assert sent(server, 0)["stream"] is True and "stream" not in sent(server, 1)


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("status", "error"),
    [(401, LLMAuthenticationError), (404, LLMNotFoundError), (429, LLMRateLimitError),
     (500, LLMServerError), (503, LLMServerError)],
)  # fmt: skip
async def test_http_errors_are_mapped(server, status, error):
    for _ in range(3):  # answered to every attempt of the retried ones
        server.queue(Replay.json(api_error(f"failure {status} for sk-secret-key", "x"), status))
    llm = provider(server, api_key="sk-secret-key")
    with pytest.raises(error) as caught:
        await llm.complete([user_message("hi")])
    assert caught.value.status_code == status and "sk-secret-key" not in str(caught.value)
    assert len(server.requests) == (3 if status in (429, 500, 503) else 1)


@pytest.mark.anyio
async def test_recorded_400_and_a_missing_v1(server):
    for stream in (False, True):
        server.queue(Replay.recorded(recorded("error_400").interactions[0].response))
        llm = provider(server)
        with pytest.raises(LLMBadRequestError, match="does not exist"):
            if stream:
                await streamed(llm, [user_message("hi")])
            else:
                await llm.complete([user_message("hi")])
    bare = OpenAIResponsesProvider(model="m", base_url=server.url, retry=FAST_RETRY)
    with pytest.raises(LLMNotFoundError, match="missing it"):
        await bare.complete([user_message("hi")])


@pytest.mark.anyio
async def test_stream_of_a_server_that_sends_calls_whole(server):
    events = sse_events(recorded("function_calling").interactions[1].response)
    terse = [(name, data) for name, data in events if not name.endswith("arguments.delta")]
    name, last = terse[-1]
    terse[-1] = (name, {**last, "response": {**last["response"], "output": []}})
    server.queue(Replay.events(terse))
    events_seen, reply = await streamed(provider(server), [user_message("whats 5 * 4")])
    assert [(c.name, c.arguments) for c in reply.tool_calls] == [("multiply", {"x": 5, "y": 4})]
    fragments = [e for e in events_seen if isinstance(e, ToolCallDelta)]
    assert "".join(f.arguments for f in fragments) == '{"x":5,"y":4}'
    done = [data["item"] for name, data in events if name == "response.output_item.done"]
    assert reply.message["provider_data"]["output"] == done  # the items the stream delivered


@pytest.mark.anyio
async def test_stream_failures(server):
    events = sse_events(recorded("reasoning").interactions[1].response)
    rate = {"type": "error", "code": "rate_limit_exceeded", "message": "slow down"}
    failed = {**events[-1][1]["response"], "status": "failed"}
    failed["error"] = {"code": "server_error", "message": "The model crashed."}
    server.queue(
        Replay.events([*events[:5], ("error", rate)]),
        Replay.events(
            [*events[:-1], ("response.failed", {"type": "response.failed", "response": failed})]
        ),
        Replay.events(events[:-1]),
        Replay.json(failed),
    )
    llm = provider(server)
    with pytest.raises(LLMRateLimitError, match="slow down"):
        await streamed(llm, [user_message("hi")])
    with pytest.raises(LLMServerError, match="The model crashed"):
        await streamed(llm, [user_message("hi")])
    with pytest.raises(LLMResponseError, match=r"ended before 'response\.completed'"):
        await streamed(llm, [user_message("hi")])
    with pytest.raises(LLMServerError, match=r"in the reply to .* The model crashed"):
        await llm.complete([user_message("hi")])


@pytest.mark.anyio
async def test_content_parts_and_settings(server, monkeypatch):
    server.queue(Replay.recorded(recorded("reasoning").interactions[0].response))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-only-for-openai")
    llm = provider(server)
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
    pdf = {
        "type": "file",
        "file": {"filename": "a.pdf", "file_data": "data:application/pdf;base64,JV"},
    }
    parts = [{"type": "text", "text": "What?"}, image, pdf]
    await llm.complete([{"role": "user", "content": parts}])
    assert sent(server)["input"][0]["content"] == [
        {"type": "input_text", "text": "What?"},
        {"type": "input_image", "image_url": "data:image/png;base64,AAAA", "detail": "auto"},
        {"type": "input_file", "file_data": "data:application/pdf;base64,JV", "filename": "a.pdf"},
    ]
    assert "authorization" not in server.requests[0].headers  # OpenAI's key stays with OpenAI
    with pytest.raises(InvalidRequestError, match=r"messages\[0\].*'input_audio'"):
        await llm.complete([{"role": "user", "content": [{"type": "input_audio"}]}])
    monkeypatch.delenv("OPENAI_API_KEY")
    with pytest.raises(LLMConfigurationError, match="no API key"):
        await OpenAIResponsesProvider(model="gpt-5").complete([user_message("hi")])


TREE = """
version: 1
name: weather
state:
  answer: {type: string}
tools: [get_weather]
root:
  agent:
    name: Forecaster
    goal: "What is the weather in San Francisco, CA?"
    tools: [get_weather]
    max_iterations: 3
    stream: STREAM
    output: answer
"""


@pytest.mark.parametrize(("name", "stream"), [("agent_loop", False), ("agent_loop_stream", True)])
def test_yaml_agent_tree_over_the_responses_api(server, name, stream):
    first, second = recorded(name)
    server.queue(Replay.recorded(first.response, chunk=13), Replay.recorded(second.response))
    text = TREE.replace("STREAM", "true" if stream else "false")
    with load_tree(text, tools=[get_weather], llm=provider(server)) as tree:
        result = tree.run(timeout=30)
    assert result.status == Status.SUCCESS, result.reason
    assert "sunny" in result.state["answer"] and "San Francisco" in result.state["answer"]
    call = final_response(first.response)["output"][-1]
    body = sent(server)
    assert body["input"][-2:] == [
        {k: v for k, v in call.items() if k != "id"},
        {"type": "function_call_output", "call_id": call["call_id"], "output": "It's sunny."},
    ]
    assert body.get("stream", False) is stream and body["tools"][0]["name"] == "get_weather"
