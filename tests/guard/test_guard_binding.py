"""Approvals and grants are bound to the call (id, tool, arguments), not only to the call id."""

import hashlib
import json

import pytest

from jianmu_bt.guard import (
    ApprovalRequired,
    ApprovalStatus,
    ApprovalStore,
    CallIdReusedError,
    ConfirmList,
    Decision,
    GuardEnforcer,
    GuardVerdict,
    arguments_digest,
)
from jianmu_bt.tools import ToolCall

URL_A = {"url": "http://a"}
URL_EVIL = {"url": "http://evil.test/exfiltrate"}
FILE_A = {"path": "a.txt", "content": "x"}
FILE_B = {"path": "/etc/passwd", "content": "x"}


@pytest.fixture
def approved(toolset):
    """An enforcer holding http_request and write_file calls; the held call c2 is approved."""
    enforcer = GuardEnforcer([ApprovalRequired(["http_request", "write_file"])])
    batch = [
        ToolCall("calculator", {"expression": "1+1"}, "c1"),
        ToolCall("http_request", URL_A, "c2"),
    ]
    assert enforcer.preflight(batch, toolset)[1].decision is Decision.PENDING
    enforcer.approvals.approve("c2", note="fine")
    return enforcer


def state(store: ApprovalStore):
    return store.records(), store.grants(), store.to_dict()


def assert_refused_as_reused(verdict: GuardVerdict, call_id: str) -> None:
    assert verdict.decision is Decision.DENY and not verdict.allowed
    assert verdict.policy == "approval"
    assert verdict.reason == (
        f"call id {call_id} was already used for a different call (other tool or arguments); "
        "a call needs an id of its own"
    )
    assert verdict.observation().startswith("Error:")


def test_the_digest_is_the_canonical_json_of_tool_and_arguments():
    text = json.dumps(
        ["http_request", URL_A], sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )
    assert arguments_digest("http_request", URL_A) == hashlib.sha256(text.encode()).hexdigest()[:32]
    assert arguments_digest("http_request", {"b": 1, "a": "é"}) == arguments_digest(
        "HTTP_REQUEST", {"a": "é", "b": 1}
    )
    assert arguments_digest("shell", {"command": "ls"}) == arguments_digest(
        "bash", {"command": "ls"}
    )  # aliases name the same tool
    assert arguments_digest("bash", {"command": "ls"}) != arguments_digest(
        "bash", {"command": "ls "}
    )
    assert arguments_digest("bash", {"n": 1}) != arguments_digest("bash", {"n": True})
    assert arguments_digest("bash", {"n": 1}) != arguments_digest("calculator", {"n": 1})
    assert len(arguments_digest("bash", {1: "x", "a": object()})) == 32  # never raises


def test_an_approved_id_reused_with_other_arguments_is_denied(approved, toolset):
    tool = toolset.get("http_request")
    replay = ToolCall("http_request", URL_EVIL, "c2")
    verdicts = approved.preflight([replay], toolset)
    assert_refused_as_reused(verdicts[0], "c2")
    assert not GuardEnforcer.is_held(verdicts)
    assert_refused_as_reused(approved.check(replay, tool), "c2")  # and again: still refused
    assert not approved.approvals.is_approved("c2", "http_request", URL_EVIL)


def test_an_approved_id_reused_for_another_tool_that_needs_approval_is_denied(approved, toolset):
    verdict = approved.preflight([ToolCall("write_file", URL_A, "c2")], toolset)[0]
    assert_refused_as_reused(verdict, "c2")


def test_a_reused_id_on_a_call_no_policy_objects_to_is_simply_allowed(approved, toolset):
    # Servers that repeat ids across turns ("call_0") must not be refused for calls that need
    # no reviewer: there is no approval to carry over.
    verdict = approved.preflight([ToolCall("calculator", {"expression": "1+1"}, "c2")], toolset)
    assert verdict[0].allowed and verdict[0].policy != "approval"
    assert approved.approvals.is_approved("c2", "http_request", dict(URL_A))


