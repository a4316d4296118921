"""Approving a held call with edited arguments when resuming a paused durable run: the edit is
recorded before the run goes on, survives a process that dies right after it, is never applied
twice, and an edit that does not fit the tool's schema changes nothing."""

from __future__ import annotations

import copy

import py_trees
import pytest
from faulty_store import FaultyStore

from jianmu_bt import AgentState, PythonTree, StateManager, ToolNode, tool
from jianmu_bt.guard import ApprovalRequired, ArgumentPredicate, GuardEnforcer
from jianmu_bt.loader import load_tree
from jianmu_bt.runtime.durable import DurableRunError
from jianmu_bt.store import StoreError, open_store

pytestmark = pytest.mark.parametrize("store_location", ["sqlite", "postgres"], indirect=True)

PAID: list[int] = []


@tool(effect_tags=["payments"])
def pay(amount: int) -> str:
    """Pay an amount (held for a reviewer)."""
    PAID.append(amount)
    return f"paid {amount}"


TREE = """
version: 1
name: bill
state:
  receipt: {type: string}
guard: {approve: [pay], budgets: {payments: 1}}
root:
  tool: {name: Pay, tool: pay, arguments: {amount: 5000}, output: receipt}
"""


@pytest.fixture(autouse=True)
def _reset():
    PAID.clear()


def _paused(location: str) -> str:
    """Run the tree until its call is held; the held call's id."""
    with load_tree(TREE, tools=[pay]) as tree:
        result = tree.run(store=location, run_id="R", hold="pause")
    assert result.paused and PAID == []
    with open_store(location, create=False) as store:
        (held,) = [e for e in store.journal("R") if e.status == "held"]
    return held.call_id


def test_an_edit_given_on_resume_runs_the_edited_call_once(store_location):
    call_id = _paused(store_location)
    with load_tree(TREE, tools=[pay]) as tree:
        result = tree.resume("R", store=store_location, edits={call_id: {"amount": 50}}, by="ann")
    assert result.ok and PAID == [50] and result.state["receipt"] == "paid 50"
    with open_store(store_location, create=False) as store:
        rows = [(e.status, e.result) for e in store.journal_log("R")]
    assert [status for status, _ in rows] == ["held", "approved", "running", "done"]
    assert rows[1][1] == {"by": "ann", "arguments": {"amount": 50}}


def test_an_edit_survives_a_process_that_stops_right_after_recording_it(store_location):
    call_id = _paused(store_location)
    store = FaultyStore(open_store(store_location, create=False))
    store.fail_appends(2)  # the decision is written, then the store is gone for this process
    with store, load_tree(TREE, tools=[pay]) as tree, pytest.raises(StoreError):
        tree.resume("R", store=store, edits={call_id: {"amount": 50}}, by="ann")
    assert PAID == []
    with load_tree(TREE, tools=[pay]) as tree:  # a later resume, with no decision of its own
        result = tree.resume("R", store=store_location)
    assert result.ok and PAID == [50]


def test_an_edit_that_does_not_fit_the_schema_is_refused_and_changes_nothing(store_location):
    call_id = _paused(store_location)
    with load_tree(TREE, tools=[pay]) as tree:
        with pytest.raises(DurableRunError, match=r"do not fit pay's schema: arguments\.amount"):
            tree.resume("R", store=store_location, edits={call_id: {"amount": "lots"}})
        with pytest.raises(DurableRunError, match="unexpected argument"):
            tree.resume("R", store=store_location, edits={call_id: {"amount": 5, "to": "me"}})
    with open_store(store_location, create=False) as store:
        assert [e.status for e in store.journal_log("R")] == ["held"]
        assert store.get_run("R").status == "paused"
    assert PAID == []


def _guarded_tree() -> PythonTree:
    """The same call in a tree built in Python whose guard also refuses amounts under 10."""
    guard = GuardEnforcer(
        [
            ApprovalRequired(["pay"]),
            ArgumentPredicate("pay", lambda a: a.get("amount", 0) < 10 and "under the minimum"),
        ]
    )

    def build() -> py_trees.behaviour.Behaviour:
        return ToolNode(pay, "Pay", arguments={"amount": 5000}, output_key="receipt")

    return PythonTree("bill", build, StateManager(Receipt), guard=guard)


class Receipt(AgentState):
    """The payment's receipt."""

    receipt: str | None = None


def test_an_edit_the_guard_refuses_is_denied_when_the_run_reaches_it(store_location):
    with _guarded_tree() as tree:
        assert tree.run(store=store_location, run_id="R", hold="pause").paused
    with open_store(store_location, create=False) as store:
        (held,) = [e for e in store.journal("R") if e.status == "held"]
    with _guarded_tree() as tree:
        result = tree.resume("R", store=store_location, edits={held.call_id: {"amount": 5}})
    assert not result.ok and PAID == []  # the edit could not escape the guard
    with open_store(store_location, create=False) as store:
        (denied,) = [e for e in store.journal("R") if e.status == "denied"]
    assert "under the minimum" in denied.result["error"]


def test_a_held_call_answered_on_resume_does_not_run_and_its_node_reads_the_answer(
    store_location,
):
    call_id = _paused(store_location)
    with load_tree(TREE, tools=[pay]) as tree:
        result = tree.resume(
            "R", store=store_location, responses={call_id: "Paid by card."}, by="ann"
        )
    assert result.ok and PAID == []
    assert result.state["receipt"].endswith("\nPaid by card.")
    with open_store(store_location, create=False) as store:
        (denied,) = [e for e in store.journal_log("R") if e.status == "denied"]
    assert denied.result["ok"] and denied.result["by"] == "ann"
    with load_tree(TREE, tools=[pay]) as tree, pytest.raises(DurableRunError, match="already"):
        tree.resume("R", store=store_location)  # finished: nothing to resume


def test_the_journals_edit_wins_over_an_older_approval_in_the_guards_snapshot(store_location):
    call_id = _paused(store_location)
    with open_store(store_location, create=False) as store:
        # What another write would have captured had a reviewer approved the call plainly just
        # before the process died, with no `approved` row yet.
        data = copy.deepcopy(store.latest_checkpoint("R").data)
        data["guards"][0]["approvals"]["records"][0]["status"] = "approved"
        store.append("R", None, [], checkpoint=data)
    with load_tree(TREE, tools=[pay]) as tree:
        result = tree.resume("R", store=store_location, edits={call_id: {"amount": 50}})
    assert result.ok and PAID == [50]
