"""GeminiProvider over real HTTP against a local Gemini API (tests/llm/gemini_replay_server.py).

Two kinds of traffic are served from 127.0.0.1:

- real recordings (tests/llm/corpus, ids `gemini/*`): Gemini API exchanges recorded by mirascope
  and chatlas and published in their sdists, served byte for byte (and cut into 5-byte pieces).
  Where a recording goes on to a next turn, what we send back is compared with what the
  recording's own client sent, which the real API accepted (thought signatures compared as
  bytes: Google's SDK re-encodes them as URL-safe base64);
- HAND-WRITTEN bodies, marked so below, for what no recording shows (a blocked prompt, filtered
  finishes, 403/429/500 errors, errors inside a stream). Their shapes follow Google's public API
  reference (https://ai.google.dev/api/generate-content: GenerateContentResponse,
  PromptFeedback, FinishReason, UsageMetadata) and its error format (google.rpc.Status).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from gemini_replay_server import (
    SKIP_SIGNATURE,
    GeminiReplayServer,
    GeminiReply,
    check_schema,
    google_error,
    replies_from as recorded_replies,
    signatures_as_bytes,
    stream_of,
    without_payloads,
)
from llm_fake_server import FAST_RETRY, Reply
from recorded import recording

from jianmu_bt.llm import (
    AnthropicProvider,
    LLMAuthenticationError,
    LLMBadRequestError,
    LLMConfigurationError,
    LLMNotFoundError,
    LLMOptions,
    LLMRateLimitError,
    LLMResponseError,
    LLMServerError,
    StreamCompleted,
    TextDelta,
    ToolCallDelta,
    system_message,
    tool_message,
    user_message,
)
from jianmu_bt.llm.base import ReasoningDelta
from jianmu_bt.llm.costs import table_available
from jianmu_bt.llm.gemini import GeminiProvider
from jianmu_bt.llm.gemini_wire import gemini_body, gemini_schema
from jianmu_bt.llm.request import prepare_request
from jianmu_bt.tools import tool

KEY = "AIza-test-canary-5e1d"
PIECES = [None, 5]  # as recorded, and cut into 5-byte pieces
ENV = ("GEMINI_API_KEY", "GOOGLE_API_KEY", "GEMINI_BASE_URL", "GEMINI_MODEL")


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ENV:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="module")
def _server() -> Iterator[GeminiReplayServer]:
    server = GeminiReplayServer()
    server.start()
    yield server
    server.stop()


@pytest.fixture
def gemini(_server: GeminiReplayServer) -> Iterator[GeminiReplayServer]:
    _server.reset()
    _server.api_key = KEY
    yield _server
    _server.reset()


def provider(server: GeminiReplayServer, model: str = "gemini-test", **kw: Any) -> GeminiProvider:
    kw.setdefault("retry", FAST_RETRY)
    return GeminiProvider(model, base_url=server.url, api_key=KEY, **kw)


async def run(llm, messages, tools=None, options=None, *, stream: bool):
    """The reply (and the events when streamed) of one call."""
    if not stream:
        return await llm.complete(messages, tools, options), []
    events = [event async for event in llm.stream(messages, tools, options)]
    assert isinstance(events[-1], StreamCompleted)
    assert not any(isinstance(event, StreamCompleted) for event in events[:-1])
    return events[-1].response, events


def tools_of(request: dict[str, Any]) -> list[dict[str, Any]]:
    """A recorded request's function declarations as our tool schemas (types in lower case)."""

    def lower(node: Any) -> Any:
        if isinstance(node, dict):
            return {k: v.lower() if k == "type" else lower(v) for k, v in node.items()}
        return node

    return [
        {"name": d["name"], "description": d["description"], "parameters": lower(d["parameters"])}
        for d in request["tools"][0]["functionDeclarations"]
    ]


def opening(request: dict[str, Any]) -> list[dict[str, Any]]:
    """The system prompt (if any) and first question of a recorded request, as our messages."""
    system = request.get("systemInstruction")
    messages = [system_message(system["parts"][0]["text"])] if system else []
    return [*messages, user_message(request["contents"][0]["parts"][0]["text"])]