def test_the_same_call_under_its_own_id_stays_approved(approved, toolset):
    tool = toolset.get("http_request")
    store = approved.approvals
    assert store.is_approved("c2", "http_request", dict(URL_A))
    assert approved.check(ToolCall("http_request", dict(URL_A), "c2"), tool).allowed
    assert approved.check(ToolCall("http_request", URL_EVIL, "c2"), tool).decision is Decision.DENY
    verdict = approved.check(ToolCall("http_request", dict(URL_A), "c2"), tool)
    assert verdict.allowed and verdict.policy == "approval" and "fine" in verdict.reason
    alias = ToolCall("HTTP", {"url": "http://a"}, "c2")  # an alias names the same tool
    assert approved.check(alias, tool).allowed
    assert store.status("c2") is ApprovalStatus.APPROVED
    assert not store.is_approved("c2", "http_request", URL_EVIL)
    assert not store.is_approved("c2", "write_file", URL_A)
    assert not store.is_approved("c9", "http_request", URL_A)
    assert not store.is_approved(None, "http_request", URL_A)


def test_an_approved_confirmation_is_not_an_approved_held_call(toolset):
    enforcer = GuardEnforcer([ConfirmList(["write_file"])])
    assert enforcer.check(ToolCall("write_file", FILE_A, "c1")).decision is Decision.CONFIRM
    enforcer.approvals.approve("c1")
    assert not enforcer.approvals.is_approved("c1", "write_file", FILE_A)


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        (ApprovalRequired(["write_file"]), Decision.PENDING),
        (ConfirmList(["write_file"]), Decision.CONFIRM),
    ],
)
def test_a_one_use_grant_is_not_reused_by_repeating_the_id(toolset, policy, expected):
    enforcer = GuardEnforcer([policy])
    tool = toolset.get("write_file")
    grant = enforcer.approvals.grant("write_file", uses=1)
    first = enforcer.check(ToolCall("write_file", FILE_A, "c1"), tool)
    assert first.allowed and first.policy == "grant"
    assert enforcer.check(ToolCall("write_file", dict(FILE_A), "c1"), tool).allowed  # same call
    (used,) = enforcer.approvals.grants()

    replay = enforcer.check(ToolCall("write_file", FILE_B, "c1"), tool)
    assert replay.decision is expected  # a new call: the grant's one use is gone
    assert enforcer.approvals.grants() == [used]
    assert used.id == grant.id and used.uses == 0
    assert used.used_by == (("c1", arguments_digest("write_file", FILE_A)),)


def test_a_confirmation_grants_exactly_the_identical_call_once(toolset):
    enforcer = GuardEnforcer([ConfirmList(["write_file"])])
    tool = toolset.get("write_file")
    assert enforcer.check(ToolCall("write_file", FILE_A, "c1"), tool).decision is Decision.CONFIRM
    enforcer.approvals.approve("c1")  # the user agreed to FILE_A

    assert_refused_as_reused(enforcer.check(ToolCall("write_file", FILE_B, "c1"), tool), "c1")
    assert enforcer.check(ToolCall("write_file", FILE_B, "c2"), tool).decision is Decision.CONFIRM
    again = ToolCall("write_file", {"content": "x", "path": "a.txt"}, "c3")
    assert enforcer.check(again, tool).allowed
    assert enforcer.check(again, tool).allowed  # the same call checked twice uses it once
    replay = ToolCall("write_file", FILE_B, "c3")  # c3 used the grant: its id proves nothing
    assert enforcer.check(replay, tool).decision is Decision.CONFIRM
    assert enforcer.check(ToolCall("write_file", FILE_A, "c4"), tool).decision is Decision.CONFIRM


