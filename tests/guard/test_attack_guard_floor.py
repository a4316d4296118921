"""Attack: an agent's own guard must not replace the tree's. The tree guard is a floor.

Each test gives an agent subtree a permissive guard of its own under a stricter tree guard (or
the other way round) and checks that the effect did not happen: the file is not written, the
tool did not run a second time, the call waited for a reviewer.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from py_trees.common import Status

from jianmu_bt.guard import Decision, GuardEnforcer, LayeredGuard
from jianmu_bt.loader import load_tree
from jianmu_bt.tools import ToolCall, ToolSet, tool

CALLS: list[tuple[str, dict[str, Any]]] = []


@tool(effect_tags=("http",))
def fetch(url: str) -> str:
    """Fetch a URL (records the call instead)."""
    CALLS.append(("fetch", {"url": url}))
    return f"fetched {url}"


@tool(effect_tags=("deploy",))
def deploy(target: str) -> str:
    """Deploy (records the call instead)."""
    CALLS.append(("deploy", {"target": target}))
    return f"deployed {target}"


@pytest.fixture(autouse=True)
def _clear_calls():
    CALLS.clear()
    yield
    CALLS.clear()


def agent_tree(tree_guard: str, agent_guard: str, calls: list[list[str]], tools: str) -> str:
    """A tree whose only node is an agent with its own guard; each reply makes `calls`."""
    replies = (
        "".join("\n        - tool_calls: [" + ", ".join(batch) + "]" for batch in calls)
        + '\n        - "done"'
    )
    tree_guard_line = f"guard: {tree_guard}\n" if tree_guard else ""
    return f"""
version: 1
{tree_guard_line}tools: {tools}
root:
  agent:
    name: Agent
    goal: "do it"
    tools: {tools}
    max_iterations: {len(calls) + 2}
    guard: {agent_guard}
    llm:
      provider: scripted
      replies:{replies}
