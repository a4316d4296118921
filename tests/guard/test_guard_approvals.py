"""Approvals and grants: held calls, reviewers' decisions, confirmations and wake-ups."""

import threading

import anyio
import pytest

from jianmu_bt.guard import (
    ApprovalRequired,
    ApprovalStatus,
    ApprovalStore,
    ConfirmList,
    Decision,
    DenyList,
    GuardEnforcer,
)
from jianmu_bt.tools import ToolCall


@pytest.fixture
def held(toolset):
    """An enforcer holding http_request calls for review, and a batch with one such call."""
    enforcer = GuardEnforcer([ApprovalRequired(["http_request"])])
    batch = [
        ToolCall("calculator", {"expression": "1+1"}, "c1"),
        ToolCall("http_request", {"url": "http://a"}, "c2"),
    ]
    return enforcer, batch


def test_a_held_call_is_listed_with_its_tool_and_arguments(held, toolset):
    enforcer, batch = held
    verdicts = enforcer.preflight(batch, toolset)
    assert [v.decision for v in verdicts] == [Decision.ALLOW, Decision.PENDING]
    assert GuardEnforcer.is_held(verdicts)
    enforcer.preflight(batch, toolset)  # asking again does not list it twice
    (record,) = enforcer.approvals.pending()
    assert (record.call_id, record.tool, record.arguments) == (
        "c2",
        "http_request",
        batch[1].arguments,
    )
    assert record.kind is Decision.PENDING and record.policy == "approval_required"
    assert enforcer.approvals.status("c2") is ApprovalStatus.PENDING
    assert enforcer.approvals.status("c1") is None


def test_an_approved_call_becomes_allow(held, toolset):
    enforcer, batch = held
    enforcer.preflight(batch, toolset)
    enforcer.approvals.approve("c2", note="looks fine")
    verdicts = enforcer.preflight(batch, toolset)
    assert [v.decision for v in verdicts] == [Decision.ALLOW, Decision.ALLOW]
    assert not GuardEnforcer.is_held(verdicts)
    assert verdicts[1].policy == "approval" and "looks fine" in verdicts[1].reason
    assert enforcer.approvals.pending() == []


def test_a_rejected_call_becomes_deny_with_the_reviewers_reason(held, toolset):
    enforcer, batch = held
    enforcer.preflight(batch, toolset)
    enforcer.approvals.reject("c2", "that host is internal")
    verdict = enforcer.preflight(batch, toolset)[1]
    assert verdict.decision is Decision.DENY and verdict.policy == "approval"
    assert "a reviewer rejected it: that host is internal" in verdict.observation()


def test_an_approval_never_lifts_a_deny(toolset):
    enforcer = GuardEnforcer([ApprovalRequired(["bash"]), DenyList(["bash"])])
    enforcer.approvals.grant("bash", uses=None)
    assert enforcer.check(ToolCall("bash", {}, "c1"), toolset.get("bash")).decision is Decision.DENY


def test_reviewer_mistakes_get_clear_errors(held, toolset):
    enforcer, batch = held
    enforcer.preflight(batch, toolset)
    store = enforcer.approvals
    with pytest.raises(KeyError, match=r"no call 'nope' is waiting.*waiting: c2"):
        store.approve("nope")
    with pytest.raises(ValueError, match="needs a reason"):
        store.reject("c2", "  ")
    store.reject("c2", "no")
    with pytest.raises(ValueError, match="already rejected: no"):
        store.approve("c2")


