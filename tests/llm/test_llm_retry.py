"""LLM retries: Retry-After parsing, the retry loop, and the HTTP statuses worth a retry."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest
from llm_fake_server import FAST_RETRY, Reply
from llm_replies import openai_completion

from jianmu_bt.llm import (
    DEFAULT_RETRY_STATUSES,
    LLMConfig,
    LLMServerError,
    OpenAICompatibleProvider,
    RetryPolicy,
    parse_retry_after,
    provider_from_config,
    user_message,
)
from jianmu_bt.llm.retry import call_with_retries
from jianmu_bt.tools import RetryPolicy as ToolsRetryPolicy


def test_llm_and_tools_share_one_retry_policy():
    assert RetryPolicy is ToolsRetryPolicy


def test_retry_after_in_seconds_milliseconds_and_dates():
    now = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
    in_five = format_datetime(now + timedelta(seconds=5), usegmt=True)
    assert parse_retry_after({"Retry-After": "3"}) == 3
    assert parse_retry_after({"retry-after": "1.5"}) == 1.5
    assert parse_retry_after({"retry-after-ms": "250", "Retry-After": "9"}) == 0.25
    assert parse_retry_after({"Retry-After": in_five}, now=now) == 5
    assert parse_retry_after({"Retry-After": format_datetime(now, usegmt=True)}, now=now) == 0
    assert parse_retry_after({"Retry-After": "soon"}) is None
    assert parse_retry_after({}) is None


@pytest.mark.anyio
async def test_only_retryable_errors_are_retried():
    attempts = []

    async def attempt(remaining):
        attempts.append(remaining)
        raise LLMServerError("no", retryable=len(attempts) < 2)

    policy = RetryPolicy(max_attempts=5, initial_delay=0, jitter=0, deadline=30)
    with pytest.raises(LLMServerError, match="no"):
        await call_with_retries(attempt, policy, what="test")
    assert len(attempts) == 2
    assert 0 < attempts[1] <= attempts[0] <= 30  # each attempt learns the time left


@pytest.mark.anyio
async def test_a_retry_after_above_max_retry_after_is_not_waited_for():
    async def attempt(remaining):
        raise LLMServerError("busy", retryable=True, retry_after=90)

    with pytest.raises(LLMServerError, match="asked to wait 90 s, more than max_retry_after=60"):
        await call_with_retries(attempt, RetryPolicy(), what="test")


@pytest.mark.anyio
async def test_retry_statuses_decide_which_replies_are_retried(llm_server):
    llm_server.script(
        Reply(418, json={"error": {"message": "teapot"}}),
        Reply(json=openai_completion("brewed")),
    )
    llm = OpenAICompatibleProvider(
        "m",
        f"{llm_server.url}/v1",
        retry=FAST_RETRY,
        retry_statuses=DEFAULT_RETRY_STATUSES | {418},
    )
    assert (await llm.complete([user_message("tea")])).text == "brewed"
    assert len(llm_server.requests) == 2


@pytest.mark.anyio
async def test_a_status_left_out_of_retry_statuses_fails_at_once(llm_server):
    llm_server.script(Reply(503, json={"error": {"message": "down"}}))
    llm = OpenAICompatibleProvider(
        "m", f"{llm_server.url}/v1", retry=FAST_RETRY, retry_statuses={429}
    )
    with pytest.raises(LLMServerError, match="down") as caught:
        await llm.complete([user_message("hi")])
    assert not caught.value.retryable and len(llm_server.requests) == 1


def test_retry_statuses_inside_a_config_retry_block_still_work():
    config = LLMConfig.model_validate(
        {"provider": "openai", "retry": {"max_attempts": 2, "retry_statuses": [429]}}
    )
    assert config.retry == RetryPolicy(max_attempts=2)
    assert config.retry_statuses == frozenset({429})
    provider_from_config({"provider": "openai", "model": "m", "retry_statuses": [429, 503]})


def test_linear_backoff_from_a_config_retry_block():
    config = LLMConfig.model_validate(
        {"provider": "openai", "retry": {"backoff": "linear", "initial_delay": 2, "jitter": 0}}
    )
    assert config.retry is not None
    assert [config.retry.delay(n) for n in (1, 2, 3)] == [2, 4, 6]