def test_a_refused_call_leaves_the_store_as_it_was(toolset):
    enforcer = GuardEnforcer([ApprovalRequired(["http_request"])])
    tool = toolset.get("http_request")
    store = enforcer.approvals
    held = ToolCall("http_request", URL_A, "c2")
    assert enforcer.check(held, tool).decision is Decision.PENDING
    store.grant("http_request", uses=1)
    changes = []
    store.on_change(changes.append)
    before, version = state(store), store.version

    replay = ToolCall("http_request", URL_EVIL, "c2")
    assert_refused_as_reused(enforcer.check(replay, tool), "c2")
    with pytest.raises(CallIdReusedError, match="call id c2 was already used") as caught:
        store.request(replay, GuardVerdict(Decision.PENDING, "review", "approval_required", "c2"))
    assert isinstance(caught.value, ValueError) and caught.value.record.arguments == URL_A
    assert state(store) == before and store.version == version and changes == []

    store.approve("c2")  # the reviewer approves the recorded call, not the replay
    assert enforcer.check(held, tool).allowed
    assert enforcer.check(replay, tool).decision is Decision.DENY
    assert store.grants()[0].uses == 1  # neither call used the grant


def test_a_snapshot_round_trip_keeps_the_binding(approved, toolset):
    store = approved.approvals
    store.grant("write_file", FILE_A, uses=2)
    assert approved.check(ToolCall("write_file", FILE_A, "c7"), toolset.get("write_file")).allowed
    saved = json.loads(json.dumps(approved.snapshot()))
    assert saved["approvals"]["records"][0]["digest"] == arguments_digest("http_request", URL_A)

    resumed = GuardEnforcer([ApprovalRequired(["http_request", "write_file"])])
    resumed.restore(saved)
    assert resumed.approvals.records() == store.records()
    assert resumed.approvals.grants() == store.grants()
    (grant,) = resumed.approvals.grants()
    assert grant.used_by == (("c7", arguments_digest("write_file", FILE_A)),)
    http = toolset.get("http_request")
    assert resumed.check(ToolCall("http_request", URL_A, "c2"), http).allowed
    assert_refused_as_reused(resumed.check(ToolCall("http_request", URL_EVIL, "c2"), http), "c2")


def test_a_snapshot_from_before_the_binding_restores():
    old = {
        "version": 1,
        "records": [
            {
                "call_id": "c2",
                "tool": "http_request",
                "arguments": URL_A,
                "status": "approved",
                "kind": "pending",
                "reason": "review",
                "policy": "approval_required",
                "note": None,
            }
        ],
        "grants": [
            {"id": "g1", "tool": "write_file", "arguments": FILE_A, "uses": 0, "used_by": ["c7"]},
            {"id": "g2", "tool": "bash", "arguments": None, "uses": 0, "used_by": ["c8"]},
        ],
    }
    store = ApprovalStore.from_dict(old)
    (record,) = store.records()
    assert record.digest == arguments_digest("http_request", URL_A)
    assert store.is_approved("c2", "http_request", URL_A)
    assert not store.is_approved("c2", "http_request", URL_EVIL)
    g1, g2 = store.grants()
    assert g1.used_by == (("c7", arguments_digest("write_file", FILE_A)),)
    assert g2.used_by == (("c8", ""),)
    names = {"write_file", "bash"}
    assert store.use_grant(ToolCall("write_file", FILE_A, "c7"), names) == g1  # the call it let
    assert store.use_grant(ToolCall("write_file", FILE_B, "c7"), names) is None
    assert store.use_grant(ToolCall("bash", {"command": "ls"}, "c8"), names) is None

    enforcer = GuardEnforcer([ApprovalRequired(["http_request"])], approvals=store)
    assert enforcer.check(ToolCall("http_request", URL_A, "c2")).allowed
    assert_refused_as_reused(enforcer.check(ToolCall("http_request", URL_EVIL, "c2")), "c2")
    assert ApprovalStore.from_dict(store.to_dict()).to_dict() == store.to_dict()
