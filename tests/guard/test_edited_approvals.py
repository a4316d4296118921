"""Approving a held call with edited arguments: only the edited call runs, it passes every policy
first, the agent is told, and a durable run records the edit and who made it."""

from __future__ import annotations

import py_trees
import pytest

from jianmu_bt import AgentState, PythonTree, StateManager, ToolNode, react_agent, tool
from jianmu_bt.guard import (
    ApprovalRequired,
    ArgumentPredicate,
    ConfirmList,
    Decision,
    GuardEnforcer,
    LayeredGuard,
    path_outside,
)
from jianmu_bt.llm import ScriptedProvider
from jianmu_bt.nodes.tool_executor import ToolExecutor
from jianmu_bt.runtime import EditRefusedError
from jianmu_bt.store import SQLiteStore
from jianmu_bt.tools import ToolCall

PAID: list[int] = []
WRITTEN: list[str] = []


@tool(effect_tags=["payments"])
def pay(amount: int) -> str:
    """Pay an amount."""
    PAID.append(amount)
    return f"paid {amount}"


@tool(effect_tags=["file_write"])
def save(path: str) -> str:
    """Save a file."""
    WRITTEN.append(path)
    return f"saved {path}"


@pytest.fixture(autouse=True)
def _reset():
    PAID.clear()
    WRITTEN.clear()


def _guard(tmp_path=None) -> GuardEnforcer:
    policies = [ApprovalRequired(["pay", "save"])]
    if tmp_path is not None:
        policies.append(ArgumentPredicate("save", path_outside(str(tmp_path))))
    return GuardEnforcer(policies)


# -- the approval store and the enforcer ---------------------------------------------------------


def test_only_the_edited_call_is_approved_and_it_survives_a_snapshot():
    guard = _guard()
    proposed = ToolCall("pay", {"amount": 5000}, "c1")
    assert guard.check(proposed, pay).decision is Decision.PENDING
    record = guard.approvals.approve("c1", "too much", arguments={"amount": 50}, by="ann")
    assert record.edited and record.decided_by == "ann"
    edited = guard.approvals.as_approved(proposed)
    assert edited.arguments == {"amount": 50} and edited.id == "c1"
    assert guard.check(edited, pay).decision is Decision.ALLOW
    refused = guard.check(proposed, pay)  # the call as proposed does not run
    assert refused.decision is Decision.DENY and "other arguments" in refused.reason
    again = _guard()
    again.restore(guard.snapshot())
    assert again.check(edited, pay).decision is Decision.ALLOW
    assert again.check(proposed, pay).decision is Decision.DENY
    with pytest.raises(ValueError, match="other arguments"):
        guard.approvals.approve("c1", arguments={"amount": 60})


def test_an_edit_to_what_was_proposed_is_a_plain_approval():
    guard = _guard()
    call = ToolCall("pay", {"amount": 5}, "c1")
    guard.check(call, pay)
    record = guard.approvals.approve("c1", arguments={"amount": 5})
    assert not record.edited and guard.check(call, pay).decision is Decision.ALLOW


def test_an_edited_confirmation_grants_the_edited_call_only():
    guard = GuardEnforcer([ConfirmList(["pay"])])
    guard.check(ToolCall("pay", {"amount": 5000}, "c1"), pay)
    guard.approvals.approve("c1", arguments={"amount": 50})
    assert guard.check(ToolCall("pay", {"amount": 5000}, "c2"), pay).decision is Decision.CONFIRM
    assert guard.check(ToolCall("pay", {"amount": 50}, "c3"), pay).decision is Decision.ALLOW


def test_a_denying_policy_still_refuses_an_approved_edit(tmp_path):
    guard = _guard(tmp_path)
    call = ToolCall("save", {"path": str(tmp_path / "a.txt")}, "c1")
    guard.check(call, save)
    guard.approvals.approve("c1", arguments={"path": "/etc/passwd"})  # the store alone allows it
    verdict = guard.check(guard.approvals.as_approved(call), save)
    assert verdict.decision is Decision.DENY and "outside" in verdict.reason


# -- a tree's desk -------------------------------------------------------------------------------


class Paid(AgentState):
    """What the steps wrote."""

    receipt: str | None = None


def _step_tree(guard: GuardEnforcer, node: ToolNode) -> PythonTree:
    def build() -> py_trees.behaviour.Behaviour:
        return py_trees.composites.Sequence("Main", memory=True, children=[node])

    return PythonTree("edits", build, StateManager(Paid), guard=guard)


def _approve_when_held(tree, **decision):
    """Decide each held call with `decision` as soon as it is announced; the errors seen."""
    errors: list[Exception] = []

    def on_event(event):
        if event.type == "guard.decision" and event.data.get("decision") == "pending":
            call_id = event.data["call_id"]
            for attempt in decision.get("attempts", []):
                try:
                    tree.approve(call_id, arguments=attempt, by="ann")
                except EditRefusedError as exc:
                    errors.append(exc)
            tree.approve(call_id, arguments=decision.get("arguments"), by="ann")

    tree.events.subscribe(on_event)
    return errors