"""


def tool_messages(result) -> list[dict[str, Any]]:
    return [m for m in result.state["messages"] if m["role"] == "tool"]


def test_a_tool_the_tree_denies_is_refused_though_the_agent_allows_it(tmp_path: Path):
    target = tmp_path / "pwned.txt"
    call = '{name: write_file, arguments: {path: pwned.txt, content: "owned"}}'
    text = agent_tree(
        "{deny: [write_file]}",
        "{allow: [write_file, read_file]}",
        [[call]],
        "[write_file, read_file]",
    )
    text = f"tool_options: {{workspace: '{tmp_path}'}}\n" + text
    with load_tree(text) as tree:
        result = tree.run(timeout=20)
    assert result.ok, result.reason
    assert not target.exists()
    (message,) = tool_messages(result)
    assert "refused by policy deny_list" in message["content"]
    assert "write_file is not allowed in this run" in message["content"]


def test_the_tree_budget_holds_under_a_larger_agent_budget():
    calls = [['{name: fetch, arguments: {url: "https://a.test/1"}}']]
    calls.append(['{name: fetch, arguments: {url: "https://a.test/2"}}'])
    text = agent_tree("{budgets: {http: 1}}", "{budgets: {http: 5}}", calls, "[fetch]")
    with load_tree(text, tools=[fetch]) as tree:
        result = tree.run(timeout=20)
    assert result.ok, result.reason
    assert CALLS == [("fetch", {"url": "https://a.test/1"})]
    second = tool_messages(result)[1]["content"]
    assert "refused" in second and "budget" in second


def test_the_tree_budget_holds_within_one_batch():
    batch = [f'{{name: fetch, arguments: {{url: "https://a.test/{i}"}}}}' for i in range(3)]
    text = agent_tree("{budgets: {http: 1}}", "{budgets: {http: 5}}", [batch], "[fetch]")
    with load_tree(text, tools=[fetch]) as tree:
        result = tree.run(timeout=20)
    assert result.ok, result.reason
    assert len(CALLS) == 1
    assert sum("refused" in m["content"] for m in tool_messages(result)) == 2


def test_the_agent_budget_applies_too():
    calls = [[f'{{name: fetch, arguments: {{url: "https://a.test/{i}"}}}}'] for i in range(3)]
    text = agent_tree("{budgets: {http: 5}}", "{budgets: {http: 2}}", calls, "[fetch]")
    with load_tree(text, tools=[fetch]) as tree:
        assert tree.run(timeout=20).ok
        assert tree.guards[0].context.effect_count("http") == 2  # counted at both levels
        assert tree.guards[1].context.effect_count("http") == 2
    assert len(CALLS) == 2


def test_the_tree_rate_limit_holds_under_an_agent_guard_without_one():
    calls = [[f'{{name: fetch, arguments: {{url: "https://a.test/{i}"}}}}'] for i in range(2)]
    text = agent_tree("{rate_limits: {fetch: 1/60s}}", "{deny: [bash]}", calls, "[fetch]")
    with load_tree(text, tools=[fetch]) as tree:
        result = tree.run(timeout=20)
    assert len(CALLS) == 1
    assert "refused" in tool_messages(result)[1]["content"]


def test_an_inner_deny_beats_an_outer_allow():
    call = '{name: fetch, arguments: {url: "https://a.test/"}}'
    text = agent_tree("{allow: [fetch]}", "{deny: [fetch]}", [[call]], "[fetch]")
    with load_tree(text, tools=[fetch]) as tree:
        result = tree.run(timeout=20)
    assert CALLS == []
    assert "refused by policy deny_list" in tool_messages(result)[0]["content"]


def test_a_guard_given_to_load_tree_is_the_floor_too():
    call = '{name: fetch, arguments: {url: "https://a.test/"}}'
    text = agent_tree("", "{allow: [fetch]}", [[call]], "[fetch]")
    floor = GuardEnforcer.from_config({"deny": ["fetch"]})
    with load_tree(text, tools=[fetch], guard=floor) as tree:
        result = tree.run(timeout=20)
        assert tree.guards[0] is floor
    assert CALLS == []
    assert "refused" in tool_messages(result)[0]["content"]


def _tick_until(tree, done, limit: float = 10.0) -> Status:
    deadline = time.monotonic() + limit
    status = tree.tick()
    while not done(status) and time.monotonic() < deadline:
        time.sleep(0.01)
        status = tree.tick()
    return status


@pytest.mark.parametrize("agent_guard", ["{deny: [bash]}", "{approve: [deploy]}"])
def test_a_call_the_tree_holds_waits_for_one_approval(agent_guard: str):
    call = "{name: deploy, arguments: {target: prod}}"
    text = agent_tree("{approve: [deploy]}", agent_guard, [[call]], "[deploy]")
    with load_tree(text, tools=[deploy]) as tree:
        status = _tick_until(tree, lambda s: bool(tree.pending_approvals()))
        assert status == Status.RUNNING
        (held,) = tree.pending_approvals()  # one record, in the tree guard's store
        assert held.tool == "deploy" and tree.guards[0].approvals.get(held.call_id) is held
        time.sleep(0.05)
        assert tree.tick() == Status.RUNNING and CALLS == []  # nothing ran while it waits
        tree.approve(held.call_id, "ok")
        status = _tick_until(tree, lambda s: s != Status.RUNNING)
    assert status == Status.SUCCESS
    assert CALLS == [("deploy", {"target": "prod"})]


def test_a_call_the_agent_holds_is_found_by_tree_approve():
    call = "{name: deploy, arguments: {target: prod}}"
    text = agent_tree("{deny: [bash]}", "{approve: [deploy]}", [[call]], "[deploy]")
    with load_tree(text, tools=[deploy]) as tree:
        _tick_until(tree, lambda s: bool(tree.pending_approvals()))
        (held,) = tree.pending_approvals()
        tree.reject(held.call_id, "not on a Friday")
        status = _tick_until(tree, lambda s: s != Status.RUNNING)
        messages = tree.state.get("messages")
    assert status == Status.SUCCESS and CALLS == []
    assert "not on a Friday" in next(m for m in messages if m["role"] == "tool")["content"]


def test_a_held_agent_call_pauses_and_resumes_a_durable_run(tmp_path: Path):
    call = "{name: deploy, arguments: {target: prod}}"
    text = agent_tree("{approve: [deploy]}", "{deny: [bash]}", [[call]], "[deploy]")
    store = tmp_path / "runs.db"
    with load_tree(text, tools=[deploy]) as tree:
        paused = tree.run(store=store, run_id="R", hold="pause", timeout=20)
        assert paused.run_status == "paused" and CALLS == []
    with load_tree(text, tools=[deploy]) as tree:
        result = tree.resume("R", store=store, approve=["all"], timeout=20)
    assert result.ok, result.reason
    assert CALLS == [("deploy", {"target": "prod"})]


# -- the LayeredGuard itself -------------------------------------------------------------------


def _layered(outer: dict[str, Any] | None, inner: dict[str, Any]) -> LayeredGuard:
    return LayeredGuard(
        GuardEnforcer.from_config(outer) if outer is not None else None,
        GuardEnforcer.from_config(inner),
    )


def test_most_restrictive_wins_and_the_outer_reason_wins_a_tie():
    toolset = ToolSet.from_tools([fetch, deploy])
    guard = _layered({"deny": ["fetch"], "confirm": ["deploy"]}, {"deny": ["fetch"]})
    verdicts = guard.preflight(
        [ToolCall("fetch", {"url": "u"}, "c1"), ToolCall("deploy", {"target": "t"}, "c2")],
        toolset,
    )
    assert [v.decision for v in verdicts] == [Decision.DENY, Decision.CONFIRM]
    outer = guard.outer
    assert outer is not None and verdicts[0].policy == outer.policies[0].name
    # the CONFIRM is recorded where Tree.approve looks: the outer level's store
    assert [r.call_id for r in outer.approvals.pending()] == ["c2"]
    assert guard.inner.approvals.pending() == []


def test_record_counts_in_both_levels_and_snapshots_round_trip():
    toolset = ToolSet.from_tools([fetch])
    guard = _layered({"budgets": {"http": 3}}, {"budgets": {"http": 1}})
    first = ToolCall("fetch", {"url": "a"}, "c1")
    assert guard.check(first, fetch).allowed
    guard.record(first, fetch, True)
    saved = guard.snapshot()
    assert [layer["context"]["effect_counts"] for layer in saved["layers"]] == [
        {"http": 1},
        {"http": 1},
    ]
    verdict = guard.preflight([ToolCall("fetch", {"url": "b"}, "c2")], toolset)[0]
    assert verdict.decision is Decision.DENY  # the inner budget of 1 is spent
    fresh = _layered({"budgets": {"http": 3}}, {"budgets": {"http": 1}})
    fresh.restore(saved)
    assert fresh.snapshot() == saved


def test_without_an_outer_level_it_is_the_inner_guard():
    guard = _layered(None, {"approve": ["deploy"]})
    verdict = guard.check(ToolCall("deploy", {"target": "t"}, "c1"), deploy)
    assert verdict.decision is Decision.PENDING
    assert guard.approvals is guard.inner.approvals and guard.snapshot() == guard.inner.snapshot()


def test_the_outer_level_is_looked_up_on_each_use():
    found: list[GuardEnforcer | None] = [None]
    guard = LayeredGuard(lambda: found[0], GuardEnforcer.from_config({}))
    call = ToolCall("fetch", {"url": "u"}, "c1")
    assert guard.check(call, fetch).allowed
    found[0] = GuardEnforcer.from_config({"deny": ["fetch"]})
    assert guard.check(call, fetch).decision is Decision.DENY
