"""ArgumentPredicate and the path/host predicates."""

import pytest

from jianmu_bt.guard import (
    ArgumentPredicate,
    Decision,
    GuardContext,
    host_not_in,
    path_outside,
)
from jianmu_bt.tools import ToolCall


def test_argument_predicate_applies_its_decision_when_the_predicate_fires(toolset):
    policy = ArgumentPredicate(
        "bash", lambda args: "rm " in args["command"], reason="the command removes files"
    )
    tool = toolset.get("bash")
    ctx = GuardContext()
    assert policy.check(ToolCall("bash", {"command": "ls"}, "c1"), tool, ctx) is None
    verdict = policy.check(ToolCall("bash", {"command": "rm -rf x"}, "c2"), tool, ctx)
    assert verdict.decision is Decision.DENY and verdict.reason == "the command removes files"
    # other tools are not this policy's business
    assert policy.check(ToolCall("calculator", {"command": "rm "}, "c3"), None, ctx) is None


def test_argument_predicate_may_read_state_and_confirm(toolset):
    policy = ArgumentPredicate(
        "*",
        lambda args, ctx: args.get("path") in ctx.state["protected"],
        decision=Decision.CONFIRM,
    )
    ctx = GuardContext(state={"protected": ["notes.md"]})
    tool = toolset.get("write_file")
    verdict = policy.check(ToolCall("write_file", {"path": "notes.md"}, "c1"), tool, ctx)
    assert verdict.decision is Decision.CONFIRM
    assert "arguments of write_file are not accepted" in verdict.reason
    assert policy.check(ToolCall("write_file", {"path": "other"}, "c2"), tool, ctx) is None
    with pytest.raises(TypeError):
        ctx.state["protected"] = []  # the state view is read-only


def test_argument_predicate_fails_closed_when_the_predicate_raises(toolset):
    policy = ArgumentPredicate("write_file", lambda args: args["path"].startswith("/"))
    verdict = policy.check(ToolCall("write_file", "not json", "c1"), None, GuardContext())
    assert verdict.decision is Decision.DENY
    assert "could not be checked (TypeError" in verdict.reason


def test_argument_predicate_refuses_allow_as_its_decision():
    with pytest.raises(ValueError, match="ALLOW has no effect"):
        ArgumentPredicate("bash", bool, decision=Decision.ALLOW)


def test_path_outside_refuses_escapes_and_symlinks(tmp_path):
    root = tmp_path / "work"
    (root / "sub").mkdir(parents=True)
    (tmp_path / "work_evil").mkdir()
    (root / "link").symlink_to(tmp_path / "work_evil")
    outside = path_outside(root)
    assert outside({"path": "sub/a.txt"}) is False
    assert outside({"path": str(root / "new.txt")}) is False
    assert outside({"other": 1}) is False  # missing argument: the tool reports it
    for escape in ["../work_evil/x", str(tmp_path / "work_evil" / "x"), "link/x", "/etc/passwd"]:
        assert "is outside the allowed directory" in outside({"path": escape}), escape
    assert "must be a path" in outside({"path": 3})


def test_path_outside_as_a_policy_names_the_path(toolset, tmp_path):
    policy = ArgumentPredicate("write_file", path_outside(tmp_path, key=("path", "dest")))
    verdict = policy.check(
        ToolCall("file_write", {"dest": "/etc/x"}, "c1"), toolset.get("write_file"), GuardContext()
    )
    assert verdict.decision is Decision.DENY
    assert "path '/etc/x' is outside the allowed directory" in verdict.observation()


def test_host_not_in_allows_listed_hosts_and_subdomains_only():
    check = host_not_in(["api.example.com", "*.trusted.org"])
    assert check({"url": "https://API.example.com/v1"}) is False
    assert check({"url": "http://trusted.org/x"}) is False
    assert check({"url": "http://a.b.trusted.org/x"}) is False
    assert "host 'evil.com' is not one of the allowed hosts" in check({"url": "http://evil.com"})
    assert "not one of" in check({"url": "http://nottrusted.org/"})
    assert "has no host" in check({"url": "file:///etc/passwd"})
    assert "not a valid URL" in check({"url": "http://[::1"})
