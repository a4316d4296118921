"""Fixtures of the LLM tests: one fake API server for the session, a clean environment."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from llm_fake_server import FakeLLMServer

ENV_NAMES = (
    "JIANMU_LLM_BASE_URL",
    "JIANMU_LLM_API_KEY",
    "JIANMU_LLM_MODEL",
    "OPENAI_BASE_URL",
    "OPENAI_API_KEY",
    "ANTHROPIC_BASE_URL",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_MODEL",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "GEMINI_BASE_URL",
    "GEMINI_MODEL",
    "AWS_BEARER_TOKEN_BEDROCK",
    "AWS_ENDPOINT_URL_BEDROCK_RUNTIME",
    "BEDROCK_MODEL_ID",
)


@pytest.fixture(autouse=True)
def clean_llm_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No provider setting leaks in from the machine's environment."""
    for name in ENV_NAMES:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="session")
def _server_process() -> Iterator[FakeLLMServer]:
    server = FakeLLMServer()
    server.start()
    yield server
    server.stop()


@pytest.fixture
def llm_server(_server_process: FakeLLMServer) -> Iterator[FakeLLMServer]:
    """The fake OpenAI/Anthropic server, with nothing scripted and nothing recorded."""
    _server_process.reset()
    yield _server_process
    _server_process.reset()