def no_empty_text(contents: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Contents without unsigned empty text parts (which chatlas drops and mirascope keeps)."""
    return [{**c, "parts": [p for p in c["parts"] if p != {"text": ""}]} for c in contents]


# --- real recordings ---------------------------------------------------------------------------
ANSWER_SCHEMA = {
    "type": "object",
    "properties": {n: {"type": "integer"} for n in ("integer_a", "integer_b", "answer")},
    "required": ["integer_a", "integer_b", "answer"],
}


def received_parts(rec, index: int = 0) -> list[dict[str, Any]]:
    """The parts a recorded reply holds (a stream's, one after the other)."""
    response = rec.interactions[index].response
    replies = [e.json() for e in response.sse_events()] if response.is_sse else [response.json]
    return [p for r in replies for p in r["candidates"][0]["content"]["parts"]]


@pytest.mark.anyio
@pytest.mark.parametrize("piece", PIECES)
@pytest.mark.parametrize("stream", [False, True])
async def test_gemini3_signed_call_goes_back_exactly(gemini, stream, piece):
    rec = recording("gemini/gemini3_tool_call_stream" if stream else "gemini/gemini3_tool_call")
    first = rec.interactions[0].request.json
    gemini.require_signatures = True  # Gemini 3 refuses a call whose signature is missing
    gemini.script(*recorded_replies(rec, piece))
    tools, options = tools_of(first), LLMOptions(output_schema=ANSWER_SCHEMA)
    question = opening(first)
    async with provider(gemini, "gemini-3-pro-preview") as llm:
        reply, events = await run(llm, question, tools, options, stream=stream)
        (call,) = reply.tool_calls
        assert (call.name, call.arguments) == ("customAdditionImplementation", {"a": 2, "b": 3})
        assert reply.finish_reason == "tool_calls" and call.id.startswith("call_")  # no id given
        parts = received_parts(rec)
        assert reply.message["provider_data"]["parts"] == parts  # exactly as received
        deltas = [(d.index, d.id, d.name, json.loads(d.arguments)) for d in events[:-1]]
        assert deltas == ([(0, call.id, call.name, call.arguments)] if stream else [])
        follow_up = [*question, reply.message, tool_message(call.id, "5")]
        answer, _ = await run(llm, follow_up, tools, options, stream=stream)
    assert json.loads(answer.text) == {"integer_a": 2, "integer_b": 3, "answer": 13}
    assert answer.finish_reason == "stop"
    sent = gemini.requests[1].body
    assert sent["contents"][1]["parts"] == parts  # the signature string untouched
    expected = without_payloads(rec.interactions[1].request.json["contents"])
    assert without_payloads(sent["contents"]) == expected  # what the real client sent
    assert sent["contents"][2]["parts"][0]["functionResponse"]["response"] == {"output": "5"}
    generation = sent["generationConfig"]
    assert generation["responseMimeType"] == "application/json"
    assert generation["responseJsonSchema"] == ANSWER_SCHEMA
    method = "streamGenerateContent" if stream else "generateContent"
    assert gemini.requests[0].path == f"/v1beta/models/gemini-3-pro-preview:{method}"


@pytest.mark.anyio
async def test_parallel_calls_without_ids_answer_by_name_and_order(gemini):
    rec = recording("gemini/parallel_calls")
    first = rec.interactions[0].request.json
    gemini.script(*recorded_replies(rec))
    tools, conversation = tools_of(first), opening(first)
    async with provider(gemini, "gemini-2.5-flash") as llm:
        reply = await llm.complete(conversation, tools)
        mellon, radiance = reply.tool_calls
        assert (mellon.arguments, radiance.arguments) == (
            {"password": "mellon"},
            {"password": "radiance"},
        )
        assert len({mellon.id, radiance.id}) == 2 and reply.finish_reason == "tool_calls"
        assert reply.usage.input_tokens == 70 and reply.usage.output_tokens == 40 + 76
        conversation += [reply.message, tool_message(radiance.id, "Life before Death")]
        conversation += [tool_message(mellon.id, "Welcome to Moria!")]  # out of order
        final = await llm.complete(conversation, tools)
    assert final.text.startswith("The secrets have been retrieved.")
    sent, recorded = gemini.requests[1].body, rec.interactions[1].request.json
    # What google-genai sent (and the API accepted), byte for byte: results, order, no ids.
    assert signatures_as_bytes(sent["contents"]) == signatures_as_bytes(recorded["contents"])
    assert sent["systemInstruction"]["parts"] == recorded["systemInstruction"]["parts"]


@pytest.mark.anyio
@pytest.mark.parametrize("piece", PIECES)
async def test_three_turn_tool_loop_with_gemini_ids(gemini, piece):
    rec = recording("gemini/sequential_calls_stream")
    first = rec.interactions[0].request.json
    gemini.require_signatures = True
    gemini.script(*recorded_replies(rec, piece))
    tools, conversation = tools_of(first), opening(first)
    results = {"weather_forecast": "rainy", "equipment": "umbrella"}
    llm = provider(gemini, "gemini-3.5-flash", options=LLMOptions(temperature=0))
    for name, call_id in [("weather_forecast", "2oaiqhji"), ("equipment", "xdds9n0p")]:
        reply, _ = await run(llm, conversation, tools, stream=True)
        (call,) = reply.tool_calls
        assert (call.name, call.id) == (name, call_id)  # Gemini's own id is kept
        conversation += [reply.message, tool_message(call.id, results[name])]
    final, events = await run(llm, conversation, tools, stream=True)
    assert final.text == "umbrella" and final.finish_reason == "stop"
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "umbrella"
    for index in (1, 2):
        sent = gemini.requests[index].body["contents"]
        recorded = rec.interactions[index].request.json["contents"]
        assert without_payloads(no_empty_text(sent)) == without_payloads(recorded)
        answer = sent[-1]["parts"][0]["functionResponse"]
        assert answer["response"] == {"output": ["rainy", "umbrella"][index - 1]}
    assert gemini.requests[0].body["generationConfig"] == {"temperature": 0}


@pytest.mark.anyio
@pytest.mark.parametrize("piece", PIECES)
async def test_parallel_calls_with_ids_streamed(gemini, piece):
    rec = recording("gemini/parallel_calls_stream")
    first = rec.interactions[0].request.json
    gemini.require_signatures = True
    gemini.script(*recorded_replies(rec, piece))
    tools, conversation = tools_of(first), opening(first)
    llm = provider(gemini, "gemini-3.5-flash")
    reply, events = await run(llm, conversation, tools, stream=True)
    joe, hadley = ("0b3pdf3o", {"_person": "Joe"}), ("brynwdxm", {"_person": "Hadley"})
    assert [(c.id, c.arguments) for c in reply.tool_calls] == [joe, hadley]
    assert [(e.index, e.id) for e in events[:-1]] == [(0, joe[0]), (1, hadley[0])]
    conversation += [reply.message, tool_message(hadley[0], "red")]
    conversation += [tool_message(joe[0], "sage green")]
    final, _ = await run(llm, conversation, tools, stream=True)
    assert final.text == "Joe sage green Hadley red"
    signed = final.message["provider_data"]["parts"]
    assert signed[-1]["text"] == "" and signed[-1]["thoughtSignature"]  # kept for the next turn
    sent = gemini.requests[1].body["contents"]
    recorded = rec.interactions[1].request.json["contents"]
    assert without_payloads(no_empty_text(sent)) == without_payloads(recorded)
    assert [p["functionResponse"]["id"] for p in sent[-1]["parts"]] == [joe[0], hadley[0]]


@pytest.mark.anyio
async def test_thought_parts_are_reasoning_and_go_back_with_their_signature(gemini):
    rec = recording("gemini/gemini3_thinking")
    gemini.script(*recorded_replies(rec))
    question = [user_message("Answer this question: What is 2 + 2?")]
    recorded = rec.interactions[0].response.json["candidates"][0]["content"]["parts"]
    async with provider(gemini, include_thoughts=True) as llm:
        reply = await llm.complete(question)
        assert reply.reasoning == recorded[0]["text"] and recorded[0]["thought"] is True
        assert reply.text == recorded[1]["text"] and "My Thought Process" not in reply.text
        assert reply.message["reasoning"] == reply.reasoning
        assert reply.usage.output_tokens == 30 + 309
        await llm.complete([*question, reply.message, user_message("And 3 + 3?")])
    first, second = (r.body for r in gemini.requests)
    assert first["generationConfig"] == {"thinkingConfig": {"includeThoughts": True}}
    assert second["contents"][1] == {"role": "model", "parts": recorded}  # thought and signature


@pytest.mark.anyio
@pytest.mark.parametrize("piece", PIECES)
@pytest.mark.parametrize("name", ["gemini3_thinking_stream", "thinking_stream"])
async def test_streamed_thoughts(gemini, name, piece):
    rec = recording(f"gemini/{name}")
    gemini.script(*recorded_replies(rec, piece))
    chunks = [
        e.json()["candidates"][0]["content"]["parts"][0]
        for e in rec.interactions[0].response.sse_events()
    ]
    reply, events = await run(provider(gemini), [user_message("2 + 2?")], stream=True)
    thoughts = [e.text for e in events if isinstance(e, ReasoningDelta)]
    texts = [e.text for e in events if isinstance(e, TextDelta)]
    assert thoughts == [c["text"] for c in chunks if c.get("thought")]
    assert "".join(texts) == "".join(c["text"] for c in chunks if not c.get("thought"))
    assert reply.reasoning == "".join(thoughts) and reply.text == "".join(texts)
    assert events.index(next(e for e in events if isinstance(e, TextDelta))) == len(thoughts)
    parts = reply.message["provider_data"]["parts"]
    assert parts[0] == {"text": reply.reasoning, "thought": True}  # pieces joined, as unstreamed
    assert parts[1] == {"text": reply.text}
    assert parts[2:] == [c for c in chunks if "thoughtSignature" in c]  # the signed part as sent


@pytest.mark.anyio
async def test_max_tokens_is_length_and_the_body_matches_the_real_client(gemini):
    rec = recording("gemini/max_tokens")
    gemini.script(*recorded_replies(rec))
    llm = provider(gemini)
    assert llm.price_provider is None  # a server that is not Google's: no price is guessed
    llm.price_provider = "google"  # as on Google's own host
    reply = await llm.complete(
        [user_message("List all U.S. states.")], options=LLMOptions(max_tokens=50)
    )
    assert reply.finish_reason == "length" and reply.text == "Here is a list of all 50 U"
    assert (reply.usage.input_tokens, reply.usage.output_tokens) == (9, 10 + 38)
    assert reply.model == "gemini-2.5-flash"
    assert reply.cost is not None or not table_available()  # priced as Google's model
    assert gemini.requests[0].body == rec.interactions[0].request.json
    assert "provider_data" not in reply.message  # plain text needs nothing sent back


@pytest.mark.anyio
@pytest.mark.parametrize(
    "name", ["gemini/gemini3_thinking", "gemini/parallel_calls", "gemini/max_tokens"]
)
async def test_streaming_equals_non_streaming(gemini, name):
    data = recording(name).interactions[0].response.json
    gemini.script(GeminiReply(json=data), GeminiReply(sse=stream_of(data), chunk_size=9))
    llm = provider(gemini)
    whole, _ = await run(llm, [user_message("q")], stream=False)
    streamed, events = await run(llm, [user_message("q")], stream=True)
    same = ("text", "reasoning", "finish_reason", "usage", "model", "vendor_finish_reason")
    assert {k: getattr(streamed, k) for k in same} == {k: getattr(whole, k) for k in same}
    assert [(c.name, c.arguments) for c in streamed.tool_calls] == [
        (c.name, c.arguments) for c in whole.tool_calls
    ]
    assert [e.id for e in events if isinstance(e, ToolCallDelta)] == [
        c.id for c in streamed.tool_calls
    ]
    signed = [
        p.get("thoughtSignature")
        for p in (whole.message.get("provider_data") or {}).get("parts", [])
    ]
    resigned = [
        p.get("thoughtSignature")
        for p in (streamed.message.get("provider_data") or {}).get("parts", [])
    ]
    assert [s for s in signed if s] == [s for s in resigned if s]


@pytest.mark.anyio
@pytest.mark.parametrize("stream", [False, True])
async def test_recorded_errors(gemini, stream):
    gemini.script(*recorded_replies(recording("gemini/error_400_stream")))
    with pytest.raises(LLMAuthenticationError) as bad_key:  # Gemini says 400 API_KEY_INVALID
        await run(provider(gemini), [user_message("hi")], stream=stream)
    assert bad_key.value.status_code == 400 and "API key not valid" in str(bad_key.value)
    assert "The key came from the api_key argument" in str(bad_key.value)
    gemini.script(*recorded_replies(recording("gemini/error_404"), None)[:1])
    with pytest.raises(LLMNotFoundError) as missing:
        await run(
            provider(gemini, "this-model-does-not-exist-12345"), [user_message("hi")], stream=stream
        )
    assert "is not found for API version v1beta" in str(missing.value)
    assert "this-model-does-not-exist-12345" in str(missing.value)
    assert len(gemini.requests) == 2  # neither was retried


# --- hand-written bodies (shapes from Google's API reference, see the module docstring) --------
def candidate_reply(parts, finish="STOP", usage=(12, 5, 0)) -> dict[str, Any]:
    """HAND-WRITTEN: a GenerateContentResponse with one candidate."""
    prompt, candidates, thoughts = usage
    return {
        "candidates": [
            {"content": {"parts": parts, "role": "model"}, "finishReason": finish, "index": 0}
        ],
        "usageMetadata": {
            "promptTokenCount": prompt,
            "candidatesTokenCount": candidates,
            "thoughtsTokenCount": thoughts,
            "totalTokenCount": prompt + candidates + thoughts,
        },
        "modelVersion": "gemini-test-001",
    }


BLOCKED = {  # HAND-WRITTEN: a prompt the filter refused (PromptFeedback.blockReason, no candidates)
    "promptFeedback": {
        "blockReason": "PROHIBITED_CONTENT",
        "safetyRatings": [{"category": "HARM_CATEGORY_DANGEROUS_CONTENT", "probability": "HIGH"}],
    },
    "usageMetadata": {"promptTokenCount": 7, "totalTokenCount": 7},
    "modelVersion": "gemini-test-001",
}


@pytest.mark.anyio
@pytest.mark.parametrize("stream", [False, True])
async def test_blocked_prompt_is_a_refusal_not_a_crash(gemini, stream):
    gemini.script(GeminiReply(sse=[BLOCKED]) if stream else GeminiReply(json=BLOCKED))
    reply, _ = await run(provider(gemini), [user_message("something bad")], stream=stream)
    assert reply.refused and reply.finish_reason == "content_filter"
    assert reply.vendor_finish_reason == "promptFeedback.blockReason=PROHIBITED_CONTENT"
    assert reply.text == "" and reply.tool_calls == [] and reply.usage.input_tokens == 7


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("finish", "word", "vendor"),
    [
        ("STOP", "stop", None),
        ("MAX_TOKENS", "length", None),
        ("SAFETY", "content_filter", "SAFETY"),
        ("RECITATION", "content_filter", "RECITATION"),
        ("SPII", "content_filter", "SPII"),
        ("MALFORMED_FUNCTION_CALL", "other", "MALFORMED_FUNCTION_CALL"),
        ("LANGUAGE", "other", "LANGUAGE"),
    ],
)
@pytest.mark.parametrize("stream", [False, True])
async def test_finish_reasons(gemini, finish, word, vendor, stream):
    data = candidate_reply([{"text": "partial"}], finish)
    if word == "content_filter":
        data["candidates"][0].pop("content")  # a filtered candidate comes without content
    gemini.script(GeminiReply(sse=[data]) if stream else GeminiReply(json=data))
    reply, _ = await run(provider(gemini), [user_message("q")], stream=stream)
    assert (reply.finish_reason, reply.vendor_finish_reason) == (word, vendor)
    assert reply.usage.output_tokens == 5 and reply.model == "gemini-test-001"


@pytest.mark.anyio
async def test_a_conversation_from_anthropic_goes_on_at_gemini(gemini, llm_server):
    rec = recording("anthropic/thinking_tool_use")  # [0] Claude, [1] resumed on Gemini
    llm_server.script(Reply(json=rec.interactions[0].response.json))
    claude_request = rec.interactions[0].request.json
    claude = AnthropicProvider("claude-sonnet-4-0", llm_server.url, "k", retry=FAST_RETRY)
    question = [user_message(claude_request["messages"][0]["content"])]
    tools = [
        {"name": t["name"], "description": t["description"], "parameters": t["input_schema"]}
        for t in claude_request["tools"]
    ]
    claude_reply = await claude.complete(question, tools)
    assert claude_reply.message["provider_data"]["origin"].startswith("anthropic@")
    (call,) = claude_reply.tool_calls
    gemini.require_signatures = True
    gemini.script(*recorded_replies(rec.interactions[1:]))
    result = tool_message(call.id, "218922995834555169026")
    final = await provider(gemini).complete([*question, claude_reply.message, result], tools)
    assert final.text == "The 100th Fibonacci number is 218922995834555169026."
    sent = gemini.requests[0].body["contents"]
    recorded = rec.interactions[1].request.json["contents"]  # what mirascope sent, accepted
    assert sent[1]["parts"][1].pop("thoughtSignature") == SKIP_SIGNATURE  # Google's stand-in
    assert sent == recorded  # the thinking blocks dropped, Claude's ids kept


@pytest.mark.anyio
async def test_parts_go_back_only_to_their_origin_and_while_they_match(gemini):
    signed = {"functionCall": {"name": "weather", "args": {"city": "Oslo"}, "id": "g1"}}
    signed["thoughtSignature"] = "c2lnLTE="  # HAND-WRITTEN reply
    gemini.require_signatures = True
    texts = [candidate_reply([{"text": "Cold."}]) for _ in range(3)]
    gemini.script(*[GeminiReply(json=r) for r in [candidate_reply([signed]), *texts]])
    tools = [{"name": "weather", "parameters": {"type": "object", "properties": {"city": {}}}}]
    llm = provider(gemini)
    reply = await llm.complete([user_message("Oslo?")], tools)
    kept = reply.message["provider_data"]
    assert kept == {"origin": llm.origin, "parts": [signed]} and reply.tool_calls[0].id == "g1"
    other = {**reply.message, "provider_data": {**kept, "origin": "gemini@elsewhere"}}
    call = reply.message["tool_calls"][0]
    edited = {
        **reply.message,
        "tool_calls": [
            {**call, "function": {"name": "weather", "arguments": '{"city": "Bergen"}'}}
        ],
    }
    for message in (reply.message, other, edited):
        await llm.complete([user_message("Oslo?"), message, tool_message("g1", "-3 C")], tools)
    same, foreign, changed = (r.body["contents"][1]["parts"] for r in gemini.requests[1:])
    assert same == [signed]
    assert foreign == [{**signed, "thoughtSignature": SKIP_SIGNATURE}]
    assert changed[0]["functionCall"]["args"] == {"city": "Bergen"}
    assert changed[0]["thoughtSignature"] == SKIP_SIGNATURE


@pytest.mark.anyio
async def test_request_body(gemini):
    gemini.script(GeminiReply(json=candidate_reply([{"text": "ok"}])))

    @tool
    def book(when: str, seats: int = 1) -> str:
        """Book a table."""
        return "booked"

    schema = {  # what pydantic writes for nested models: $defs, $ref with siblings, const, $schema
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {
            "Place": {
                "type": "object",
                "properties": {"city": {"type": "string"}, "kind": {"const": "place"}},
            }
        },
        "properties": {"where": {"$ref": "#/$defs/Place", "description": "Where to go"}},
    }
    options = LLMOptions(
        tool_choice="book",
        temperature=0.2,
        max_tokens=64,
        output_schema=schema,
        extra={"generationConfig": {"topP": 0.5}, "safetySettings": []},
    )
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}
    conversation = [
        system_message("Be brief."),
        user_message("Hi"),
        {"role": "user", "content": [{"type": "text", "text": "See"}, image]},
        system_message("Be kind."),
    ]
    await provider(gemini, "models/gemini-2.5-flash").complete(conversation, [book], options)
    sent = gemini.requests[0]
    body = sent.body
    assert sent.path == "/v1beta/models/gemini-2.5-flash:generateContent" and sent.query == ""
    assert body["systemInstruction"] == {"parts": [{"text": "Be brief.\n\nBe kind."}]}
    assert body["contents"] == [
        {
            "role": "user",
            "parts": [
                {"text": "Hi"},
                {"text": "See"},
                {"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo="}},
            ],
        }
    ]
    (declaration,) = body["tools"][0]["functionDeclarations"]
    assert declaration["name"] == "book" and declaration["description"] == "Book a table."
    assert declaration["parametersJsonSchema"]["required"] == ["when"]
    assert body["toolConfig"] == {
        "functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["book"]}
    }
    generation = body["generationConfig"]
    assert (
        generation["temperature"] == 0.2
        and generation["maxOutputTokens"] == 64
        and generation["topP"] == 0.5
    )
    assert generation["responseJsonSchema"] == {
        "type": "object",
        "properties": {
            "where": {
                "type": "object",
                "description": "Where to go",
                "properties": {"city": {"type": "string"}, "kind": {"enum": ["place"]}},
            }
        },
    }
    assert body["safetySettings"] == []


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("status", "error", "attempts"),
    [
        (400, LLMBadRequestError, 1),
        (403, LLMAuthenticationError, 1),
        (429, LLMRateLimitError, 3),
        (500, LLMServerError, 3),
    ],
)
@pytest.mark.parametrize("stream", [False, True])
async def test_http_errors_in_googles_shape(gemini, status, error, attempts, stream):
    body = google_error(status, f"refused (the key was {KEY})")  # HAND-WRITTEN
    gemini.script(*[GeminiReply(status=status, json=body) for _ in range(attempts)])
    with pytest.raises(error) as caught:
        await run(provider(gemini), [user_message("hi")], stream=stream)
    assert caught.value.status_code == status and len(gemini.requests) == attempts
    assert "refused (the key was [redacted])" in str(caught.value)
    for text in (
        str(caught.value),
        repr(caught.value),
        caught.value.body or "",
        caught.value.url or "",
    ):
        assert KEY not in text


