"""GuardEnforcer: combining verdicts, whole-batch preflight and recording counters."""

import pytest

from jianmu_bt.guard import (
    AllowList,
    ApprovalRequired,
    ConfirmList,
    Decision,
    DenyList,
    EffectBudget,
    GuardContext,
    GuardEnforcer,
    GuardVerdict,
    RateLimit,
)
from jianmu_bt.tools import ToolCall


def decisions(verdicts):
    return [v.decision for v in verdicts]


def test_the_strictest_policy_wins(toolset, make_call):
    tool = toolset.get("write_file")
    confirm, approve, deny = (
        ConfirmList(["write_file"]),
        ApprovalRequired(["write_file"]),
        DenyList(["write_file"]),
    )
    assert GuardEnforcer([confirm]).check(make_call("write_file"), tool).decision is (
        Decision.CONFIRM
    )
    assert GuardEnforcer([confirm, approve]).check(make_call("write_file"), tool).decision is (
        Decision.PENDING
    )
    verdict = GuardEnforcer([confirm, approve, deny]).check(make_call("write_file"), tool)
    assert verdict.decision is Decision.DENY and verdict.policy == "deny_list"


def test_a_tie_is_reported_by_the_first_policy(toolset, make_call):
    enforcer = GuardEnforcer([DenyList(["bash"], name="first"), AllowList([], name="second")])
    assert enforcer.check(make_call("bash"), toolset.get("bash")).policy == "first"


def test_no_opinion_from_any_policy_is_allow(toolset, make_call):
    verdict = GuardEnforcer([DenyList(["bash"])]).check(make_call("calculator"))
    assert verdict.allowed and verdict.call_id == "c_calculator"


def test_a_failing_or_malformed_policy_fails_closed(make_call):
    class Broken:
        name = "broken"

        def check(self, call, tool, ctx):
            raise RuntimeError("boom")

    class Wrong:
        name = "wrong"

        def check(self, call, tool, ctx):
            return "allow"

    verdict = GuardEnforcer([Broken()]).check(make_call("calculator"))
    assert verdict.decision is Decision.DENY and "RuntimeError: boom" in verdict.reason
    assert GuardEnforcer([Wrong()]).check(make_call("calculator")).decision is Decision.DENY
    with pytest.raises(TypeError, match=r"policies\[0\] is not a policy"):
        GuardEnforcer([object()])


def test_preflight_counts_earlier_calls_of_the_batch_against_budgets(toolset):
    enforcer = GuardEnforcer([EffectBudget({"http": 3})])
    enforcer.context.add_effects(["http"])
    batch = [ToolCall("http_request", {"url": f"http://h/{i}"}, f"c{i}") for i in range(4)]
    verdicts = enforcer.preflight(batch, toolset)
    assert decisions(verdicts) == [Decision.ALLOW, Decision.ALLOW, Decision.DENY, Decision.DENY]
    assert [v.call_id for v in verdicts] == ["c0", "c1", "c2", "c3"]
    assert enforcer.context.effect_count("http") == 1  # preflight plans, record counts


def test_refused_calls_do_not_use_the_batch_budget(toolset):
    enforcer = GuardEnforcer([DenyList(["bash"]), EffectBudget({"shell": 1, "http": 1})])
    batch = [
        ToolCall("bash", {"command": "ls"}, "c1"),
        ToolCall("http_request", {"url": "http://a"}, "c2"),
        ToolCall("http_request", {"url": "http://b"}, "c3"),
    ]
    assert decisions(enforcer.preflight(batch, toolset)) == [
        Decision.DENY,
        Decision.ALLOW,
        Decision.DENY,
    ]


def test_preflight_counts_batch_calls_against_rate_limits(toolset, clock):
    enforcer = GuardEnforcer(
        [RateLimit({"calculator": "2/60s"})], context=GuardContext(clock=clock)
    )
    batch = [ToolCall("calculator", {"expression": "1"}, f"c{i}") for i in range(3)]
    assert decisions(enforcer.preflight(batch, toolset))[-1] is Decision.DENY
    clock.advance(61)
    assert decisions(enforcer.preflight(batch, toolset))[-1] is Decision.DENY  # nothing recorded
    assert decisions(enforcer.preflight(batch[:2], toolset)) == [Decision.ALLOW] * 2


def test_preflight_leaves_unknown_tools_to_the_executor(toolset):
    enforcer = GuardEnforcer([AllowList(["calculator"])])
    verdicts = enforcer.preflight(
        [{"name": "no_such_tool", "arguments": "{}", "id": "c1"}, ToolCall("bash", {}, "c2")],
        toolset,
    )
    assert decisions(verdicts) == [Decision.ALLOW, Decision.DENY]
    assert "executor reports unknown tools" in verdicts[0].reason


def test_preflight_resolves_aliases_to_the_tool_and_its_effects(toolset):
    enforcer = GuardEnforcer([EffectBudget({"file_write": 0})])
    (verdict,) = enforcer.preflight([ToolCall("file_write", {"path": "a"}, "c1")], toolset)
    assert verdict.decision is Decision.DENY and "file_write" in verdict.reason


def test_record_counts_effects_on_success_and_run_times_always(toolset, clock):
    enforcer = GuardEnforcer(context=GuardContext(clock=clock))
    tool = toolset.get("http_request")
    enforcer.record(ToolCall("http_request", {}, "c1"), tool, result_ok=True)
    clock.advance(1)
    enforcer.record(ToolCall("http", {}, "c2"), tool, result_ok=False)
    assert enforcer.context.effect_count("http") == 1
    assert enforcer.context.call_times("http_request") == [clock.now - 1, clock.now]


def test_a_batch_is_held_only_when_a_call_is_pending():
    def verdicts(*decisions):
        return [GuardVerdict(d, "", "p", f"c{i}") for i, d in enumerate(decisions)]

    assert GuardEnforcer.is_held(verdicts(Decision.DENY, Decision.PENDING, Decision.ALLOW))
    assert not GuardEnforcer.is_held(verdicts(Decision.DENY, Decision.CONFIRM, Decision.ALLOW))
    assert not GuardEnforcer.is_held([])


def test_a_held_call_needs_an_id(toolset):
    enforcer = GuardEnforcer([ApprovalRequired(["bash"])])
    with pytest.raises(ValueError, match="has no id"):
        enforcer.check(ToolCall("bash", {}), toolset.get("bash"))
