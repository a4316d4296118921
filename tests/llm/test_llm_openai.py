"""OpenAICompatibleProvider over real HTTP against the local fake Chat Completions server."""

from __future__ import annotations

import asyncio
import json
import logging
from contextlib import aclosing

import anyio
import pytest
from llm_fake_server import FAST_RETRY, OPENAI_PATH, Reply
from llm_replies import openai_completion, openai_stream

from jianmu_bt.llm import (
    InvalidRequestError,
    LLMAuthenticationError,
    LLMConfigurationError,
    LLMConnectionError,
    LLMNotFoundError,
    LLMOptions,
    LLMRateLimitError,
    LLMResponseError,
    LLMServerError,
    LLMTimeoutError,
    OpenAICompatibleProvider,
    RetryPolicy,
    StreamCompleted,
    TextDelta,
    ToolCallDelta,
    assistant_message,
    tool_message,
    user_message,
)
from jianmu_bt.tools import ToolCall, ToolSet, tool


@tool
def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: the first number
        b: the second number
    """
    return a + b


@tool
def shout(text: str) -> str:
    """Upper-case a text."""
    return text.upper()


TOOLS = ToolSet.from_tools([add, shout])
PARALLEL = [("add", {"a": 2, "b": 3}, "call_a"), ("shout", {"text": "hi there"}, "call_b")]


def provider(server, **kwargs) -> OpenAICompatibleProvider:
    kwargs.setdefault("retry", FAST_RETRY)
    return OpenAICompatibleProvider(model="fake-model", base_url=f"{server.url}/v1", **kwargs)


@pytest.mark.anyio
async def test_text_reply_with_usage(llm_server):
    llm_server.script(Reply(json=openai_completion("Hello!", usage=(12, 3))))
    async with provider(llm_server) as llm:
        response = await llm.complete([user_message("Hi")])
    assert response.text == "Hello!"
    assert response.message == {"role": "assistant", "content": "Hello!"}
    assert response.tool_calls == [] and response.finish_reason == "stop"
    assert (response.usage.input_tokens, response.usage.output_tokens) == (12, 3)
    assert response.usage.total_tokens == 15 and response.model == "fake-model"
    sent = llm_server.requests[0]
    assert sent.path == OPENAI_PATH and sent.body["model"] == "fake-model"
    assert sent.body["messages"] == [{"role": "user", "content": "Hi"}]
    assert "authorization" not in sent.headers  # a local server needs no key


@pytest.mark.anyio
async def test_parallel_tool_calls_and_the_tool_schemas_sent(llm_server):
    llm_server.script(Reply(json=openai_completion(None, PARALLEL)))
    options = LLMOptions(tool_choice="auto", parallel_tool_calls=True, temperature=0.2)
    async with provider(llm_server) as llm:
        response = await llm.complete([user_message("go")], TOOLS, options)
    assert response.tool_calls == [
        ToolCall("add", {"a": 2, "b": 3}, "call_a"),
        ToolCall("shout", {"text": "hi there"}, "call_b"),
    ]
    assert response.finish_reason == "tool_calls" and response.text == ""
    assert response.message["content"] is None
    assert [c["id"] for c in response.message["tool_calls"]] == ["call_a", "call_b"]
    body = llm_server.requests[0].body
    functions = [t["function"] for t in body["tools"]]
    assert [f["name"] for f in functions] == ["add", "shout"]
    assert functions[0]["parameters"]["properties"]["a"]["type"] == "integer"
    assert functions[0]["description"].startswith("Add two integers")
    assert body["tool_choice"] == "auto" and body["parallel_tool_calls"] is True
    assert body["temperature"] == 0.2


@pytest.mark.anyio
async def test_tool_results_go_back_with_their_ids(llm_server):
    first = openai_completion(None, PARALLEL)
    llm_server.script(Reply(json=first), Reply(json=openai_completion("2+3=5, HI THERE")))
    async with provider(llm_server) as llm:
        reply = await llm.complete([user_message("go")], TOOLS)
        conversation = [user_message("go"), reply.message]
        for call in reply.tool_calls:
            result = await TOOLS.call(call)
            conversation.append(tool_message(call.id, result, name=call.name))
        final = await llm.complete(conversation, TOOLS)
    assert final.text == "2+3=5, HI THERE"
    sent = llm_server.requests[1].body["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "tool", "tool"]
    assert [m["tool_call_id"] for m in sent[2:]] == ["call_a", "call_b"]
    assert sent[2]["content"] == "5" and sent[3]["content"] == "HI THERE"
    assert json.loads(sent[1]["tool_calls"][0]["function"]["arguments"]) == {"a": 2, "b": 3}


@pytest.mark.anyio
async def test_named_tool_choice_and_extra_fields(llm_server):
    llm_server.script(Reply(json=openai_completion(None, PARALLEL[:1])))
    options = LLMOptions(tool_choice="add", max_tokens=50, extra={"top_p": 0.5, "seed": 7})
    async with provider(llm_server) as llm:
        await llm.complete([user_message("go")], TOOLS, options)
    body = llm_server.requests[0].body
    assert body["tool_choice"] == {"type": "function", "function": {"name": "add"}}
    assert body["max_tokens"] == 50 and body["top_p"] == 0.5 and body["seed"] == 7


@pytest.mark.anyio
async def test_stream_assembles_interleaved_fragmented_parallel_calls(llm_server):
    events = openai_stream(["Let me ", "check."], PARALLEL, fragment=3)
    llm_server.script(Reply(sse=events))
    async with provider(llm_server) as llm:
        received = [e async for e in llm.stream([user_message("go")], TOOLS)]
    texts = [e.text for e in received if isinstance(e, TextDelta)]
    fragments = [e for e in received if isinstance(e, ToolCallDelta)]
    assert texts == ["Let me ", "check."]
    assert len(fragments) > 6  # really fragmented
    assert {f.index for f in fragments} == {0, 1}
    for index, expected in enumerate(PARALLEL):
        joined = "".join(f.arguments for f in fragments if f.index == index)
        assert json.loads(joined) == expected[1]
    final = received[-1]
    assert isinstance(final, StreamCompleted)
    response = final.response
    assert response.text == "Let me check."
    assert response.tool_calls == [ToolCall(n, a, i) for n, a, i in PARALLEL]
    assert response.usage.total_tokens == 18 and response.finish_reason == "tool_calls"
    body = llm_server.requests[0].body
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert llm_server.requests[0].headers["accept"] == "text/event-stream"


@pytest.mark.anyio
async def test_stream_equals_complete_for_the_same_reply(llm_server):
    llm_server.script(
        Reply(json=openai_completion("ok", PARALLEL)),
        Reply(sse=openai_stream(["ok"], PARALLEL)),
    )
    async with provider(llm_server) as llm:
        whole = await llm.complete([user_message("go")], TOOLS)
        streamed = [e async for e in llm.stream([user_message("go")], TOOLS)][-1].response
    assert streamed.message == whole.message and streamed.tool_calls == whole.tool_calls


@pytest.mark.anyio
async def test_stream_cut_short_is_a_malformed_reply(llm_server):
    llm_server.script(Reply(sse=openai_stream(["partial"], done=False, usage=None)[:-1]))
    async with provider(llm_server) as llm:
        with pytest.raises(LLMResponseError, match="before a finish_reason"):
            async for _ in llm.stream([user_message("go")]):
                pass


@pytest.mark.anyio
async def test_error_inside_a_stream(llm_server):
    error = json.dumps({"error": {"message": "model crashed", "type": "server_error"}})
    llm_server.script(Reply(sse=[*openai_stream(["a"])[:2], (None, error)]))
    async with provider(llm_server) as llm:
        with pytest.raises(LLMServerError, match="model crashed"):
            async for _ in llm.stream([user_message("go")]):
                pass


@pytest.mark.anyio
async def test_429_with_retry_after_is_honoured_then_succeeds(llm_server, caplog):
    llm_server.script(
        Reply(429, json={"error": {"message": "slow down"}}, headers={"Retry-After": "1"}),
        Reply(json=openai_completion("after the wait")),
    )
    with caplog.at_level(logging.WARNING, logger="jianmu_bt.llm"):
        async with provider(llm_server) as llm:
            response = await llm.complete([user_message("go")])
    assert response.text == "after the wait" and len(llm_server.requests) == 2
    # FAST_RETRY alone would wait 0.01 s; the server's 1 s was honoured.
    waits = [r.getMessage() for r in caplog.records if "retry 1 of" in r.getMessage()]
    assert len(waits) == 1 and waits[0].endswith("retry 1 of 2 in 1.00 s"), waits


@pytest.mark.anyio
async def test_500_then_success(llm_server):
    llm_server.script(
        Reply(500, json={"error": {"message": "boom"}}),
        Reply(502, text="<html>bad gateway</html>", content_type="text/html"),
        Reply(json=openai_completion("recovered")),
    )
    async with provider(llm_server) as llm:
        response = await llm.complete([user_message("go")])
    assert response.text == "recovered" and len(llm_server.requests) == 3


@pytest.mark.anyio
async def test_5xx_gives_up_after_max_attempts(llm_server):
    llm_server.script(*[Reply(503, json={"error": {"message": "overloaded"}})] * 3)
    async with provider(llm_server) as llm:
        with pytest.raises(LLMServerError) as caught:
            await llm.complete([user_message("go")])
    assert "overloaded" in str(caught.value) and "gave up after 3 attempts" in str(caught.value)
    assert caught.value.status_code == 503 and len(llm_server.requests) == 3


@pytest.mark.anyio
async def test_rate_limit_beyond_the_deadline_is_not_waited_for(llm_server, caplog):
    retry = RetryPolicy(max_attempts=5, initial_delay=0.01, deadline=2)
    quota = {"error": {"message": "quota"}}
    llm_server.script(Reply(429, json=quota, headers={"Retry-After": "30"}))
    with caplog.at_level(logging.WARNING, logger="jianmu_bt.llm"):
        async with provider(llm_server, retry=retry) as llm:
            with pytest.raises(LLMRateLimitError) as caught:
                await llm.complete([user_message("go")])
    assert caught.value.retry_after == 30
    assert "not retried: waiting 30.00 s would pass the 2 s retry deadline" in str(caught.value)
    assert len(llm_server.requests) == 1
    assert not [r for r in caplog.records if "retry 1 of" in r.getMessage()]  # no wait began


@pytest.mark.anyio
async def test_401_is_an_authentication_error_naming_the_key_source(llm_server):
    llm_server.api_key = "sk-right-key-000"
    async with provider(llm_server, api_key="sk-wrong-key-123") as llm:
        with pytest.raises(LLMAuthenticationError) as caught:
            await llm.complete([user_message("go")])
    message = str(caught.value)
    assert "401" in message and "api_key argument" in message
    assert "sk-wrong-key-123" not in message and "[redacted]" in message
    assert len(llm_server.requests) == 1  # never retried


@pytest.mark.anyio
async def test_right_key_is_sent_as_bearer(llm_server):
    llm_server.api_key = "sk-right-key-000"
    llm_server.script(Reply(json=openai_completion("in")))
    async with provider(llm_server, api_key="sk-right-key-000") as llm:
        assert (await llm.complete([user_message("go")])).text == "in"


@pytest.mark.anyio
async def test_404_names_the_url_and_model_and_the_v1_hint(llm_server):
    llm = OpenAICompatibleProvider(model="no-such-model", base_url=llm_server.url, retry=FAST_RETRY)
    async with llm:
        with pytest.raises(LLMNotFoundError) as caught:
            await llm.complete([user_message("go")])
    message = str(caught.value)
    assert f"POST {llm_server.url}/chat/completions returned 404" in message
    assert "'no-such-model'" in message and "'/v1'" in message


@pytest.mark.anyio
async def test_body_that_is_not_json(llm_server):
    llm_server.script(Reply(text="{not json", content_type="application/json"))
    async with provider(llm_server) as llm:
        with pytest.raises(LLMResponseError, match=r"not JSON.*not json"):
            await llm.complete([user_message("go")])


@pytest.mark.anyio
async def test_reply_without_choices_says_what_is_missing(llm_server):
    llm_server.script(
        Reply(json={"id": "x", "model": "m"}),
        Reply(json={"choices": [{"index": 0}]}),
        Reply(json={"choices": [{"message": {"tool_calls": [{"id": "c", "function": {}}]}}]}),
    )
    async with provider(llm_server) as llm:
        with pytest.raises(LLMResponseError, match="missing 'choices'"):
            await llm.complete([user_message("go")])
        with pytest.raises(LLMResponseError, match=r"missing 'choices\[0\]\.message'"):
            await llm.complete([user_message("go")])
        with pytest.raises(LLMResponseError, match=r"tool_calls\[0\]' has no function name"):
            await llm.complete([user_message("go")])


@pytest.mark.anyio
async def test_slow_reply_hits_the_timeout(llm_server):
    llm_server.script(Reply(json=openai_completion("late"), delay=5))
    async with provider(llm_server, timeout=0.3) as llm:
        with pytest.raises(LLMTimeoutError, match=r"within 0\.3 s"):
            await llm.complete([user_message("go")])
    assert len(llm_server.requests) == 1  # timeouts are not retried by default
    await llm_server.wait_for_event("disconnected")  # the client hung up before the late reply


@pytest.mark.anyio
async def test_per_call_timeout_overrides_the_default(llm_server):
    llm_server.script(Reply(json=openai_completion("late"), delay=5))
    async with provider(llm_server, timeout=60) as llm:
        with pytest.raises(LLMTimeoutError, match=r"within 0\.2 s"):
            await llm.complete([user_message("go")], options=LLMOptions(timeout=0.2))


@pytest.mark.anyio
async def test_stalled_stream_hits_the_timeout(llm_server):
    llm_server.script(Reply(sse=openai_stream(["a", "b"]), hang_after=2))
    seen = []
    async with provider(llm_server, timeout=0.4) as llm:
        with pytest.raises(LLMTimeoutError, match="stalled"):
            async for event in llm.stream([user_message("go")]):
                seen.append(event)
    assert [e.text for e in seen] == ["a"]


@pytest.mark.anyio
@pytest.mark.parametrize("pooled", [True, False])
async def test_cancelling_a_call_closes_the_request(llm_server, pooled):
    llm_server.script(Reply(json=openai_completion("never"), delay=10))
    tasks_before = asyncio.all_tasks()
    llm = provider(llm_server)
    if pooled:
        await llm.open()
    with anyio.move_on_after(0.3) as scope:
        await llm.complete([user_message("go")])
    assert scope.cancelled_caught
    await llm_server.wait_for_event("disconnected")  # the request was closed, not left to finish
    await llm.aclose()
    assert asyncio.all_tasks() <= tasks_before  # nothing left running


@pytest.mark.anyio
async def test_leaving_a_stream_early_closes_the_connection(llm_server):
    llm_server.script(Reply(sse=openai_stream(["first", "second"]), hang_after=2))
    tasks_before = asyncio.all_tasks()
    llm = provider(llm_server)
    async with aclosing(llm.stream([user_message("go")])) as events:
        async for event in events:
            assert event.text == "first"
            break
    with anyio.fail_after(5):
        while "stream closed" not in llm_server.events:
            await anyio.sleep(0.02)
    assert asyncio.all_tasks() <= tasks_before  # nothing left running


@pytest.mark.anyio
async def test_cancelling_a_stream_closes_the_connection(llm_server):
    llm_server.script(Reply(sse=openai_stream(["first", "second"]), hang_after=2))
    tasks_before = asyncio.all_tasks()
    seen = []
    async with provider(llm_server) as llm:
        with anyio.move_on_after(0.3) as scope:
            async for event in llm.stream([user_message("go")]):
                seen.append(event)
    assert scope.cancelled_caught and [e.text for e in seen] == ["first"]
    with anyio.fail_after(5):
        while "stream closed" not in llm_server.events:
            await anyio.sleep(0.02)
    assert asyncio.all_tasks() <= tasks_before  # nothing left running


@pytest.mark.anyio
async def test_unreachable_server_is_a_connection_error_after_retries():
    with anyio.fail_after(10):
        async with OpenAICompatibleProvider(
            model="m", base_url="http://127.0.0.1:9/v1", retry=FAST_RETRY
        ) as llm:
            with pytest.raises(LLMConnectionError, match="gave up after 3 attempts"):
                await llm.complete([user_message("go")])


@pytest.mark.anyio
async def test_bad_input_is_reported_before_any_request(llm_server):
    async with provider(llm_server) as llm:
        with pytest.raises(InvalidRequestError, match=r"messages\[1\] \(tool\)"):
            await llm.complete([user_message("go"), tool_message("call_x", "5")])
        with pytest.raises(InvalidRequestError, match="tool_choice 'nope'"):
            await llm.complete([user_message("go")], TOOLS, LLMOptions(tool_choice="nope"))
        dangling = assistant_message(None, [ToolCall("add", {}, "call_1")])
        with pytest.raises(InvalidRequestError, match="no tool message answering"):
            await llm.complete([user_message("go"), dangling, user_message("again")])
    assert llm_server.requests == []


def test_settings_from_the_environment(monkeypatch, llm_server):
    monkeypatch.setenv("JIANMU_LLM_BASE_URL", f"{llm_server.url}/v1")
    monkeypatch.setenv("JIANMU_LLM_MODEL", "env-model")
    llm = OpenAICompatibleProvider()
    assert llm.url == f"{llm_server.url}/v1/chat/completions" and llm.model == "env-model"


def test_openai_key_is_not_sent_to_another_host(monkeypatch, llm_server):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-only-0001")
    local = OpenAICompatibleProvider(model="m", base_url=f"{llm_server.url}/v1")
    assert "api_key=none" in repr(local)
    monkeypatch.setenv("JIANMU_LLM_API_KEY", "sk-generic-0002")
    assert "api_key=set" in repr(OpenAICompatibleProvider(model="m", base_url=llm_server.url))
    monkeypatch.delenv("JIANMU_LLM_API_KEY")
    assert "api_key=set" in repr(OpenAICompatibleProvider(model="m"))  # api.openai.com


@pytest.mark.anyio
async def test_openai_host_without_key_or_model_fails_clearly():
    with pytest.raises(LLMConfigurationError, match=r"no API key for https://api\.openai\.com"):
        await OpenAICompatibleProvider(model="gpt").complete([user_message("go")])
    with pytest.raises(LLMConfigurationError, match="JIANMU_LLM_MODEL"):
        await OpenAICompatibleProvider(base_url="http://127.0.0.1:9/v1").complete(
            [user_message("go")]
        )
    with pytest.raises(LLMConfigurationError, match="must start with http"):
        OpenAICompatibleProvider(model="m", base_url="localhost:11434/v1")


@pytest.mark.anyio
async def test_open_pools_connections_and_plain_calls_do_not(llm_server):
    llm_server.script(*[Reply(json=openai_completion("x"))] * 4)
    llm = provider(llm_server)
    async with llm:
        await llm.complete([user_message("1")])
        await llm.complete([user_message("2")])
    await llm.complete([user_message("3")])
    await llm.complete([user_message("4")])
    ports = [r.client_port for r in llm_server.requests]
    assert ports[0] == ports[1]  # one pooled connection
    assert len({ports[0], ports[2], ports[3]}) == 3  # a connection of its own per call


def test_one_provider_serves_several_event_loops(llm_server):
    llm = provider(llm_server)
    for text in ("one", "two"):
        llm_server.script(Reply(json=openai_completion(text)))
        assert anyio.run(llm.complete, [user_message("go")]).text == text