@pytest.mark.anyio
@pytest.mark.parametrize("stream", [False, True])
async def test_the_key_goes_in_a_header_never_in_the_url(gemini, stream):
    gemini.script(
        GeminiReply(status=500, json=google_error(500, "busy")),
        GeminiReply(sse=[candidate_reply([{"text": "hi"}])])
        if stream
        else GeminiReply(json=candidate_reply([{"text": "hi"}])),
    )
    reply, _ = await run(provider(gemini), [user_message("hi")], stream=stream)
    assert reply.text == "hi"
    for sent in gemini.requests:
        assert sent.headers["x-goog-api-key"] == KEY and "authorization" not in sent.headers
        assert KEY not in sent.path + sent.query and sent.query == ("alt=sse" if stream else "")


@pytest.mark.anyio
async def test_errors_inside_a_stream(gemini):
    limited = {
        "error": {"code": 429, "message": f"quota ({KEY})", "status": "RESOURCE_EXHAUSTED"}
    }  # HAND-WRITTEN
    unfinished = candidate_reply([{"text": "cut"}])
    unfinished["candidates"][0].pop("finishReason")
    gemini.script(
        GeminiReply(sse=[candidate_reply([{"text": "a"}], finish=None), limited]),
        GeminiReply(sse=[unfinished]),
    )
    with pytest.raises(LLMRateLimitError) as caught:
        await run(provider(gemini), [user_message("hi")], stream=True)
    assert "RESOURCE_EXHAUSTED" in str(caught.value) and KEY not in str(caught.value)
    with pytest.raises(LLMResponseError, match="before a finishReason"):
        await run(provider(gemini), [user_message("hi")], stream=True)


