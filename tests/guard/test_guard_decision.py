"""Decision ordering and the verdict texts an LLM reads."""

import itertools

import pytest

from jianmu_bt.guard import Decision, GuardVerdict


def test_strictest_orders_deny_over_pending_over_confirm_over_allow():
    order = [Decision.DENY, Decision.PENDING, Decision.CONFIRM, Decision.ALLOW]
    assert [d.rank for d in order] == [3, 2, 1, 0]
    for size in range(1, 5):
        for combo in itertools.permutations(order, size):
            expected = min(combo, key=order.index)
            assert Decision.strictest(combo) is expected


def test_strictest_of_no_decisions_is_allow():
    assert Decision.strictest([]) is Decision.ALLOW


def test_decision_is_a_string_enum():
    assert Decision("deny") is Decision.DENY
    assert str(Decision.PENDING) == "pending"


def test_deny_observation_names_tool_policy_reason_and_next_step():
    verdict = GuardVerdict(
        Decision.DENY, "bash is not allowed in this run", "deny_list", "c1", "bash"
    )
    text = verdict.observation()
    assert text.startswith("Error: the call to 'bash' was refused by policy deny_list: ")
    assert "bash is not allowed in this run." in text
    assert "Do not repeat this call" in text
    custom = GuardVerdict(Decision.DENY, "limit reached", "rate_limit", "c1", "x", hint="Wait 5s.")
    assert custom.observation().endswith("limit reached. Wait 5s.")


def test_confirm_observation_tells_the_llm_to_ask_the_user():
    text = GuardVerdict(
        Decision.CONFIRM, "it writes files", "confirm_list", "c1", "w"
    ).observation()
    assert text.startswith("Error: the call to 'w' was not run")
    assert "needs the user's confirmation" in text
    assert "Ask the user to confirm" in text
    assert "policy confirm_list: it writes files" in text


def test_pending_observation_and_failed_tool_result():
    verdict = GuardVerdict(Decision.PENDING, "needs review", "approval_required", "c9", "http")
    result = verdict.to_result()
    assert result.ok is False and result.tool == "http"
    assert result.content == verdict.observation()
    assert "waiting for a reviewer's approval" in result.content
    with pytest.raises(ValueError, match="allowed"):
        GuardVerdict(Decision.ALLOW, "ok", "", "c1", "x").to_result()


def test_verdict_dict_round_trip_and_bad_decision():
    verdict = GuardVerdict(Decision.CONFIRM, "why", "confirm_list", "c1", "w", hint="ask")
    assert GuardVerdict.from_dict(verdict.to_dict()) == verdict
    with pytest.raises(ValueError, match="'decision' must be one of"):
        GuardVerdict.from_dict({**verdict.to_dict(), "decision": "maybe"})