def test_approving_a_confirmation_lets_the_identical_call_through_once(toolset):
    enforcer = GuardEnforcer([ConfirmList(["write_file"])])
    tool = toolset.get("write_file")
    first = ToolCall("write_file", {"path": "a.txt", "content": "x"}, "c1")
    assert enforcer.check(first, tool).decision is Decision.CONFIRM
    assert enforcer.approvals.pending(Decision.CONFIRM)[0].call_id == "c1"
    enforcer.approvals.approve("c1")  # the user said yes

    other_args = ToolCall("write_file", {"path": "b.txt", "content": "x"}, "c2")
    assert enforcer.check(other_args, tool).decision is Decision.CONFIRM
    again = ToolCall("write_file", {"path": "a.txt", "content": "x"}, "c3")
    verdict = enforcer.check(again, tool)
    assert verdict.decision is Decision.ALLOW and verdict.policy == "grant"
    assert enforcer.check(again, tool).allowed  # the same call id checked twice uses it once
    repeat = ToolCall("write_file", {"path": "a.txt", "content": "x"}, "c4")
    assert enforcer.check(repeat, tool).decision is Decision.CONFIRM


def test_an_unlimited_grant_covers_every_call_of_a_tool(toolset):
    enforcer = GuardEnforcer([ApprovalRequired(["http_request"])])
    grant = enforcer.approvals.grant("HTTP", uses=None, note="trusted run")  # alias
    tool = toolset.get("http_request")
    for i in range(3):
        assert enforcer.check(ToolCall("http_request", {"url": str(i)}, f"c{i}"), tool).allowed
    enforcer.approvals.revoke(grant.id)
    assert enforcer.check(ToolCall("http_request", {}, "c9"), tool).decision is Decision.PENDING
    with pytest.raises(ValueError, match="uses must be"):
        enforcer.approvals.grant("bash", uses=0)


def test_on_change_reports_every_change_until_unsubscribed(held, toolset):
    enforcer, batch = held
    seen = []

    def broken(change):
        raise RuntimeError("subscriber bug")

    enforcer.approvals.on_change(broken)
    unsubscribe = enforcer.approvals.on_change(lambda change: seen.append(change))
    version = enforcer.approvals.version
    enforcer.preflight(batch, toolset)
    enforcer.approvals.approve("c2")
    assert [(c.kind, c.call_id) for c in seen] == [("requested", "c2"), ("approved", "c2")]
    assert seen[1].record.status is ApprovalStatus.APPROVED
    assert enforcer.approvals.version > version
    unsubscribe()
    enforcer.approvals.grant("bash")
    assert len(seen) == 2


@pytest.mark.anyio
async def test_an_approval_from_another_thread_wakes_an_async_waiter(held, toolset):
    enforcer, batch = held
    enforcer.preflight(batch, toolset)
    woken = anyio.Event()
    token = anyio.lowlevel.current_token()

    def wake(change):  # runs on the approving thread
        if change.kind == "approved":
            anyio.from_thread.run_sync(woken.set, token=token)

    enforcer.approvals.on_change(wake)
    reviewer = threading.Thread(target=enforcer.approvals.approve, args=("c2",))
    reviewer.start()
    with anyio.fail_after(5):
        await woken.wait()
    reviewer.join(timeout=5)
    assert not reviewer.is_alive()
    assert enforcer.preflight(batch, toolset)[1].allowed


def test_a_store_round_trips_through_a_dict(held, toolset):
    enforcer, batch = held
    enforcer.preflight(batch, toolset)
    enforcer.approvals.grant("bash", {"command": "ls"}, uses=2)
    copy = ApprovalStore.from_dict(enforcer.approvals.to_dict())
    assert copy.records() == enforcer.approvals.records()
    assert copy.grants() == enforcer.approvals.grants()


def test_a_confirmation_is_used_once_even_by_the_confirmed_call_itself(toolset):
    enforcer = GuardEnforcer([ConfirmList(["write_file"])])
    tool = toolset.get("write_file")
    args = {"path": "a.txt", "content": "x"}
    assert enforcer.check(ToolCall("write_file", args, "c1"), tool).decision is Decision.CONFIRM
    enforcer.approvals.approve("c1")
    assert enforcer.check(ToolCall("write_file", args, "c1"), tool).allowed
    assert enforcer.check(ToolCall("write_file", args, "c2"), tool).decision is Decision.CONFIRM
