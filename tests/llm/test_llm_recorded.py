"""The Chat Completions and Anthropic providers against real recorded traffic (tests/llm/corpus).

Each recording is a real exchange with a provider's API, published by another project. Its
responses are served again from 127.0.0.1, whole, in their recorded events and cut into 7-byte
pieces; where the recording goes on to a next turn, what our provider sends back is compared
with what the recording's own client sent (and the real API accepted).
"""

from __future__ import annotations

import anyio
import pytest
from llm_fake_server import FAST_RETRY
from recorded import recording, replies, sent_messages

from jianmu_bt.llm import (
    AnthropicProvider,
    LLMBadRequestError,
    LLMError,
    LLMOptions,
    OpenAICompatibleProvider,
    StreamCompleted,
    tool_message,
    user_message,
)
from jianmu_bt.llm.base import ReasoningDelta

PIECES = [None, 7]  # as recorded, and cut into 7-byte fragments


def _stream(llm, messages, tools=None):
    async def run():
        events = [event async for event in llm.stream(messages, tools)]
        assert isinstance(events[-1], StreamCompleted)
        return events

    return anyio.run(run)


def _claude(server, request: dict) -> AnthropicProvider:
    extra = {k: request[k] for k in ("thinking",) if k in request}
    return AnthropicProvider(
        request["model"],
        base_url=server.url,
        api_key="k",
        retry=FAST_RETRY,
        options=LLMOptions(max_tokens=request["max_tokens"], extra=extra),
    )


def _chat(server, request: dict) -> OpenAICompatibleProvider:
    return OpenAICompatibleProvider(request["model"], base_url=f"{server.url}/v1", retry=FAST_RETRY)


@pytest.mark.parametrize("piece", PIECES)
@pytest.mark.parametrize("name", ["thinking", "redacted_thinking"])
def test_anthropic_thinking_goes_back_as_the_real_client_sent_it(llm_server, name, piece):
    rec = recording(f"anthropic/{name}")
    first = rec.interactions[0].request.json
    llm_server.script(*replies(rec, piece=piece))
    llm = _claude(llm_server, first)
    question = [user_message(first["messages"][0]["content"])]
    whole = anyio.run(llm.complete, question)
    events = _stream(llm, question)
    streamed = events[-1].response
    recorded = rec.interactions[0].response.json["content"]
    if name == "thinking":
        assert whole.reasoning == recorded[0]["thinking"]
        assert "".join(e.text for e in events if isinstance(e, ReasoningDelta)) == (
            streamed.reasoning
        )
    assert whole.message["provider_data"]["content"] == recorded
    later = sent_messages(rec, 2)
    follow_up = [*question, streamed.message, user_message(later[2]["content"])]
    anyio.run(llm.complete, follow_up)
    assert llm_server.requests[2].body["messages"][1] == later[1]  # exactly, signatures too


@pytest.mark.parametrize("piece", PIECES)
def test_deepseek_reasoning_content_goes_back_as_the_real_client_sent_it(llm_server, piece):
    rec = recording("deepseek/thinking_tool_calls_stream")
    first = rec.interactions[0].request.json
    llm_server.script(*replies(rec, piece=piece))
    llm = _chat(llm_server, first)
    tools = [tool["function"] for tool in first["tools"]]
    conversation = [dict(m) for m in first["messages"]]
    reply = _stream(llm, conversation, tools)[-1].response
    assert reply.reasoning == "Let me get the current date." and reply.text == ""
    assert [c.name for c in reply.tool_calls] == ["get_date"]
    conversation += [reply.message, tool_message(reply.tool_calls[0].id, "2024-01-01")]
    answer = _stream(llm, conversation, tools)[-1].response
    assert answer.text == "It is 2024-01-01."
    conversation += [answer.message, user_message("What month is it? Provide the full name.")]
    _stream(llm, conversation, tools)
    for index in (1, 2):
        ours = [_without_null_content(m) for m in llm_server.requests[index].body["messages"]]
        assert ours == sent_messages(rec, index)


def _without_null_content(message: dict) -> dict:
    """DeepSeek's recorded client leaves `content` out of a tool-call turn; we send null."""
    return {k: v for k, v in message.items() if not (k == "content" and v is None)}


@pytest.mark.parametrize("piece", PIECES)
def test_a_recorded_refusal_is_a_refusal(llm_server, piece):
    for rid in ("openai_chat/refusal", "openai_chat/refusal_stream"):
        rec = recording(rid)
        request = rec.interactions[0].request.json
        llm_server.reset()
        llm_server.script(*replies(rec, piece=piece))
        llm = _chat(llm_server, request)
        messages = [dict(m) for m in request["messages"]]
        if request.get("stream"):
            response = _stream(llm, messages)[-1].response
        else:
            response = anyio.run(llm.complete, messages)
        assert response.refused and response.finish_reason == "refusal", rid
        assert response.refusal and response.refusal.startswith("I'm"), rid
        assert response.text == ""


@pytest.mark.parametrize(
    "rid", ["openai_chat/length", "openai_chat/length_stream", "openai_chat/length_empty"]
)
def test_a_recorded_cut_off_reply_says_length(llm_server, rid):
    rec = recording(rid)
    request = rec.interactions[0].request.json
    llm_server.script(*replies(rec))
    llm = _chat(llm_server, request)
    messages = [dict(m) for m in request["messages"]]
    if request.get("stream"):
        response = _stream(llm, messages)[-1].response
    else:
        response = anyio.run(llm.complete, messages)
    assert response.finish_reason == "length"