@pytest.mark.anyio
async def test_key_variables_go_only_to_googles_host(monkeypatch, gemini):
    monkeypatch.setenv("GOOGLE_API_KEY", KEY)
    assert "api_key=set" in repr(GeminiProvider("gemini-2.5-flash"))  # Google's own host
    monkeypatch.setenv("GEMINI_API_KEY", "AIza-other")  # the Gemini variable wins
    assert GeminiProvider("m")._settings.key_hint.startswith(
        "The key came from the environment variable GEMINI_API_KEY"
    )
    gemini.api_key = None
    gemini.script(GeminiReply(json=candidate_reply([{"text": "hi"}])))
    await GeminiProvider("m", base_url=gemini.url, retry=FAST_RETRY).complete([user_message("hi")])
    assert "x-goog-api-key" not in gemini.requests[0].headers  # another host: no vendor key
    for name in ("GOOGLE_API_KEY", "GEMINI_API_KEY"):
        monkeypatch.delenv(name)
    monkeypatch.setenv("GEMINI_MODEL", "gemini-from-env")
    llm = GeminiProvider()
    assert llm.model == "gemini-from-env" and llm.price_provider == "google"
    with pytest.raises(LLMConfigurationError, match="GEMINI_API_KEY"):
        await llm.complete([user_message("hi")])
    assert len(gemini.requests) == 1


