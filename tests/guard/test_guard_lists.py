"""Allow, deny, confirm and approval lists: names compared case-insensitively and via aliases."""

import pytest

from jianmu_bt.guard import (
    AllowList,
    ApprovalRequired,
    ConfirmList,
    Decision,
    DenyList,
    GuardContext,
)
from jianmu_bt.tools import ToolCall


def test_allow_list_denies_unlisted_tools_and_has_no_opinion_on_listed(toolset, make_call):
    policy = AllowList(["Calculator", "read_file"])
    ctx = GuardContext()
    assert policy.check(make_call("calculator"), toolset.get("calculator"), ctx) is None
    verdict = policy.check(make_call("bash"), toolset.get("bash"), ctx)
    assert verdict.decision is Decision.DENY and verdict.policy == "allow_list"
    assert "calculator, read_file" in verdict.reason and verdict.call_id == "c_bash"


def test_deny_list_matches_case_insensitively_and_through_aliases(toolset, make_call):
    policy = DenyList(["SHELL", "write_file"])  # "shell" is an alias of bash
    ctx = GuardContext()
    assert policy.check(make_call("bash"), toolset.get("bash"), ctx).decision is Decision.DENY
    # the LLM calls the alias; the tool is unknown to the set
    aliased = policy.check(ToolCall("File_Write", {}, "c1"), None, ctx)
    assert aliased.decision is Decision.DENY
    assert "File_Write is not allowed" in aliased.reason
    assert policy.check(make_call("calculator"), toolset.get("calculator"), ctx) is None


def test_deny_list_matches_the_resolved_tools_name(toolset):
    policy = DenyList(["http_request"])
    verdict = policy.check(ToolCall("http", {}, "c1"), toolset.get("http_request"), GuardContext())
    assert verdict.decision is Decision.DENY


def test_confirm_list_asks_for_confirmation(toolset, make_call):
    verdict = ConfirmList(["write_file"]).check(
        make_call("write_file"), toolset.get("write_file"), GuardContext()
    )
    assert verdict.decision is Decision.CONFIRM and verdict.policy == "confirm_list"


def test_approval_required_holds_the_call(toolset, make_call):
    verdict = ApprovalRequired(["http_request"], name="reviewed").check(
        make_call("http_request"), toolset.get("http_request"), GuardContext()
    )
    assert verdict.decision is Decision.PENDING and verdict.policy == "reviewed"


@pytest.mark.parametrize(
    ("names", "error", "match"),
    [("bash", TypeError, "got the string 'bash'"), (["ok", ""], ValueError, "non-empty")],
)
def test_name_lists_refuse_bad_names(names, error, match):
    with pytest.raises(error, match=match):
        DenyList(names)
