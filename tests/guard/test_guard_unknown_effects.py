"""Unknown effects are effects, for the guard too: a tool that declares no effect tags and is not
read-only counts as the effect `unknown` (budgets, the batch plan); read-only and tagged tools
count what they declare."""

from __future__ import annotations

from jianmu_bt import ToolCall, tool
from jianmu_bt.guard import Decision, EffectBudget, GuardContext, GuardEnforcer, LayeredGuard
from jianmu_bt.tools import ToolSet


@tool(blocking=False)
def stamp(text: str) -> str:
    """Declares nothing: its effects are unknown."""
    return text


@tool(blocking=False, read_only=True)
def peek(text: str) -> str:
    """Declared read-only."""
    return text


@tool(blocking=False, effect_tags=["mail"])
def mail(text: str) -> str:
    """Declares the mail effect."""
    return text


TOOLS = ToolSet([stamp, peek, mail])


def call(name: str, n: int = 1) -> ToolCall:
    return ToolCall(name, {"text": "x"}, f"{name}{n}")


def test_a_budget_of_zero_on_unknown_admits_only_tools_that_declared_what_they_do() -> None:
    policy, ctx = EffectBudget({"unknown": 0}), GuardContext()
    refused = policy.check(call("stamp"), stamp, ctx)
    assert refused is not None and refused.decision is Decision.DENY
    assert "budget of 0 'unknown' effects" in refused.reason
    assert policy.check(call("peek"), peek, ctx) is None
    assert policy.check(call("mail"), mail, ctx) is None


def test_successful_calls_of_undeclared_tools_are_counted_as_unknown() -> None:
    enforcer = GuardEnforcer([EffectBudget({"unknown": 1})])
    enforcer.record(call("stamp"), stamp, True)
    enforcer.record(call("peek"), peek, True)
    enforcer.record(call("mail"), mail, True)
    enforcer.record(call("stamp", 2), stamp, False)  # failed calls never count
    assert enforcer.context.effect_counts == {"unknown": 1, "mail": 1}
    assert enforcer.check(call("stamp", 3), stamp).decision is Decision.DENY
    assert enforcer.check(call("peek", 2), peek).allowed


def test_a_batch_is_planned_with_its_earlier_unknown_effects_counted() -> None:
    enforcer = GuardEnforcer.from_config({"budgets": {"unknown": 2}})
    batch = [call("stamp", 1), call("peek", 1), call("stamp", 2), call("stamp", 3)]
    decisions = [v.decision for v in enforcer.preflight(batch, TOOLS)]
    assert decisions == [Decision.ALLOW, Decision.ALLOW, Decision.ALLOW, Decision.DENY]
    layered = LayeredGuard(GuardEnforcer.from_config({"budgets": {"unknown": 1}}), enforcer)
    decisions = [v.decision for v in layered.preflight(batch, TOOLS)]
    assert decisions == [Decision.ALLOW, Decision.ALLOW, Decision.DENY, Decision.DENY]
