"""provider_from_config: the `llm:` section of a tree file."""

from __future__ import annotations

import pytest
from llm_fake_server import Reply
from llm_replies import openai_completion

from jianmu_bt.llm import (
    AnthropicProvider,
    LLMConfigurationError,
    OpenAICompatibleProvider,
    ScriptedProvider,
    provider_from_config,
    user_message,
)


@pytest.mark.anyio
async def test_openai_config_talks_to_the_server_with_the_named_key(monkeypatch, llm_server):
    monkeypatch.setenv("MY_LLM_KEY", "sk-config-key-5")
    llm_server.api_key = "sk-config-key-5"
    llm_server.script(Reply(json=openai_completion("configured")))
    config = {
        "provider": "openai",
        "model": "qwen2.5:7b",
        "base_url": f"{llm_server.url}/v1",
        "api_key_env": "MY_LLM_KEY",
        "temperature": 0,
        "timeout": 5,
        "retry": {"max_attempts": 2},
        "headers": {"x-trace": "t1"},
    }
    llm = provider_from_config(config)
    assert isinstance(llm, OpenAICompatibleProvider)
    async with llm:
        assert (await llm.complete([user_message("hi")])).text == "configured"
    sent = llm_server.requests[0]
    assert sent.body["model"] == "qwen2.5:7b" and sent.body["temperature"] == 0
    assert sent.headers["x-trace"] == "t1"


def test_anthropic_and_scripted_configs():
    anthropic = provider_from_config({"provider": "anthropic", "model": "claude-x"})
    assert isinstance(anthropic, AnthropicProvider) and anthropic.model == "claude-x"
    scripted = provider_from_config({"provider": "scripted", "replies": ["a", {"content": "b"}]})
    assert isinstance(scripted, ScriptedProvider) and scripted.remaining == 2


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        ({"provider": "gemin"}, "llm.provider"),
        ({"provider": "openai", "modle": "x"}, "llm.modle: Extra inputs"),
        ({"provider": "openai", "retry": {"max_attempts": 0}}, "llm.retry.max_attempts"),
        ({"provider": "scripted"}, "needs a list of replies"),
        ({"provider": "scripted", "replies": ["a"], "base_url": "http://x"}, "base_url mean"),
        ({"provider": "openai", "replies": ["a"]}, "only a scripted provider takes replies"),
        ({"provider": "openai", "base_url": "ftp://x"}, "must start with http"),
        (["openai"], "must be a mapping"),
    ],
)
def test_bad_configs_name_the_key(config, expected):
    with pytest.raises(LLMConfigurationError, match=expected):
        provider_from_config(config)
