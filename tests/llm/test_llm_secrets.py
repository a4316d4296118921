"""No API key ever reaches a log line, an exception, a traceback or a repr."""

from __future__ import annotations

import json
import logging
import traceback

import pytest
from llm_fake_server import FAST_RETRY, Reply

from jianmu_bt.llm import (
    AnthropicProvider,
    LLMError,
    LLMOptions,
    OpenAICompatibleProvider,
    user_message,
)

KEY = "sk-leak-canary-7f3a9c2e"


def echo(status: int) -> Reply:
    """A reply quoting the key back, as some real servers do."""
    return Reply(status, json={"error": {"message": f"bad key {KEY} for this org"}})


SCENARIOS = {
    "401 echoing the key": [echo(401)],
    "retried 500s echoing the key": [echo(500), echo(500), echo(500)],
    "malformed body echoing the key": [Reply(text=f"<html>{KEY}</html>")],
    "stream error echoing the key": [
        Reply(sse=[(None, json.dumps({"error": {"message": f"crashed near {KEY}"}}))])
    ],
    "timeout": [Reply(json={}, delay=3)],
}


def assert_no_key(*texts: str) -> None:
    for text in texts:
        assert KEY not in text


def make(kind: str, url: str):
    retry = FAST_RETRY
    if kind == "openai":
        return OpenAICompatibleProvider("m", f"{url}/v1", KEY, retry=retry, timeout=0.5)
    return AnthropicProvider("m", url, KEY, retry=retry, timeout=0.5)


@pytest.mark.anyio
@pytest.mark.parametrize("kind", ["openai", "anthropic"])
@pytest.mark.parametrize("scenario", list(SCENARIOS))
async def test_key_never_leaks(kind, scenario, llm_server, caplog):
    if kind == "anthropic" and scenario == "stream error echoing the key":
        error = {"type": "error", "error": {"type": "api_error", "message": f"near {KEY}"}}
        replies = [Reply(sse=[("error", json.dumps(error))])]
    else:
        replies = SCENARIOS[scenario]
    llm_server.script(*replies)
    caplog.set_level(logging.DEBUG)  # httpx and httpcore log every request at DEBUG
    llm = make(kind, llm_server.url)
    options = LLMOptions(timeout=0.3)
    with pytest.raises(LLMError) as caught:
        async with llm:
            if "stream" in scenario:
                async for _ in llm.stream([user_message("hi")], options=options):
                    pass
            else:
                await llm.complete([user_message("hi")], options=options)
    error = caught.value
    rendered = "".join(traceback.format_exception(error))
    assert_no_key(str(error), repr(error), error.body or "", rendered, caplog.text, repr(llm))
    assert_no_key(repr(vars(llm)), repr(vars(llm._endpoint)))
    # The key really was sent: the server saw it, so the checks above are not vacuous.
    header = "authorization" if kind == "openai" else "x-api-key"
    assert KEY in llm_server.requests[0].headers[header]


def test_reprs_show_only_whether_a_key_is_set():
    llm = OpenAICompatibleProvider("m", "http://127.0.0.1:9/v1", KEY)
    assert repr(llm) == (
        "OpenAICompatibleProvider(model='m', base_url='http://127.0.0.1:9/v1', api_key=set)"
    )
    assert KEY not in repr(llm._endpoint._auth) and KEY not in repr(llm._settings)