def test_schemas_gemini_refuses_are_rewritten():
    tree = {  # a recursive $ref stays (Gemini unrolls it), with only the siblings it allows
        "type": "object",
        "definitions": {"Node": {"type": "object", "properties": {
            "name": {"type": "string"},
            "children": {"type": "array", "items": {"$ref": "#/definitions/Node"}},
        }}},
        "properties": {"root": {"$ref": "#/definitions/Node", "title": "Root", "description": "u"}},
    }  # fmt: skip
    schema = gemini_schema(tree)
    node = schema["properties"]["root"]
    assert node["title"] == "Root" and node["description"] == "u"  # inlined once
    assert node["properties"]["children"]["items"] == {"$ref": "#/$defs/Node"}
    assert schema["$defs"]["Node"]["properties"]["children"]["items"] == {"$ref": "#/$defs/Node"}
    assert "definitions" not in schema and check_schema("s", schema) is None
    data = {
        "properties": {"const": {"const": 1}, "$ref": {"type": "string", "default": {"$ref": 1}}}
    }
    assert gemini_schema(data) == {  # property names and data values are not keywords
        "properties": {"const": {"enum": [1]}, "$ref": {"type": "string", "default": {"$ref": 1}}}
    }


@pytest.mark.parametrize(
    ("choice", "config"),
    [("auto", {"mode": "AUTO"}), ("none", {"mode": "NONE"}), ("required", {"mode": "ANY"}),
     ("clock", {"mode": "ANY", "allowedFunctionNames": ["clock"]})],
)  # fmt: skip
def test_tool_choice(choice, config):
    tools = [{"name": "clock", "parameters": {"type": "object", "properties": {}}}]
    defaults = LLMOptions(model="m", tool_choice=choice, parallel_tool_calls=False)
    request = prepare_request([user_message("time?")], tools, None, defaults, missing_model_hint="")
    body = gemini_body(request)
    assert body["toolConfig"] == {"functionCallingConfig": config}
    assert body["tools"] == [{"functionDeclarations": [{"name": "clock"}]}]  # no parameters