def test_a_tree_runs_the_call_as_the_reviewer_edited_it_and_records_who(tmp_path):
    node = ToolNode(pay, "Pay", arguments={"amount": 5000}, output_key="receipt")
    store = SQLiteStore(tmp_path / "runs.db")
    with _step_tree(_guard(), node) as tree:
        _approve_when_held(tree, arguments={"amount": 50})
        result = tree.run(store=store, run_id="R")
    assert result.ok and PAID == [50] and result.state["receipt"] == "paid 50"
    rows = [(e.status, e.arguments, e.result) for e in store.journal_log("R")]
    assert [status for status, _, _ in rows] == ["held", "approved", "running", "done"]
    assert all(arguments == {"amount": 5000} for _, arguments, _ in rows)  # as proposed
    decision = rows[1][2]
    assert decision["arguments"] == {"amount": 50} and decision["by"] == "ann"
    assert rows[0][2] == {  # the held row keeps why, for a reviewer deciding later
        "reason": "pay runs only after a reviewer approves the call",
        "policy": "approval_required",
    }


def test_an_edit_that_does_not_fit_the_schema_or_the_guard_is_refused_and_stays_held(tmp_path):
    inside = str(tmp_path / "notes.txt")
    node = ToolNode(save, "Save", arguments={"path": inside}, output_key="receipt")
    with _step_tree(_guard(tmp_path), node) as tree:
        errors = _approve_when_held(
            tree,
            attempts=[{"path": 5}, {"path": "/etc/passwd"}, {"path": inside, "extra": 1}],
            arguments={"path": str(tmp_path / "other.txt")},
        )
        result = tree.run()
    assert result.ok and [str(tmp_path / "other.txt")] == WRITTEN
    messages = [str(e) for e in errors]
    assert len(messages) == 3
    assert "schema" in messages[0] and "arguments.path" in messages[0]
    assert "the guard refuses the edited call" in messages[1] and "outside" in messages[1]
    assert "extra" in messages[2]


def test_the_agent_is_told_that_a_reviewer_changed_its_call():
    provider = ScriptedProvider(
        [{"tool_calls": [{"name": "pay", "arguments": {"amount": 5000}}]}, "paid what was allowed"]
    )

    def build() -> py_trees.behaviour.Behaviour:
        return react_agent("Agent", tools=[pay], provider=provider, goal="pay the bill")

    with PythonTree("agent", build, StateManager(AgentState), guard=_guard()) as tree:
        _approve_when_held(tree, arguments={"amount": 50})
        result = tree.run()
    assert result.ok and PAID == [50]
    (answer,) = [m for m in result.state["messages"] if m["role"] == "tool"]
    assert 'only with changed arguments: {"amount": 50}' in answer["content"]
    assert answer["content"].endswith("paid 50")


# -- respond instead -----------------------------------------------------------------------------


def test_a_reviewer_may_answer_a_held_call_in_its_place():
    guard = _guard()
    call = ToolCall("pay", {"amount": 5000}, "c1")
    guard.check(call, pay)
    record = guard.approvals.respond("c1", "Already paid last week.", by="ann")
    assert record.decided_by == "ann"
    verdict = guard.check(call, pay)
    assert verdict.decision is Decision.DENY and verdict.answer == "Already paid last week."
    result = verdict.to_result()
    assert result.ok and result.output.endswith("\nAlready paid last week.")
    assert result.output.startswith("[Not run: a reviewer answered in its place.]")
    again = _guard()
    again.restore(guard.snapshot())
    assert again.check(call, pay).answer == "Already paid last week."
    with pytest.raises(ValueError, match="already responded"):
        guard.approvals.approve("c1")
    with pytest.raises(ValueError, match="empty"):
        _guard().approvals.respond("c1", "  ")


def test_the_agent_reads_the_reviewers_answer_as_the_calls_result():
    provider = ScriptedProvider(
        [{"tool_calls": [{"name": "pay", "arguments": {"amount": 5000}}]}, "ok, nothing to pay"]
    )

    def build() -> py_trees.behaviour.Behaviour:
        return react_agent("Agent", tools=[pay], provider=provider, goal="pay the bill")

    with PythonTree("agent", build, StateManager(AgentState), guard=_guard()) as tree:

        def on_event(event):
            if event.type == "guard.decision" and event.data.get("decision") == "pending":
                tree.respond(event.data["call_id"], "It was paid by card yesterday.", by="ann")

        tree.events.subscribe(on_event)
        result = tree.run()
    assert result.ok and PAID == []
    (answer,) = [m for m in result.state["messages"] if m["role"] == "tool"]
    assert answer["content"].endswith("It was paid by card yesterday.")
    assert "Error" not in answer["content"]


def test_an_edit_must_pass_an_agents_own_guard_under_the_trees():
    tree_guard = _guard()
    agent_guard = GuardEnforcer(
        [ArgumentPredicate("pay", lambda a: a.get("amount", 0) > 100, reason="at most 100")]
    )

    def build() -> py_trees.behaviour.Behaviour:
        return ToolExecutor([pay], "Exec", guard=LayeredGuard(tree_guard, agent_guard))

    state = StateManager(AgentState)
    state.set("actions", [ToolCall("pay", {"amount": 50}, "c1")])
    with PythonTree("layers", build, state, guard=tree_guard) as tree:
        errors = _approve_when_held(tree, attempts=[{"amount": 500}], arguments={"amount": 80})
        result = tree.run(state.get())
    assert result.ok and PAID == [80]
    assert [str(e) for e in errors] == ["the guard refuses the edited call: at most 100"]