@pytest.mark.parametrize("piece", PIECES)
def test_recorded_parallel_tool_calls_stream_as_they_complete(llm_server, piece):
    whole = recording("openai_chat/parallel_tool_calls")
    streamed = recording("openai_chat/parallel_tool_calls_stream")
    request = whole.interactions[0].request.json
    llm_server.script(*replies(whole, 0), *replies(streamed, 0, piece=piece))
    llm = _chat(llm_server, request)
    tools = [tool["function"] for tool in request["tools"]]
    messages = [dict(m) for m in request["messages"]]
    a = anyio.run(llm.complete, messages, tools)
    b = _stream(llm, [dict(m) for m in streamed.interactions[0].request.json["messages"]], tools)
    for response in (a, b[-1].response):
        assert [c.arguments for c in response.tool_calls] == [
            {"password": "mellon"},
            {"password": "radiance"},
        ]
        assert response.finish_reason == "tool_calls"


@pytest.mark.parametrize("piece", PIECES)
def test_server_tools_in_a_recorded_stream_are_not_client_calls(llm_server, piece):
    rec = recording("anthropic/server_and_client_tool_stream")
    request = rec.interactions[0].request.json
    llm_server.script(*replies(rec, piece=piece))
    llm = _claude(llm_server, request)
    client_tools = [
        {"name": t["name"], "description": t["description"], "parameters": t["input_schema"]}
        for t in request["tools"]
        if "input_schema" in t
    ]
    question = [user_message(request["messages"][0]["content"])]
    response = _stream(llm, question, client_tools)[-1].response
    assert [(c.name, c.arguments) for c in response.tool_calls] == [
        ("get_weather", {"location": "Boston"})
    ]
    later = sent_messages(rec, 1)[1]["content"]
    ours = response.message["provider_data"]["content"]
    # The turn goes back with the server block and the call with its `caller`, as the recorded
    # client sent it (which left out the server block's own `caller: direct`; we keep it).
    assert [(b["type"], b["id"], b["input"]) for b in ours] == [
        (b["type"], b["id"], b["input"]) for b in later
    ]
    assert ours[1]["caller"] == later[1]["caller"]


def test_recorded_non_streamed_server_tools_are_not_client_calls(llm_server):
    rec = recording("anthropic/server_and_client_tool")
    request = rec.interactions[0].request.json
    llm_server.script(*replies(rec, 0))
    llm = _claude(llm_server, request)
    response = anyio.run(llm.complete, [user_message(request["messages"][0]["content"])])
    blocks = rec.interactions[0].response.json["content"]
    assert [c.id for c in response.tool_calls] == [
        b["id"] for b in blocks if b["type"] == "tool_use"
    ]


@pytest.mark.parametrize("rid", ["anthropic/max_tokens", "anthropic/max_tokens_stream"])
def test_a_recorded_anthropic_max_tokens_stop_says_length(llm_server, rid):
    rec = recording(rid)
    request = rec.interactions[0].request.json
    llm_server.script(*replies(rec, 0))
    llm = _claude(llm_server, request)
    messages = [user_message(request["messages"][0]["content"])]
    if request.get("stream"):
        response = _stream(llm, messages)[-1].response
    else:
        response = anyio.run(llm.complete, messages)
    assert response.finish_reason == "length"


@pytest.mark.parametrize(
    ("rid", "error"),
    [("anthropic/error_401", LLMError), ("anthropic/error_404", LLMError),
     ("openai_chat/error_401", LLMError), ("openai_chat/error_404", LLMError)],
)  # fmt: skip
def test_recorded_errors_are_llm_errors_naming_the_status(llm_server, rid, error):
    rec = recording(rid)
    request = rec.interactions[0].request.json
    status = rec.interactions[0].response.status
    llm_server.script(*replies(rec, 0))
    llm = (
        _claude(llm_server, request) if rid.startswith("anthropic") else _chat(llm_server, request)
    )
    with pytest.raises(error) as caught:
        anyio.run(llm.complete, [user_message("hi")])
    assert caught.value.status_code == status
    assert not isinstance(caught.value, LLMBadRequestError)


@pytest.mark.parametrize("rid", ["openai_chat/json_schema", "openai_chat/json_schema_stream"])
def test_a_typed_agent_answer_from_recorded_structured_output(llm_server, rid):
    from jianmu_bt.llm.output import OutputSpec
    from jianmu_bt.nodes import react_agent
    from jianmu_bt.nodes.turn_outcome import TurnPolicy
    from jianmu_bt.runtime import AgentState, StateManager, TreeRunner

    rec = recording(rid)
    request = rec.interactions[0].request.json
    recorded_format = request["response_format"]["json_schema"]
    llm_server.script(*replies(rec, 0))

    class Task(AgentState):
        book: dict | None = None

    spec = OutputSpec(recorded_format["schema"], name=recorded_format["name"],
                      strict=recorded_format.get("strict"))  # fmt: skip
    agent = react_agent(
        "Librarian",
        provider=_chat(llm_server, request),
        goal=request["messages"][0]["content"],
        output_key="book",
        policy=TurnPolicy(output=spec),
        stream=bool(request.get("stream")),
    )
    result = TreeRunner(agent, StateManager(Task)).run(timeout=10)
    assert result.ok, result.reason
    assert result.state["book"]["title"] == "THE NAME OF THE WIND"
    assert result.state["book"]["author"] == {"first_name": "Patrick", "last_name": "Rothfuss"}
    sent = llm_server.requests[0].body["response_format"]
    assert (
        sent["type"] == "json_schema" and sent["json_schema"]["schema"] == recorded_format["schema"]
    )
