"""RetryPolicy: one policy for tool calls and LLM requests (attempts, waits, deadline)."""

from __future__ import annotations

import anyio
import pydantic
import pytest

from jianmu_bt.nodes.calling import run_tool_call
from jianmu_bt.tools import RetryPolicy, ToolCall, tool
from jianmu_bt.tools.retry import NO_RETRY


def test_exponential_backoff_grows_and_caps():
    policy = RetryPolicy(initial_delay=1, multiplier=2, max_delay=5, jitter=0)
    assert [policy.delay(n) for n in (1, 2, 3, 4)] == [1, 2, 4, 5]


def test_linear_backoff_adds_the_initial_delay_each_retry():
    policy = RetryPolicy(backoff="linear", initial_delay=0.5, max_delay=1.2, jitter=0)
    assert [policy.delay(n) for n in (1, 2, 3)] == [0.5, 1.0, 1.2]


def test_jitter_moves_a_wait_within_its_bounds():
    policy = RetryPolicy(initial_delay=1, jitter=0.5)
    delays = {policy.delay(1) for _ in range(50)}
    assert all(0.5 <= d <= 1.5 for d in delays) and len(delays) > 1


def test_tool_node_settings_map_to_a_policy():
    policy = RetryPolicy.from_retries(2, 0.25)
    assert policy.max_attempts == 3 and policy.max_retries == 2
    assert [policy.delay(n) for n in (1, 2, 3)] == [0.25, 0.5, 1.0]
    assert policy.deadline is None and policy.retry_timeouts
    assert NO_RETRY.max_retries == 0


def test_decide_stops_after_the_last_attempt():
    policy = RetryPolicy(max_attempts=2, jitter=0, initial_delay=0.1)
    assert policy.decide(1, elapsed=0).delay == 0.1
    stop = policy.decide(2, elapsed=0)
    assert not stop.retry and stop.reason == "gave up after 2 attempts"


def test_decide_honours_an_asked_wait_up_to_max_retry_after():
    policy = RetryPolicy(max_retry_after=10)
    assert policy.decide(1, elapsed=0, asked=3).delay == 3
    assert "more than max_retry_after=10 s" in policy.decide(1, elapsed=0, asked=11).reason


def test_decide_never_waits_past_the_deadline():
    policy = RetryPolicy(max_attempts=5, initial_delay=4, jitter=0, deadline=10)
    assert policy.decide(1, elapsed=5).delay == 4
    stop = policy.decide(1, elapsed=7)
    assert stop.reason == "not retried: waiting 4.00 s would pass the 10 s retry deadline"
    assert policy.time_left(7) == 3 and NO_RETRY.time_left(7) is None


@pytest.mark.parametrize(
    "bad",
    [{"max_attempts": 0}, {"initial_delay": -1}, {"backoff": "cubic"}, {"max_retries": 2}],
)
def test_bad_settings_are_refused_when_the_policy_is_made(bad):
    with pytest.raises(pydantic.ValidationError):
        RetryPolicy(**bad)


def test_a_policy_is_immutable():
    with pytest.raises(pydantic.ValidationError):
        RetryPolicy().max_attempts = 9  # type: ignore[misc]


# The same policy as tool nodes use it (jianmu_bt.nodes.calling.run_tool_call).


def _slow_then_quick_tool():
    calls = []

    @tool
    async def slow_once() -> str:
        """Too slow on its first call only."""
        calls.append(1)
        if len(calls) == 1:
            await anyio.sleep(5)
        return "done"

    return slow_once, calls


def test_a_tool_call_that_timed_out_is_retried_only_with_retry_timeouts():
    async def run(policy: RetryPolicy) -> tuple[bool, int]:
        slow, calls = _slow_then_quick_tool()
        call = ToolCall("slow_once", {}, "c1")
        result = await run_tool_call(None, "node", slow, call, retry=policy, timeout=0.05)
        return result.ok, len(calls)

    quick = {"initial_delay": 0, "jitter": 0}
    assert anyio.run(run, RetryPolicy(**quick)) == (False, 1)
    assert anyio.run(run, RetryPolicy(retry_timeouts=True, **quick)) == (True, 2)
    assert anyio.run(run, RetryPolicy.from_retries(1, 0)) == (True, 2)
