"""RetryPolicy and Retry-After parsing."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest

from jianmu_bt.llm import LLMServerError, RetryPolicy, parse_retry_after
from jianmu_bt.llm.retry import call_with_retries


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


def test_backoff_grows_caps_and_jitters_within_bounds():
    policy = RetryPolicy(initial_delay=1, multiplier=2, max_delay=5, jitter=0)
    assert [policy.backoff(n) for n in (1, 2, 3, 4)] == [1, 2, 4, 5]
    jittered = RetryPolicy(initial_delay=1, jitter=0.5)
    delays = {jittered.backoff(1) for _ in range(50)}
    assert all(0.5 <= d <= 1.5 for d in delays) and len(delays) > 1


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
